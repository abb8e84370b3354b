"""SavedModel -> ONNX with tf2onnx, then ONNX Runtime graph optimisation. Runner side.

``import onnx`` below is the ONNX package (absolute import), not this module.
"""
from __future__ import annotations

from pathlib import Path

from converters.model.errors import ConversionFailed, UnsupportedOps

# 17 is the newest opset every tool in the runner handles well (tf2onnx 1.17 tests up to 18,
# TensorRT 8.6+ parses 17); newer is used only when asked.
DEFAULT_OPSET = 17
STANDARD_DOMAINS = {"", "ai.onnx", "ai.onnx.ml"}


def choose_opset(requested: int | None) -> int:
    import onnx
    from tf2onnx import constants
    highest = min(max(constants.OPSET_TO_IR_VERSION), onnx.defs.onnx_opset_version())
    opset = requested or min(DEFAULT_OPSET, highest)
    if not 9 <= opset <= highest:
        raise ConversionFailed(f"opset {opset} is not available here; choose 9..{highest}")
    return opset


def nonstandard_nodes(model) -> dict[str, int]:
    """Ops ONNX Runtime cannot run: tf2onnx leaves unconvertible TF ops in place."""
    import onnx
    counts: dict[str, int] = {}
    graphs = [model.graph]
    while graphs:
        g = graphs.pop()
        for node in g.node:
            if node.domain not in STANDARD_DOMAINS or not onnx.defs.has(node.op_type, node.domain):
                counts[node.op_type] = counts.get(node.op_type, 0) + 1
            for attr in node.attribute:
                graphs.extend([attr.g] if attr.HasField("g") else list(attr.graphs))
    return counts


def convert(saved_model: Path, out: Path, signature: str = "serving_default",
            opset: int | None = None) -> dict:
    import logging

    import onnx
    from tf2onnx import convert as tfconvert
    from tf2onnx import tf_loader

    logging.getLogger("tf2onnx").setLevel(logging.ERROR)
    opset = choose_opset(opset)
    try:
        graph_def, inputs, outputs, renames = tf_loader.from_saved_model(
            str(saved_model), None, None, tag=["serve"], signatures=[signature],
            return_tensors_to_rename=True)
    except Exception as exc:  # tf2onnx reports with bare ValueErrors/AssertionErrors
        raise ConversionFailed(f"tf2onnx could not load signature {signature!r}: {exc}") from None
    try:
        model, _ = tfconvert.from_graph_def(graph_def, name=saved_model.name,
                                            input_names=inputs, output_names=outputs,
                                            opset=opset, tensors_to_rename=renames)
    except Exception as exc:
        raise ConversionFailed(f"tf2onnx failed: {type(exc).__name__}: {exc}") from None
    bad = nonstandard_nodes(model)
    if bad:
        ops = ", ".join(f"{k} (x{v})" for k, v in sorted(bad.items()))
        hint = (" String processing (e.g. TextVectorization) cannot be expressed in ONNX: "
                "move it out of the model and feed token ids instead."
                if any(k.startswith(("String", "Regex", "StaticRegex", "Lookup", "HashTable"))
                       for k in bad) else
                " Rewrite that part of the model with ops ONNX has (e.g. tf.math.log(1 + x) "
                "for Log1p), or keep serving it with TensorFlow (tfdesk infer works on the "
                "SavedModel itself).")
        raise UnsupportedOps(f"ONNX has no equivalent for these TensorFlow ops: {ops}.{hint}",
                             ops=sorted(bad))
    out.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(out))
    onnx.checker.check_model(str(out))
    return {"path": str(out), "opset": opset, "ir_version": model.ir_version,
            "inputs": [i.name for i in model.graph.input],
            "outputs": [o.name for o in model.graph.output],
            "nodes": len(model.graph.node), "bytes": out.stat().st_size}


def optimize(model: Path, out: Path) -> dict:
    """Offline ONNX Runtime optimisation. EXTENDED, not ALL: ALL writes layout-specific
    fused ops tied to this CPU, which a different serving machine may not run."""
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    so.optimized_model_filepath = str(out)
    ort.InferenceSession(str(model), so, providers=["CPUExecutionProvider"])
    return {"path": str(out), "level": "extended", "bytes": out.stat().st_size}


def quantize_int8(model: Path, out: Path, calibration: list[dict]) -> dict:
    """Static INT8 (QDQ) quantisation with ONNX Runtime, calibrated on ``calibration``."""
    from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                          quantize_static)

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.it = iter(calibration)

        def get_next(self):
            return next(self.it, None)

    quantize_static(str(model), str(out), Reader(), quant_format=QuantFormat.QDQ,
                    activation_type=QuantType.QInt8, weight_type=QuantType.QInt8)
    return {"path": str(out), "precision": "int8", "calibration_batches": len(calibration),
            "bytes": out.stat().st_size}


def to_fp16(model: Path, out: Path) -> dict:
    """FP16 weights and compute, FP32 inputs/outputs so callers need not change."""
    import onnx
    from onnxruntime.transformers.float16 import convert_float_to_float16
    m = convert_float_to_float16(onnx.load(str(model)), keep_io_types=True)
    onnx.save(m, str(out))
    return {"path": str(out), "precision": "fp16", "bytes": out.stat().st_size}
