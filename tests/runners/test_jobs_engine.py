"""The job engine and the local backend, with real subprocesses and a real SQLite database."""
from __future__ import annotations

import json
import os
from pathlib import Path
import signal
import sqlite3
import subprocess
import sys
import threading
import time

import pytest

from tests.jobs_helpers import FAKE_KERAS, SLEEPER, make_engine, write
from runners.metrics import MetricReader
from runners.models import IllegalTransition, JobError, UnknownJob
from runners.store import JobStore

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def home(tmp_path):
    return tmp_path / "home"


@pytest.fixture
def engine(home):
    eng = make_engine(home)
    yield eng
    for job in eng.list(states=["running", "starting"]):
        eng.cancel(job.id)
    eng.close()


def test_a_job_runs_reports_metrics_and_artifacts(engine, tmp_path):
    script = write(tmp_path / "train.py", FAKE_KERAS)
    events = []
    engine.subscribe(events.append)
    job = engine.submit("train", {"script_path": str(script), "epochs": 3}, owner="ann",
                        reply_to={"kind": "slack", "channel": "C1", "thread_ts": "1.2"})
    job = engine.wait(job.id, timeout=30)
    assert job.state == "succeeded", job.reason
    assert job.reply_to["channel"] == "C1"
    assert [m["epoch"] for m in engine.metrics(job.id)] == [1, 2, 3]
    assert engine.metrics(job.id)[1]["loss"] == pytest.approx(0.5)
    assert {a["path"]: a["kind"] for a in engine.artifacts(job.id)} == {
        "metrics.csv": "metrics", "model.keras": "model"}
    assert [e.data["state"] for e in engine.events(job.id) if e.type == "state"] == [
        "queued", "starting", "running", "succeeded"]
    time.sleep(0.2)  # the event thread delivers asynchronously
    kinds = [e.type for e in events]
    assert kinds.count("metric") == 3 and "log" in kinds
    assert engine.read_log(job.id, tail=1).strip().startswith("4/4")


def test_failure_reason_comes_from_the_log(engine, tmp_path):
    script = write(tmp_path / "bad.py", "import sys\nprint('starting')\nraise ValueError('shapes (2,) and (3,) differ')\n")
    job = engine.wait(engine.submit("train", {"script_path": str(script)}).id, timeout=30)
    assert job.state == "failed"
    assert "exit status 1" in job.reason and "ValueError: shapes (2,) and (3,) differ" in job.reason


def test_bad_input_is_refused_and_nothing_is_created(engine, tmp_path, home):
    with pytest.raises(JobError, match="no such script"):
        engine.submit("train", {"script_path": str(tmp_path / "missing.py")})
    broken = write(tmp_path / "broken.py", "def f(:\n")
    with pytest.raises(JobError, match="not valid Python: line 1"):
        engine.submit("train", {"script_path": str(broken)})
    plain = write(tmp_path / "plain.py", "print(1)\n")
    with pytest.raises(JobError, match="cannot run on 2 workers"):
        engine.submit("train", {"script_path": str(plain), "workers": 2, "convert": "none"})
    with pytest.raises(JobError, match="unknown job kind"):
        engine.submit("paint", {})
    assert engine.list() == []
    assert [p.name for p in (home / "jobs").iterdir()] == []


def test_timeout_stops_the_whole_process_group(engine, tmp_path):
    # The script starts a grandchild that would outlive a naive kill of the direct child; it
    # carries a marker in its command line, found in the host's /proc (the job sees its own
    # PID namespace, so a pid it writes down means nothing here).
    marker = f"grandchild-{os.getpid()}-{time.time_ns()}"
    script = write(tmp_path / "slow.py", f"""
        import subprocess, sys, time
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "{marker}"])
        print("Epoch 1/1", flush=True)
        time.sleep(60)
    """)
    job = engine.submit("train", {"script_path": str(script), "timeout": 1.5})
    job = engine.wait(job.id, timeout=30)
    assert job.state == "failed" and "timed out after 1.5s" in job.reason
    time.sleep(0.2)
    assert _with_marker(marker) == []


def _with_marker(marker):
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if marker.encode() in f.read() and _alive(int(pid)):
                    found.append(int(pid))
        except OSError:
            pass
    return found


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_cancel_running_and_queued_jobs(home, tmp_path):
    eng = make_engine(home, local_workers=1, per_owner=1)
    try:
        script = write(tmp_path / "sleep.py", SLEEPER)
        first = eng.submit("train", {"script_path": str(script)})
        second = eng.submit("train", {"script_path": str(script)})
        assert eng.get(first.id).state == "running" and eng.get(second.id).state == "queued"
        assert eng.cancel(second.id).state == "cancelled"
        t = time.monotonic()
        job = eng.cancel(first.id)
        assert job.state == "cancelled", job.reason
        assert time.monotonic() - t < 10
        assert not _alive(job.handle["pid"])
        with pytest.raises(JobError, match="already cancelled"):
            eng.cancel(first.id)
    finally:
        eng.close()


