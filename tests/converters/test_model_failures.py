"""A failed model job keeps its real cause: the worker's own error (here: an INT8 calibration
file that lacks the model's input) is in the job's record, shown by `job ID`, not the
"exit status 3: {"progress": ...}" of its log's last line. And a conversion that needs a GPU
registers nothing in the catalog: there is no engine yet. Real TensorFlow, tf2onnx, ORT."""
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from bot.dispatch import run_line
from catalog import open_db
from tests.model_context import REPO, RUNNER, model_context

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def dense(tmp_path_factory):
    out = tmp_path_factory.mktemp("zoo")
    proc = subprocess.run([RUNNER, str(REPO / "tests" / "model_zoo.py"), str(out), "dense"],
                          capture_output=True, text=True,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out / "dense.keras"


def test_a_failed_int8_conversion_keeps_the_workers_error(tmp_path, dense):
    ctx = model_context(tmp_path)
    np.savez(tmp_path / "calib.npz", a=np.zeros((16, 16), "float32"),
             b=np.zeros((16, 16), "float32"))  # neither is the input `features`
    _, reply = run_line(ctx, ["convert-model", str(dense), "--precision", "int8",
                              "--calibration", str(tmp_path / "calib.npz"), "--batch", "1"])
    assert not reply.ok
    job_id = reply.job.id
    job = ctx.services.engine.get(job_id)
    assert job.state == "failed"
    assert "features" in job.reason and '"progress"' not in job.reason, job.reason
    _, shown = run_line(ctx, ["job", job_id])
    assert "features" in shown.text


def test_tensorrt_without_a_gpu_registers_no_model(tmp_path, dense):
    ctx = model_context(tmp_path)
    _, reply = run_line(ctx, ["convert-model", str(dense), "--to", "tensorrt", "--batch", "1"])
    assert reply.data["status"] == "needs_gpu", reply.text
    job = ctx.services.engine.get(reply.job.id)
    assert job.state == "waiting_gpu" and "GPU runner" in job.reason  # not "succeeded"
    conn = open_db(ctx.config.state_path)
    try:
        assert conn.execute("SELECT name, format FROM catalog_models").fetchall() == []
    finally:
        conn.close()


def test_the_gpu_hand_off_names_the_job_the_user_sees(tmp_path, dense):
    ctx = model_context(tmp_path)
    _, reply = run_line(ctx, ["convert-model", str(dense), "--to", "tensorrt", "--batch", "1"])
    assert reply.job is not None, reply.text
    hand_off = (Path(reply.data["workdir"]) / "trt-build.yaml").read_text()
    assert reply.job.id in hand_off and "m-" not in hand_off.replace(reply.job.id, "")
