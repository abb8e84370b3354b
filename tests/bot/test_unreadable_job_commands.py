"""`job`, `logs` and `jobs` on a job whose stored spec cannot be read: the commands show what
the row still says (state, reason, history, log) with the store's words for the fault, and a
one-shot command ends such a job left queued (nothing else would: no scheduler runs)."""
from __future__ import annotations

from bot.config import load_config
from bot.context import Context
from bot.dispatch import run_line
from runners import stored
from runners.local import paths
from runners.store import JobStore


def _run(ctx, line):
    return run_line(ctx, line)[1]


def test_commands_show_an_unreadable_job_and_end_it_when_queued(tmp_path):
    home = tmp_path / "home"
    store = JobStore(home / "state.sqlite")
    ran, _ = store.create("train", stored.StoredTrain(), "local", {}, "local", home / "jobs")
    waiting, _ = store.create("train", stored.StoredTrain(), "local", {}, "local", home / "jobs")
    for st in ("starting", "running", "succeeded"):
        store.transition(ran.id, st)
    log = paths(home / "jobs" / ran.id)["log"]
    log.parent.mkdir(parents=True)
    log.write_text("Epoch 1/1\nall done\n")
    for job in (ran, waiting):
        store._db().execute("UPDATE jobs SET spec = '{\"v\": 2, \"kind\": \"train\", "
                            "\"workers\": \"two\"}' WHERE id = ?", (job.id,))
    store.close()
    ctx = Context(load_config({"TFDESK_HOME": str(home)}))
    try:
        r = _run(ctx, f"job {ran.id} --json")
        assert r.ok and r.data["state"] == "succeeded"
        assert r.data["unreadable"].startswith(f"job {ran.id}: its stored spec is not valid")
        text = _run(ctx, f"job {ran.id}").text
        assert "spec: cannot be read:" in text and "workers" in text and "succeeded" in text
        assert _run(ctx, f"logs {ran.id}").text.endswith("all done")
        w = _run(ctx, f"job {waiting.id} --json").data  # the command's engine ended it
        assert w["state"] == "failed" and "never started" in w["reason"]
        assert f"job {waiting.id}: its stored spec is not valid" in w["reason"]
        listed = _run(ctx, "jobs --all --json").data["unreadable"]
        assert {u["id"] for u in listed} == {ran.id, waiting.id}
    finally:
        ctx.services.close()


def test_a_pipeline_step_whose_job_cannot_be_read_fails_with_the_jobs_reason(tmp_path):
    """The step's job row is damaged while the run waits for it: the step fails with the
    job's reason (the fault, in the store's words), not with an error of the code."""
    import json
    import os
    import subprocess

    from bot.pipeline_engine import EngineSteps
    from runners.local import proc_start_time
    from tests.jobs_helpers import make_engine
    home = tmp_path / "home"
    engine = make_engine(home, follow=False, local_workers=0)
    proc = subprocess.Popen(["sleep", "120"], process_group=0)
    try:
        job, _ = engine.store.create("train", stored.StoredTrain(), "ann", {}, "local",
                                     home / "jobs")
        handle = {"pid": proc.pid, "pgid": proc.pid, "pid_start": proc_start_time(proc.pid),
                  "host": os.uname().nodename}
        engine.store._db().execute("UPDATE jobs SET state = 'running', spec = 'oops', "
                                   "handle = ? WHERE id = ?", (json.dumps(handle), job.id))
        outcome = EngineSteps(engine, tmp_path / "scratch").wait(job.id, timeout=5)
        assert outcome.state == "lost"
        assert f"job {job.id}: its stored spec is not JSON" in outcome.error
    finally:
        engine.close()
        proc.kill()
        proc.wait()


def test_cancel_ends_a_running_job_that_cannot_be_read(tmp_path):
    """`cancel ID` of such a job (a cluster one no command has looked at, here a local one
    whose row was damaged after the look): cancelled at once, its process told to stop, the
    reason naming the fault; cancelling again says it is over."""
    import json
    import os
    import signal
    import subprocess

    from runners.local import proc_start_time
    home = tmp_path / "home"
    ctx = Context(load_config({"TFDESK_HOME": str(home)}))
    engine = ctx.services.engine
    proc = subprocess.Popen(["sleep", "120"], process_group=0)
    try:
        job, _ = engine.store.create("train", stored.StoredTrain(), "local", {}, "local",
                                     home / "jobs")
        handle = {"pid": proc.pid, "pgid": proc.pid, "pid_start": proc_start_time(proc.pid),
                  "host": os.uname().nodename}
        engine.store._db().execute("UPDATE jobs SET state = 'running', spec = 'oops', "
                                   "handle = ? WHERE id = ?", (json.dumps(handle), job.id))
        r = _run(ctx, f"cancel {job.id} --json")
        assert r.ok and r.data["state"] == "cancelled" and r.data["spec"] is None
        assert f"job {job.id}: its stored spec is not JSON" in r.data["reason"]
        assert proc.wait(10) == -signal.SIGTERM
        again = _run(ctx, f"cancel {job.id}")
        assert not again.ok and "already cancelled" in again.text
    finally:
        ctx.services.close()
        proc.kill()
        proc.wait()
