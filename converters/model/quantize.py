"""INT8 with ONNX Runtime's static quantisation, and how far the INT8 model agrees with the float one.

Static: activation ranges come from running a calibration set through the float model, so
inference needs no range computation. Weights are quantised per output channel (one scale per
filter: a layer whose filters differ in range keeps its small ones). The format is QDQ
(QuantizeLinear/DequantizeLinear pairs around float ops), which ONNX Runtime fuses into
integer kernels on load and TensorRT's ONNX parser reads as explicit quantisation.

Two flavours, as data:

- ``cpu``: unsigned 8-bit activations, signed weights (U8S8) — the pairing x86 integer dot
  products (VNNI ``vpdpbusd``, AVX2 ``vpmaddubsw``) are built for.
- ``tensorrt``: signed and *symmetric* for both (zero-point 0): TensorRT's parser accepts only
  symmetric INT8 Q/DQ.

``import onnx``/``onnxruntime`` below are the packages (absolute imports).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from converters.model.errors import ConversionFailed


@dataclass(frozen=True)
class Scheme:
    activations: str          # QUInt8 | QInt8
    symmetric_activations: bool
    calibration: str = "MinMax"
    per_channel: bool = True
    op_types: tuple[str, ...] | None = None     # None: every op ONNX Runtime can quantise


SCHEMES = {"cpu": Scheme("QUInt8", False), "tensorrt": Scheme("QInt8", True)}


def preprocess(model: Path, out: Path) -> str:
    """Shape inference + graph clean-up before quantisation (ONNX Runtime's recommended first
    step: the quantiser needs shapes to choose per-channel axes and fuse patterns). Symbolic
    shape inference (needs sympy; helps transformer-style graphs) is skipped where it is
    missing or fails; ONNX's own shape inference still runs. Returns which ran."""
    from onnxruntime.quantization.shape_inference import quant_pre_process
    try:
        quant_pre_process(str(model), str(out), skip_symbolic_shape=False)
        return "symbolic+onnx"
    except Exception:  # noqa: BLE001 - symbolic inference is an optimisation, not a need
        quant_pre_process(str(model), str(out), skip_symbolic_shape=True)
        return "onnx"


def quantize_int8(model: Path, out: Path, calibration: list[dict], target: str = "cpu",
                  progress=lambda message: None) -> dict:
    """Static per-channel INT8 (QDQ) of ``model`` calibrated on ``calibration`` batches."""
    from onnxruntime.quantization import (CalibrationDataReader, CalibrationMethod,
                                          QuantFormat, QuantType, quantize_static)
    if not calibration:
        raise ConversionFailed("INT8 needs calibration samples; none were given")
    scheme = SCHEMES[target]

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.it = iter(calibration)

        def get_next(self):
            return next(self.it, None)

    progress("INT8: shape inference and clean-up before quantisation")
    pre = out.with_name(out.stem + ".pre.onnx")
    shapes = preprocess(model, pre)
    rows = sum(len(next(iter(b.values()))) for b in calibration)
    progress(f"INT8: calibrating activation ranges on {rows} samples")
    try:
        quantize_static(
            str(pre), str(out), Reader(), quant_format=QuantFormat.QDQ,
            per_channel=scheme.per_channel,
            activation_type=getattr(QuantType, scheme.activations), weight_type=QuantType.QInt8,
            calibrate_method=getattr(CalibrationMethod, scheme.calibration),
            op_types_to_quantize=list(scheme.op_types) if scheme.op_types else None,
            extra_options={"ActivationSymmetric": scheme.symmetric_activations,
                           "WeightSymmetric": True})
    except Exception as exc:  # noqa: BLE001 - the quantiser raises bare errors
        raise ConversionFailed(f"INT8 quantisation failed: {type(exc).__name__}: "
                               f"{str(exc)[:400]}") from None
    finally:
        pre.unlink(missing_ok=True)
    return {"path": str(out), "precision": "int8", "format": "QDQ", "target": target,
            "activations": scheme.activations, "weights": "QInt8 per-channel",
            "symmetric_activations": scheme.symmetric_activations,
            "calibration_method": scheme.calibration, "shape_inference": shapes,
            "calibration_batches": len(calibration), "calibration_samples": rows,
            "zero_points": zero_point_summary(out), "bytes": out.stat().st_size}


