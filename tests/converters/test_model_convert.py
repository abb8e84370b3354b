"""End to end with real TensorFlow, tf2onnx and ONNX Runtime: small real models converted,
validated and benchmarked as jobs, and the clear failures where conversion is impossible."""
import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
import yaml

from bot.dispatch import run_line
from tests.model_context import REPO, RUNNER, model_context
from runners.kubernetes.schema import validate as validate_manifest
from runners.model_run import run_model_job

FAST = ["--batch", "1,8"]
pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


@pytest.fixture(scope="session")
def zoo(tmp_path_factory):
    out = tmp_path_factory.mktemp("zoo")
    proc = subprocess.run([RUNNER, str(REPO / "tests" / "model_zoo.py"), str(out)],
                          capture_output=True, text=True, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


@pytest.fixture
def ctx(tmp_path):
    return model_context(tmp_path)


def convert(ctx, *argv):
    _, reply = run_line(ctx, ["convert-model", *map(str, argv), *FAST])
    return reply


def test_keras_to_tensorrt_converts_onnx_and_answers_needs_gpu(ctx, zoo):
    reply = convert(ctx, zoo / "dense.keras", "--to", "tensorrt", "--precision", "fp16")
    assert reply.ok, reply.text
    r = reply.data
    assert r["status"] == "needs_gpu" and "needs a GPU runner" in reply.text
    assert r["model"]["kind"] == "keras" and r["conversion"]["opset"] == 17
    assert r["validation"]["passed"] and r["validation"]["outputs"]["probs"]["max_abs_error"] < 1e-4
    assert [s["batch"] for s in r["benchmark"]["speedups"]] == [1, 8]
    for row in r["benchmark"]["original"] + r["benchmark"]["converted"]:
        assert 0 < row["p50_ms"] <= row["p99_ms"] and row["throughput_per_s"] > 0
    workdir = Path(r["workdir"])
    manifests = list(yaml.safe_load_all((workdir / "trt-build.yaml").read_text()))
    for m in manifests:
        validate_manifest(m)
    build = manifests[1]["spec"]["template"]["spec"]["containers"][0]["command"]
    assert build[build.index("--precision") + 1] == "fp16"
    assert json.loads(build[build.index("--shapes") + 1])["features"]["max"] == [8, 16]
    assert (workdir / "chart.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert {p.name for p in reply.files} >= {"chart.png", "report.json", "trt-build.yaml"}
    assert not any(workdir.rglob("*.plan"))  # never a fake engine
    # the job engine recorded it with its artifacts (not the user's upload, not caches)
    _, job = run_line(ctx, ["job", r["job"]["id"], "--json"])
    arts = {a["path"]: a["kind"] for a in job.data["artifacts"]}
    assert job.data["state"] == "waiting_gpu"  # settled by its report: needs a GPU runner
    assert arts["out/model.optimized.onnx"] == "model" and arts["chart.png"] == "chart"
    assert not any(p.startswith((".", "source/")) for p in arts)


def test_cnn_int8_with_calibration_file(ctx, zoo, tmp_path):
    rng = np.random.default_rng(0)
    np.savez(tmp_path / "calib.npz", image=rng.standard_normal((32, 28, 28, 1)).astype("float32"))
    reply = convert(ctx, zoo / "cnn", "--precision", "int8", "--calibration", tmp_path / "calib.npz")
    r = reply.data
    # random weights: agreement may fall short of 99 %, but it must be measured and reported
    assert r["status"] in ("succeeded", "validation_failed"), reply.text
    assert reply.ok == (r["status"] == "succeeded")
    # 32 rows: 24 calibrate (3 batches of 8), 8 are held out to measure agreement
    assert r["conversion"]["quantized"]["calibration_batches"] == 3
    assert r["validation"]["int8"]["samples"] == 8
    assert r["conversion"]["converted"] == "out/model.int8.onnx"
    assert r["validation"]["tolerance"] == {"atol": 0.1, "rtol": 0.1}
    assert not any("random data" in w for w in r["warnings"])


@pytest.mark.parametrize("name", ["lstm", "module"])
def test_lstm_and_tf_module_convert(ctx, zoo, name):
    reply = convert(ctx, zoo / name)
    assert reply.ok, reply.text
    assert reply.data["validation"]["passed"]
    assert reply.data["validation"]["outputs"]


def test_multi_input_multi_output_with_user_samples(ctx, zoo, tmp_path):
    rng = np.random.default_rng(1)
    np.savez(tmp_path / "x.npz", numeric=rng.standard_normal((5, 8)).astype("float32"),
             ids=rng.integers(0, 10, (5, 4)).astype("int32"))
    reply = convert(ctx, zoo / "multi_io", "--input", tmp_path / "x.npz", "--tolerance", "1e-4")
    assert reply.ok, reply.text
    v = reply.data["validation"]
    assert v["inputs"] == "user samples" and set(v["outputs"]) == {"cls", "reg"}
    assert all(o["passed"] for o in v["outputs"].values())


def test_string_preprocessing_model_fails_clearly(ctx, zoo):
    reply = convert(ctx, zoo / "text")
    assert not reply.ok
    assert "ONNX has no equivalent" in reply.text and "StringSplit" in reply.text
    assert "feed token ids" in reply.text
    assert reply.data["error"]["code"] == "unsupported_ops"


def test_custom_op_fails_clearly(ctx, zoo):
    reply = convert(ctx, zoo / "custom")
    assert not reply.ok and "TfdeskCustomOp" in reply.text and "custom ops" in reply.text


def test_h5_to_tf_trt_explains_why_not_here(ctx, zoo):
    reply = convert(ctx, zoo / "dense.h5", "--to", "tf-trt")
    assert not reply.ok and "built without TensorRT" in reply.text
    assert reply.data["error"]["code"] == "needs_gpu"


def test_infer_predicts_and_benchmarks_as_a_job(zoo, tmp_path):
    """Run to its end from a script (runners/model_run.py): a job of an engine, sandboxed."""
    np.savez(tmp_path / "x.npz", features=np.ones((10, 16), "float32"))
    seen = []
    job, report = run_model_job("infer", {"model": str(zoo / "dense"), "batch": "1,4",
                                          "input": str(tmp_path / "x.npz")}, RUNNER,
                                {"iterations": 5, "warmup": 1, "budget_s": 1},
                                home=tmp_path / "home", progress=lambda m, d, t: seen.append(m))
    assert job.spec.input == "inputs/samples.npz"
    assert report["status"] == "succeeded", report
    assert any(m.startswith("benchmark") for m in seen)
    preds = np.load(Path(job.workdir) / "predictions.npz")["probs"]
    assert preds.shape == (10, 10) and np.allclose(preds.sum(axis=1), 1, atol=1e-5)
    assert [r["batch"] for r in report["benchmark"]["original"]] == [1, 4]