def test_pool_and_per_owner_limits_queue_the_excess(home, tmp_path):
    eng = make_engine(home, local_workers=2, per_owner=1)
    try:
        script = write(tmp_path / "sleep.py", SLEEPER)
        a1 = eng.submit("train", {"script_path": str(script)}, owner="ann")
        a2 = eng.submit("train", {"script_path": str(script)}, owner="ann")
        b1 = eng.submit("train", {"script_path": str(script)}, owner="bob")
        c1 = eng.submit("train", {"script_path": str(script)}, owner="cat")
        states = [eng.get(j.id).state for j in (a1, a2, b1, c1)]
        assert states == ["running", "queued", "running", "queued"]
        eng.cancel(a1.id)
        eng.schedule()
        # ann's first job is done: her second one takes its place (it was queued first)
        assert eng.get(a2.id).state == "running" and eng.get(c1.id).state == "queued"
    finally:
        for j in eng.list(states=["running", "queued"]):
            eng.cancel(j.id)
        eng.close()


def test_delete_refuses_running_jobs_unless_forced(engine, tmp_path):
    script = write(tmp_path / "sleep.py", SLEEPER)
    job = engine.submit("train", {"script_path": str(script)})
    with pytest.raises(JobError, match="cancel it first or delete with --force"):
        engine.delete(job.id)
    engine.delete(job.id, force=True)
    with pytest.raises(UnknownJob):
        engine.get(job.id)
    assert not os.path.exists(job.workdir)
    # the history stays: events are never rewritten or removed
    assert engine.store.events(job.id)[-1].message == "deleted"


def test_store_state_machine_and_append_only_events(tmp_path):
    store = JobStore(tmp_path / "s.sqlite")
    job, _ = store.create("train", {}, "me", {}, "local", tmp_path / "jobs")
    with pytest.raises(IllegalTransition, match="cannot become succeeded"):
        store.transition(job.id, "succeeded")
    assert store.transition(job.id, "cancelled")
    assert store.transition(job.id, "running", strict=False) is None
    db = sqlite3.connect(tmp_path / "s.sqlite")
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        db.execute("UPDATE job_events SET message = 'x'")


