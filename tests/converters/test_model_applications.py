"""Real architectures through convert-model: a Keras Applications model whose SavedModel holds
nested, XLA-marked function calls converts and validates; INT8 reports agreement on samples the
calibration never saw; the TensorRT INT8 model is quantised symmetrically (zero-points 0).
A representative sample; benchmarks/models.py --zoo applications runs the whole family."""
import json
import os
import subprocess

import numpy as np
import pytest

from bot.dispatch import run_line
from tests.model_context import REPO, RUNNER, model_context

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]
FAST = ["--batch", "1"]


def build(out, *names, untrained=True):
    cmd = [RUNNER, str(REPO / "benchmarks" / "applications_zoo.py"),
           *(["--untrained"] if untrained else []), str(out), *names]
    proc = subprocess.run(cmd, capture_output=True, text=True,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert proc.returncode == 0, proc.stderr[-3000:]


def function_calls_in(saved_model):
    """PartitionedCall nodes inside the SavedModel's function library, read in the runner."""
    code = ("import sys; from tensorflow.core.protobuf import saved_model_pb2 as p\n"
            "m = p.SavedModel(); m.ParseFromString(open(sys.argv[1], 'rb').read())\n"
            "lib = m.meta_graphs[0].graph_def.library.function\n"
            "print(sum(n.op in ('PartitionedCall', 'StatefulPartitionedCall')\n"
            "          and any(a in n.attr for a in ('_XlaMustCompile', '_noinline'))\n"
            "          for f in lib for n in f.node_def)"
            " + sum('_XlaMustCompile' in f.attr for f in lib))")
    out = subprocess.run([RUNNER, "-c", code, str(saved_model / "saved_model.pb")],
                         capture_output=True, text=True, check=True)
    return int(out.stdout.strip())


def test_convnext_with_nested_xla_function_calls_converts_and_validates(tmp_path):
    build(tmp_path, "ConvNeXtTiny:32")
    model = tmp_path / "ConvNeXtTiny"
    assert function_calls_in(model) > 0       # the case that used to be refused
    _, reply = run_line(model_context(tmp_path), ["convert-model", str(model), *FAST])
    assert reply.ok, reply.text
    r = reply.data
    assert r["conversion"]["onnx"]["function_calls_inlined"] >= 18   # one per depthwise block
    assert r["validation"]["passed"]
    (out,) = r["validation"]["outputs"].values()       # the classifier's one output
    assert out["max_abs_error"] < 1e-4
    ort = r["runtime"]["onnxruntime"]
    assert ort["graph_optimization_level"] == "ORT_ENABLE_ALL" and ort["inter_op_threads"] == 1
    assert ort["intra_op_threads"] == r["runtime"]["tensorflow"]["intra_op_threads"] >= 1


def test_int8_reports_agreement_on_held_out_samples(tmp_path):
    build(tmp_path, "MobileNetV3Small:32", untrained=False)
    calib = tmp_path / "MobileNetV3Small.calibration.npz"
    _, reply = run_line(model_context(tmp_path), [
        "convert-model", str(tmp_path / "MobileNetV3Small"), "--precision", "int8",
        "--calibration", str(calib), *FAST])
    r = reply.data
    assert r["status"] in ("succeeded", "validation_failed"), reply.text
    q = r["conversion"]["quantized"]
    # 128 rows in the file: 96 calibrate, 32 are held out for agreement
    assert q["calibration_samples"] == 96 and q["format"] == "QDQ"
    assert q["activations"] == "QUInt8" and q["weights"] == "QInt8 per-channel"
    int8 = r["validation"]["int8"]
    assert int8["held_out"] and int8["samples"] == 32
    (row,) = int8["outputs"].values()
    assert row["task"] == "classification"
    assert 0 <= row["int8"]["agreement"] <= 1 and row["int8"]["max_abs_diff"] > 0
    assert row["fp32"]["agreement"] == 1.0 and row["fp32"]["max_abs_diff"] < 1e-4
    assert r["validation"]["passed"] == (row["int8"]["agreement"] >= 0.99)
    bench = r["benchmark"]
    assert {"original", "onnx_fp32", "converted"} <= set(bench)
    assert bench["onnx_fp32_speedups"][0]["batch"] == 1
    assert "INT8 agreement" in reply.text


def test_tensorrt_int8_is_symmetric(tmp_path):
    """TensorRT's ONNX parser takes symmetric INT8 Q/DQ only: every zero-point must be 0."""
    subprocess.run([RUNNER, str(REPO / "tests" / "model_zoo.py"), str(tmp_path), "cnn"],
                   check=True, capture_output=True, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    rng = np.random.default_rng(0)
    np.savez(tmp_path / "calib.npz", image=rng.standard_normal((24, 28, 28, 1)).astype("float32"))
    _, reply = run_line(model_context(tmp_path), [
        "convert-model", str(tmp_path / "cnn"), "--to", "tensorrt", "--precision", "int8",
        "--calibration", str(tmp_path / "calib.npz"), *FAST])
    r = reply.data
    assert r["status"] in ("needs_gpu", "validation_failed"), reply.text
    q = r["conversion"]["quantized"]
    assert q["target"] == "tensorrt" and q["symmetric_activations"] and q["activations"] == "QInt8"
    onnx_path = os.path.join(r["workdir"], r["conversion"]["converted"])
    code = ("import sys, json, onnx; from onnx import numpy_helper as h\n"
            "m = onnx.load(sys.argv[1]); init = {i.name: h.to_array(i) for i in m.graph.initializer}\n"
            "zps = [init[n.input[2]] for n in m.graph.node\n"
            "       if n.op_type in ('QuantizeLinear', 'DequantizeLinear') and len(n.input) > 2]\n"
            "print(json.dumps([len(zps), sum(int((z != 0).any()) for z in zps),\n"
            "                  sorted({str(z.dtype) for z in zps})]))")
    out = subprocess.run([RUNNER, "-c", code, onnx_path], capture_output=True, text=True, check=True)
    count, nonzero, dtypes = json.loads(out.stdout)
    assert count > 0 and nonzero == 0 and dtypes == ["int8"]
    assert q["zero_points"] == {"qdq_nodes": count, "nonzero": 0, "dtypes": ["int8"]}
