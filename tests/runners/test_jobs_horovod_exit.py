"""A two-worker Horovod job whose script writes TensorBoard summaries ends as it ran: the
tracking hook acts in the workers alone, never in horovodrun's own processes (they load it
from the same PYTHONPATH; reading event files at their exit crashed them with signal 11 after
both workers had finished). Real: tests/scripts/keras_fit_basic.py converted by tfdesk, run by
the engine in the runner environment (TF 2.15 + Horovod gloo)."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.jobs_helpers import make_engine, runner_python

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]
SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "keras_fit_basic.py"


def test_two_workers_with_tensorboard_exit_cleanly_and_are_tracked(tmp_path):
    py = runner_python()
    if not py.exists():
        pytest.skip("runner environment not built; run 'make runner-env'")
    eng = make_engine(tmp_path / "home", python=py)
    try:
        job = eng.submit("train", {"script_path": str(SCRIPT), "workers": 2})
        assert job.spec.launcher == "horovod" and job.spec.converted_to == "horovod"
        job = eng.wait(job.id, timeout=500)
        log = eng.read_log(job.id)
        assert job.state == "succeeded", f"{job.reason}\n{log[-3000:]}"
        assert "exit with status code" not in log
        assert [m["epoch"] for m in eng.metrics(job.id)] == [1, 2]  # rank 0 still tracked
        assert any(Path(job.workdir, "logs").rglob("events.out.tfevents.*"))
    finally:
        eng.close()
