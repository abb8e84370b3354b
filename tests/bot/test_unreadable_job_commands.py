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
