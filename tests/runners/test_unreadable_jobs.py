"""A job whose stored row cannot be read is never left queued or running: the engine ends it
with the store's words for the fault, stops the process its handle names, and leaves every
readable job as it was. Real SQLite store, real processes, a real engine."""
from __future__ import annotations

import json
import os
import signal
import subprocess

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from runners import stored
from runners.local import proc_start_time
from runners.models import TERMINAL
from runners.store import JobStore
from tests.jobs_helpers import make_engine

pytestmark = pytest.mark.timeout(300)

BAD_SPECS = ['{"v": 2, "kind": "train", "x": 1}', "not json {", '{"v": 99, "kind": "train"}',
             '{"v": 2, "kind": "infer"}', "[1, 2]"]
STATES = ["queued", "starting", "running", "succeeded", "cancelled", "lost"]
job_rows = st.tuples(st.sampled_from(STATES),
                     st.sampled_from([None, "spec", "handle", "spec+handle"]),
                     st.sampled_from(BAD_SPECS))


def _sleeper() -> tuple[subprocess.Popen, dict]:
    """A process standing for a job's supervisor, and the handle the row keeps of it."""
    proc = subprocess.Popen(["sleep", "120"], process_group=0)
    return proc, {"pid": proc.pid, "pgid": proc.pid, "pid_start": proc_start_time(proc.pid),
                  "host": os.uname().nodename}


def _rows(home, plan) -> tuple[list[str], dict[str, subprocess.Popen]]:
    """Jobs in the planned states, damaged as planned; processes for started ones."""
    store = JobStore(home / "state.sqlite")
    ids, procs = [], {}
    for state, damage, bad in plan:
        job, _ = store.create("train", stored.StoredTrain(), "ann",
                              {"kind": "slack", "channel": "C1", "thread_ts": "1.2"}, "local",
                              home / "jobs")
        handle = {}
        if state in ("starting", "running"):
            procs[job.id], handle = _sleeper()
        db = store._db()
        db.execute("UPDATE jobs SET state = ?, handle = ? WHERE id = ?",
                   (state, json.dumps(handle), job.id))
        if damage and "spec" in damage:
            db.execute("UPDATE jobs SET spec = ? WHERE id = ?", (bad, job.id))
        if damage and "handle" in damage:
            db.execute("UPDATE jobs SET handle = 'not json {' WHERE id = ?", (job.id,))
        ids.append(job.id)
    store.close()
    return ids, procs


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(plan=st.lists(job_rows, min_size=1, max_size=5), start=st.booleans())
def test_an_unreadable_active_job_ends_with_the_fault_and_its_process_stopped(
        tmp_path_factory, plan, start):
    """``start``: a scheduler starts (reconcile); else a one-shot command looks (refresh)."""
    home = tmp_path_factory.mktemp("home")
    ids, procs = _rows(home, plan)
    before = JobStore(home / "state.sqlite")
    why: list[tuple[str, str]] = []
    readable = {j.id: j for j in before.list(skipped=why)}
    why_of = dict(why)
    # No room in the pool: readable queued jobs stay queued; unreadable ones still end.
    engine = make_engine(home, follow=False, local_workers=0, start=start)
    if not start:
        engine.refresh()
    try:
        for job_id, (state, damage, _) in zip(ids, plan):
            job = engine.get(job_id, strict=False)
            proc = procs.get(job_id)
            if job_id in readable:  # untouched: same state, reason and handle
                old = readable[job_id]
                assert (job.state, job.reason, job.handle) == (old.state, old.reason, old.handle)
                assert proc is None or proc.poll() is None
                continue
            assert why_of[job_id].startswith(f"job {job_id}: ")
            if state in TERMINAL:
                assert job.state == state and job.reason == ""
                continue
            assert job.state in TERMINAL and why_of[job_id] in job.reason, job.reason
            assert job.state == ("failed" if state == "queued" else "lost")
            events = [e for e in engine.store.events(job_id) if e.type == "state"]
            assert events[-1].data["state"] == job.state and events[-1].data["reason"] == job.reason
            if proc is None:
                continue
            if "handle" in damage:  # nothing names the process: said, and it is left alone
                assert "nothing was stopped" in job.reason and proc.poll() is None
            else:
                assert proc.wait(10) == -signal.SIGTERM
                assert f"pid {proc.pid}) was told to stop" in job.reason
    finally:
        engine.close()
        for proc in procs.values():
            proc.kill()
            proc.wait()