def zero_point_summary(model: Path) -> dict:
    """Zero-points of every QuantizeLinear/DequantizeLinear: TensorRT needs them all 0."""
    import onnx
    from onnx import numpy_helper
    m = onnx.load(str(model))
    inits = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
    consts = {n.output[0]: numpy_helper.to_array(n.attribute[0].t) for n in m.graph.node
              if n.op_type == "Constant" and n.attribute and n.attribute[0].HasField("t")}
    total = nonzero = 0
    dtypes = set()
    for node in m.graph.node:
        if node.op_type not in ("QuantizeLinear", "DequantizeLinear") or len(node.input) < 3:
            continue
        zp = inits.get(node.input[2], consts.get(node.input[2]))
        if zp is None:
            continue
        total += 1
        nonzero += int(np.any(zp != 0))
        dtypes.add(str(zp.dtype))
    return {"qdq_nodes": total, "nonzero": nonzero, "dtypes": sorted(dtypes)}


def split_held_out(batches: list[dict], fraction: float = 0.25,
                   minimum: int = 8) -> tuple[list[dict], dict | None]:
    """The user's calibration file split in two: most calibrates, the rest (never seen by the
    calibrator) measures agreement. Too few rows to spare: (all, None)."""
    from converters.model import samples
    joined = {k: np.concatenate([b[k] for b in batches]) for k in batches[0]}
    n = len(next(iter(joined.values())))
    held = max(minimum, int(n * fraction))
    if n - held < minimum:
        return batches, None
    calib = {k: v[:n - held] for k, v in joined.items()}
    size = len(next(iter(batches[0].values())))
    return samples.batches(calib, size), {k: v[n - held:] for k, v in joined.items()}


def predict(model, feeds: dict, batch: int = 32) -> dict[str, np.ndarray]:
    from converters.model import samples
    parts: dict[str, list] = {}
    for part in samples.batches(feeds, batch):
        for k, v in model(part).items():
            parts.setdefault(k, []).append(np.asarray(v))
    return {k: np.concatenate(v) for k, v in parts.items()}


def agreement_report(held_out: dict, runners: dict, min_agreement: float, tol,
                     save: Path | None = None) -> dict:
    """INT8 ("converted") and float ONNX ("onnx_fp32") against TensorFlow ("original") on
    held-out samples: top-1 agreement for class scores, rows within tolerance otherwise, and
    the largest difference. Passes when every output agrees on at least ``min_agreement``."""
    from converters.model import metrics, validate
    preds = {key: predict(fn, held_out) for key, fn in runners.items()}
    if save is not None:   # to look into the rows that differ (or score them against labels)
        np.savez(save, **{f"{key}.{name}": v for key, out in preds.items()
                          for name, v in out.items()})
    ref = preds["original"]
    fp32 = validate.tolerance("fp32")
    outputs, passed = {}, True
    for name in sorted(ref):
        row = {"task": metrics.task_of(ref[name]),
               "int8": metrics.agreement(ref[name], preds["converted"][name], tol.atol, tol.rtol)}
        if "onnx_fp32" in preds:
            row["fp32"] = metrics.agreement(ref[name], preds["onnx_fp32"][name],
                                            fp32.atol, fp32.rtol)
            row["int8_vs_fp32"] = metrics.agreement(preds["onnx_fp32"][name],
                                                    preds["converted"][name], tol.atol, tol.rtol)
        row["passed"] = row["int8"]["agreement"] >= min_agreement
        passed &= row["passed"]
        outputs[name] = row
    return {"samples": int(len(next(iter(held_out.values())))), "held_out": True,
            "min_agreement": min_agreement, "outputs": outputs, "passed": passed}
