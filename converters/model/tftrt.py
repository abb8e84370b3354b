"""TF-TRT: TensorRT inside a TensorFlow SavedModel, only where that still exists.

TensorFlow 2.18 removed TF-TRT, and the tensorflow-cpu wheels never had TensorRT linked in.
"""
from __future__ import annotations

from pathlib import Path

from packaging.version import Version

from converters.model.errors import NeedsGPU

LAST_TF_WITH_TFTRT = (2, 17)


def unavailable_reason(tf_version: str, tensorrt_linked: bool, gpu: bool) -> str | None:
    """None when TF-TRT can run; otherwise why not, in words a user can act on."""
    major_minor = Version(tf_version).release[:2]
    if major_minor > LAST_TF_WITH_TFTRT:
        return (f"TensorFlow {tf_version} no longer has TF-TRT (removed in 2.18); use "
                "--to tensorrt (ONNX -> TensorRT engine) instead")
    if not tensorrt_linked:
        return (f"this runner's TensorFlow {tf_version} was built without TensorRT "
                "(e.g. tensorflow-cpu); TF-TRT needs the GPU build of TensorFlow <= 2.17 "
                "with TensorRT installed")
    if not gpu:
        return "TF-TRT needs a GPU and this runner has none"
    return None


def runner_status() -> dict:
    """Probe the TensorFlow in this (runner) process."""
    import tensorflow as tf
    linked = False
    try:
        from tensorflow.python.compiler.tensorrt import trt_convert  # noqa: F401
        from tensorflow.compiler.tf2tensorrt import _pywrap_py_utils as trt_utils
        linked = bool(trt_utils.is_tensorrt_enabled())
    except ImportError:
        pass
    gpu = bool(tf.config.list_physical_devices("GPU"))
    return {"tf_version": tf.__version__, "tensorrt_linked": linked, "gpu": gpu}


def convert(saved_model: Path, out: Path, precision: str, calibration: list[dict],
            manifests: list[dict] | None = None) -> dict:
    st = runner_status()
    why = unavailable_reason(st["tf_version"], st["tensorrt_linked"], st["gpu"])
    if why:
        raise NeedsGPU(f"TF-TRT cannot run here: {why}.", manifests=manifests or [],
                       reason=why, **st)
    import tensorflow as tf
    from tensorflow.python.compiler.tensorrt import trt_convert as trt
    params = trt.TrtConversionParams(precision_mode=precision.upper())
    conv = trt.TrtGraphConverterV2(input_saved_model_dir=str(saved_model),
                                   conversion_params=params,
                                   use_calibration=precision == "int8")

    def feed():
        for batch in calibration:
            yield [tf.constant(v) for v in batch.values()]

    conv.convert(calibration_input_fn=feed if precision == "int8" else None)
    conv.build(input_fn=feed)
    conv.save(str(out))
    return {"path": str(out), "precision": precision, **st}