def test_claims_hold_across_engines_on_one_database(tmp_path):
    """Two processes racing to start the same queued jobs never start one twice."""
    store = JobStore(tmp_path / "s.sqlite")
    ids = [store.create("train", {}, f"o{i}", {}, "local", tmp_path)[0].id for i in range(40)]
    won: list[str] = []

    def race():
        s = JobStore(tmp_path / "s.sqlite")
        for i in ids:
            if s.claim(i, "local", limit=100, per_owner=5, owner="x"):
                won.append(i)
    threads = [threading.Thread(target=race) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(won) == sorted(ids)


@pytest.mark.parametrize("line, expected", [
    ("4/4 - 0s - loss: 0.6931 - accuracy: 0.5000 - 251ms/epoch - 63ms/step", {"loss": 0.6931, "accuracy": 0.5}),
    ("4/4 [==============================] - 0s 3ms/step - loss: 0.25 - val_loss: 0.5", {"loss": 0.25, "val_loss": 0.5}),
    ("[0]<stdout>:4/4 - 1s - loss: 1.5e-03 - auc: 0.9", {"loss": 0.0015, "auc": 0.9}),
    ("[1]<stdout>:4/4 - 1s - loss: 9.0", None),
    ("[1] 4/4 - 1s - loss: 9.0", None),
])
def test_metric_rules(line, expected):
    r = MetricReader()
    r.feed("[0]<stdout>:Epoch 2/5")
    got = r.feed(line)
    assert (got[1] if got else None) == expected
    if got:
        assert got[0] == 2 and r.total_epochs == 5


def test_explicit_metric_lines():
    assert MetricReader().feed('TFDESK_METRIC {"epoch": 4, "mae": 0.1}') == (4, {"mae": 0.1})


def test_restart_marks_vanished_jobs_lost_and_reattaches_live_ones(home, tmp_path):
    """tfdesk is killed (SIGKILL) while two jobs run; one job's processes are killed too.
    A new engine on the same database marks that one lost and follows the other to the end."""
    script = write(tmp_path / "train.py", FAKE_KERAS)
    code = f"""
import sys, time
sys.path.insert(0, {str(tmp_path.parent)!r})
sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})
from tests.jobs_helpers import make_engine
from pathlib import Path
eng = make_engine(Path({str(home)!r}))
a = eng.submit("train", {{"script_path": {str(script)!r}, "epochs": 4, "args": []}})
b = eng.submit("train", {{"script_path": {str(script)!r}, "epochs": 4}})
print(a.id, b.id, flush=True)
time.sleep(60)
"""
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    a_id, b_id = proc.stdout.readline().split()
    eng = make_engine(home)  # looks, but the jobs are the other process's
    try:
        a = eng.get(a_id)
        os.killpg(a.handle["pgid"], signal.SIGKILL)   # a's processes vanish with tfdesk
        proc.send_signal(signal.SIGKILL)              # tfdesk dies mid-job
        proc.wait()
    finally:
        eng.close()
    fresh = make_engine(home)
    try:
        assert fresh.wait(a_id, 10).state == "lost"
        assert "left no exit record" in fresh.get(a_id).reason
        b = fresh.wait(b_id, 30)
        assert b.state == "succeeded", b.reason
        assert [m["epoch"] for m in fresh.metrics(b_id)] == [1, 2, 3, 4]
    finally:
        fresh.close()


def test_commands_through_the_parser(home, tmp_path, monkeypatch):
    from bot.config import load_config
    from bot.context import Context
    from bot.dispatch import run_line
    monkeypatch.setenv("TFDESK_HOME", str(home))
    monkeypatch.setenv("TFDESK_RUNNER_PYTHON", sys.executable)
    ctx = Context(config=load_config(), owner="ann")
    script = write(tmp_path / "train.py", FAKE_KERAS)
    _, reply = run_line(ctx, f"train {script} --register train --epochs 2 --wait --json")
    assert reply.ok, reply.text
    data = json.loads(reply.to_json())
    job_id = data["id"]
    assert data["state"] == "succeeded" and len(data["metrics"]) == 2
    assert reply.files and reply.files[0].suffix == ".png" and reply.files[0].stat().st_size > 1000
    _, reply = run_line(ctx, "jobs --mine")
    assert job_id in reply.text and "succeeded" in reply.text
    _, reply = run_line(ctx, f"logs {job_id} --tail 1")
    assert reply.text.startswith("4/4")
    _, reply = run_line(ctx, f"cancel {job_id}")
    assert not reply.ok and "already succeeded" in reply.text
    _, reply = run_line(ctx, "job j-nope")
    assert not reply.ok and "no job 'j-nope'" in reply.text
    _, reply = run_line(ctx, f"delete {job_id}")  # the model it registered lives there
    assert not reply.ok and "model train:1" in reply.text
    assert run_line(ctx, "models delete train:1")[1].ok
    _, reply = run_line(ctx, f"delete {job_id}")
    assert reply.ok
    _, reply = run_line(ctx, f"train {script} --workers 0")
    assert not reply.ok and "--workers must be between 1 and 64" in reply.text
    # A row whose spec this tfdesk cannot read is named by `jobs`, and `delete` removes it.
    bad = "j-0badc0de"  # written finished, so no scheduler ever picks it up
    ctx.services.engine.store._db().execute(
        "INSERT INTO jobs (id, kind, spec, owner, reply_to, backend, state, created_at, workdir) "
        "VALUES (?, 'train', '[1]', 'ann', '{}', 'local', 'failed', 0, ?)",
        (bad, str(home / "jobs" / bad)))
    _, reply = run_line(ctx, "jobs --mine --json")
    assert [u["id"] for u in reply.data["unreadable"]] == [bad]
    assert f"{bad} cannot be read" in reply.text and "not a JSON object" in reply.text
    assert run_line(ctx, f"delete {bad}")[1].ok
    assert run_line(ctx, "jobs --mine")[1].data.get("unreadable") == []
    ctx.services.close()


def test_single_process_scripts_are_converted_before_they_run(engine):
    source = """
import numpy as np
import tensorflow as tf
model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(4,))])
model.compile(optimizer=tf.keras.optimizers.SGD(0.01), loss="mse")
model.fit(np.zeros((8, 4)), np.zeros((8, 1)), epochs=2)
"""
    plan = engine.dry_run("train", {"script_source": source, "script_name": "fit.py", "workers": 2})
    assert plan["spec"].converted_to == "horovod" and plan["spec"].launcher == "horovod"
    assert "horovodrun --gloo -np 2 -H localhost:2" in plan["text"]
    plan = engine.dry_run("train", {"script_source": source, "workers": 2, "convert": "tf-distribute"})
    assert plan["spec"].launcher == "tf-distribute" and len(plan["commands"]) == 2


@pytest.mark.parametrize("end", ["succeeded", "failed", "cancelled"])
def test_wait_returns_once_every_subscriber_has_seen_the_end(engine, tmp_path, end):
    """A subscriber that acts on a job's end (the catalog registering a training's model)
    has done so when wait() returns: `train --wait` never says "registered" before it is.
    The subscriber is made slow, so a wait that returned on the stored state alone fails."""
    seen: list[str] = []

    def slow(ev):
        if ev.type == "state" and ev.data.get("state") in ("succeeded", "failed", "cancelled"):
            time.sleep(0.5)
            seen.append(ev.data["state"])

    engine.subscribe(slow)
    code = {"succeeded": "print('ok')\n", "failed": "raise SystemExit(3)\n",
            "cancelled": "import time\ntime.sleep(30)\n"}[end]
    script = write(tmp_path / "job.py", code)
    job = engine.submit("train", {"script_path": str(script), "epochs": 1})
    if end == "cancelled":
        deadline = time.monotonic() + 20
        while engine.get(job.id).state != "running" and time.monotonic() < deadline:
            time.sleep(0.05)
        job = engine.cancel(job.id)
    else:
        job = engine.wait(job.id, timeout=30)
    assert job.state == end, job.reason
    assert seen == [end]