def test_a_queued_job_damaged_after_start_fails_when_claimed(tmp_path):
    """The scheduler claims the oldest queued job; it cannot be read: it fails with why, and
    the pool slot it took is free again for the next job."""
    home = tmp_path / "home"
    engine = make_engine(home, follow=False, local_workers=1)
    try:
        bad, _ = engine.store.create("train", stored.StoredTrain(), "ann", {}, "local",
                                     home / "jobs")
        engine.store._db().execute("UPDATE jobs SET spec = 'oops' WHERE id = ?", (bad.id,))
        engine.schedule()
        job = engine.get(bad.id, strict=False)
        assert job.state == "failed"
        assert f"job {bad.id}: its stored spec is not JSON" in job.reason
        assert engine.store.active_count() == 0
    finally:
        engine.close()


def test_a_job_another_live_engine_is_starting_is_left_to_it(tmp_path):
    """Another engine (another host) claimed it and has made nothing yet: that engine
    watches it, so this one neither ends it nor says anything."""
    home = tmp_path / "home"
    store = JobStore(home / "state.sqlite")
    job, _ = store.create("train", stored.StoredTrain(), "ann", {}, "local", home / "jobs")
    claimant = {"id": "other", "pid": 1, "pid_start": None, "host": "elsewhere"}
    store._db().execute("UPDATE jobs SET state = 'starting', spec = 'oops', handle = ? "
                        "WHERE id = ?", (json.dumps({"engine": claimant}), job.id))
    engine = make_engine(home, follow=False, local_workers=0)
    try:
        assert engine.get(job.id, strict=False).state == "starting"
    finally:
        engine.close()


def test_a_spec_that_is_not_json_never_breaks_the_owners_job_count(tmp_path):
    """The owner's limit is counted in SQL over the rows: one that is not JSON is counted
    (it is active until an engine ends it) instead of failing every submission."""
    from runners.models import JobError
    store = JobStore(tmp_path / "state.sqlite")
    job, _ = store.create("train", stored.StoredTrain(), "ann", {}, "local", tmp_path / "jobs")
    store._db().execute("UPDATE jobs SET spec = 'oops' WHERE id = ?", (job.id,))
    store.create("train", stored.StoredTrain(), "ann", {}, "local", tmp_path / "jobs",
                 max_active=2)
    with pytest.raises(JobError, match="you already have 2 running job"):
        store.create("train", stored.StoredTrain(), "ann", {}, "local", tmp_path / "jobs",
                     max_active=2)


def test_waiting_for_a_job_that_cannot_be_read_ends_it(tmp_path):
    """`train --wait` or a pipeline step waits for a job whose row is damaged meanwhile:
    the wait ends it (its process stopped) and returns it, instead of raising."""
    home = tmp_path / "home"
    engine = make_engine(home, follow=False, local_workers=0)
    proc, handle = _sleeper()
    try:
        job, _ = engine.store.create("train", stored.StoredTrain(), "ann", {}, "local",
                                     home / "jobs")
        engine.store._db().execute("UPDATE jobs SET state = 'running', spec = '[]', "
                                   "handle = ? WHERE id = ?", (json.dumps(handle), job.id))
        ended = engine.wait(job.id, timeout=5)
        assert ended.state == "lost" and f"job {job.id}: its stored spec" in ended.reason
        assert proc.wait(10) == -signal.SIGTERM
    finally:
        engine.close()
        proc.kill()
        proc.wait()
