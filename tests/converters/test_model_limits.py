"""Quick checks without TensorFlow: the model-size limit refuses before any job starts and
names the limit; interleaved benchmarking; the calibration/held-out split; the INT8 summary."""
import numpy as np
import pytest

from bot.config import load_config
from bot.context import Context
from bot.dispatch import run_line
from converters.model import benchmark, jobspec, quantize
from converters.model.errors import BadInput
from converters.model.report import summary


def saved_model(tmp_path, weight_bytes):
    folder = tmp_path / "big_model"
    (folder / "variables").mkdir(parents=True)
    (folder / "saved_model.pb").write_bytes(b"")
    (folder / "variables" / "variables.data-00000-of-00001").write_bytes(b"\0" * weight_bytes)
    return folder


def test_model_over_the_limit_is_refused_with_the_limit_named(tmp_path):
    folder = saved_model(tmp_path, 3 << 20)
    with pytest.raises(BadInput, match=r"big_model is 3\.0 MiB, larger than .* 2\.0 MiB .*"
                                       r"\[models\] max_model_bytes") as err:
        jobspec.check_model_size(folder, {"max_model_bytes": 2 << 20})
    assert err.value.detail == {"size": 3 << 20, "limit": 2 << 20, "limit_name": "max_model_bytes"}
    assert jobspec.check_model_size(folder, {"max_model_bytes": 4 << 20}) == 3 << 20
    assert jobspec.check_model_size(folder, {}) == 3 << 20       # default: 4 GiB


def test_convert_model_refuses_before_a_job_starts(tmp_path):
    folder = saved_model(tmp_path, 5000)
    home = tmp_path / "home"
    home.mkdir()
    (home / "tfdesk.toml").write_text("[models]\nmax_model_bytes = 4096\n")
    ctx = Context(load_config({"TFDESK_HOME": str(home)}))
    _, reply = run_line(ctx, ["convert-model", str(folder)])
    assert not reply.ok and "max_model_bytes" in reply.text and "4.0 KiB" in reply.text
    _, jobs = run_line(ctx, ["jobs", "--json"])
    assert not (jobs.data or {}).get("jobs")


def test_interleaved_benchmark_measures_every_model_on_the_same_turns():
    calls = []
    runs = {"a": lambda feeds: calls.append("a"), "b": lambda feeds: calls.append("b")}
    rows = benchmark.measure_interleaved(runs, {}, batch=4, warmup=2, iterations=7)
    assert calls[:4] == ["a", "a", "b", "b"] and calls[4:] == ["a", "b"] * 7
    assert rows["a"]["iterations"] == rows["b"]["iterations"] == 7
    assert rows["a"]["batch"] == 4 and rows["a"]["p50_ms"] <= rows["a"]["p99_ms"]


def test_held_out_rows_are_never_calibration_rows():
    rows = np.arange(40, dtype="float32").reshape(40, 1)
    batches = [{"x": rows[i:i + 8]} for i in range(0, 40, 8)]
    calib, held = quantize.split_held_out(batches)
    seen = np.concatenate([b["x"] for b in calib]).ravel()
    assert len(held["x"]) == 10 and len(seen) == 30
    assert not set(seen) & set(held["x"].ravel())
    assert all(len(b["x"]) <= 8 for b in calib)
    few = [{"x": rows[:12]}]
    assert quantize.split_held_out(few) == (few, None)   # too few to spare: all calibrate


def test_int8_summary_reports_held_out_agreement_and_the_float_model():
    agree = {"agreement": 0.953, "max_abs_diff": 0.58}
    report = {"mode": "convert", "model": {"name": "m"},
              "conversion": {"target": "onnx", "precision": "int8", "opset": 17},
              "validation": {"passed": False, "int8": {
                  "samples": 256, "inputs": "calibration", "min_agreement": 0.99, "passed": False, "outputs": {
                      "probs": {"task": "classification", "int8": agree,
                                "fp32": {"agreement": 1.0, "max_abs_diff": 9e-6}}}}},
              "benchmark": {"original": [{"batch": 1, "p50_ms": 10.0}],
                            "onnx_fp32": [{"batch": 1, "p50_ms": 2.0}],
                            "converted": [{"batch": 1, "p50_ms": 1.0, "throughput_per_s": 900}],
                            "speedups": [{"batch": 1, "p50_speedup": 10.0}]}}
    text = summary(report)
    assert ("FAIL — INT8 agreement with TensorFlow on 256 held-out samples of your calibration "
            "file (needs >= 99%)") in text
    assert "INT8 95.3% top-1, max abs error 0.58; ONNX fp32 100.0%" in text
    assert "p50 10.00 ms -> fp32 2.00 ms (5.0x), int8 1.00 ms (10.0x)" in text
