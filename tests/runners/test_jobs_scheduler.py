"""One scheduler per state database: jobs submitted by any tfdesk process are started once and
followed to their end by the running scheduler (the Slack runtime of ``tfdesk serve``), read-only
commands start nothing, and a dry run needs no cluster credentials."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from tests.jobs_helpers import FAKE_KERAS, REPO, write
from tests.slack_stub import COMPUTE_TOML, SlackEnv, message_text

from runners.local import paths
from runners.models import QUEUED
from runners.store import JobStore


KERAS = """
import tensorflow as tf
model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
model.compile(optimizer="adam", loss="mse")
model.fit(tf.zeros((8, 2)), tf.zeros((8, 1)), epochs=3)
"""


def tfdesk(home: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    env = {**os.environ, "TFDESK_HOME": str(home), "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "bot.cli", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=timeout)


def wall(call: dict) -> float:
    """When the Slack stand-in got a call, on the wall clock."""
    return time.time() - (time.monotonic() - call["at"])


def exit_ts(job) -> float:
    return json.loads(paths(Path(job.workdir))["exit"].read_text())["ts"]


def wait_until(check, what: str, timeout: float = 30):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        got = check()
        if got:
            return got
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.mark.slow
def test_a_job_submitted_by_another_process_is_started_once_and_its_end_seen_at_once(tmp_path):
    toml = COMPUTE_TOML + f'[runner]\npython = "{sys.executable}"\n[jobs]\nlocal_workers = 2\n'
    env = SlackEnv(tmp_path, toml)  # the serve-like process: Slack runtime + scheduler
    try:
        engine = env.runtime.engine
        script = write(tmp_path / "train.py", FAKE_KERAS)
        done = tfdesk(env.home, "train", str(script), "--json")
        assert done.returncode == 0, done.stderr
        job_id = json.loads(done.stdout)["id"]
        job = wait_until(lambda: (j := engine.get(job_id)).state == "succeeded" and j,
                         "the scheduler to run the terminal's job")
        # Started once, by the scheduler (its claim is recorded with the job).
        starts = [e for e in engine.events(job_id) if e.type == "state"
                  and e.data.get("state") == "starting"]
        assert len(starts) == 1
        assert job.handle["engine"]["id"] == engine.me["id"]
        assert job.finished_at - exit_ts(job) < 1.0  # its end noticed within a second

        # A job asked for in Slack: its final message reaches the thread within a second.
        env.stub.calls.clear()
        env.command(f"train {shared(env, script)}", user="UADMIN", channel="C1")
        answer = env.stub.wait_for("chat.postMessage", lambda c: "thread_ts" in c["args"])[0]
        thread = answer["args"]["thread_ts"]
        final = env.stub.wait_for("chat.postMessage",
                                  lambda c: "Final metrics" in message_text(c["args"]))[0]
        assert final["args"]["thread_ts"] == thread
        slack_job = [j for j in engine.list() if j.id != job_id][0]
        assert slack_job.state == "succeeded"
        assert wall(final) - exit_ts(engine.get(slack_job.id)) < 1.0
    finally:
        env.close()


def shared(env, script: Path) -> Path:
    """A script UADMIN shared: Slack members name only their own uploads."""
    path = env.home / "slack" / "uploads" / "F1" / script.name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(script.read_text())
    (path.parent / "upload.json").write_text('{"name": "%s", "user": "UADMIN"}' % script.name)
    return path


def test_read_only_commands_start_nothing(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / "tfdesk.toml").write_text(f'[runner]\npython = "{sys.executable}"\n')
    script = write(tmp_path / "train.py", FAKE_KERAS)
    store = JobStore(home / "state.sqlite")
    job, _ = store.create("train", {"script_path": str(script), "workers": 1}, "local",
                          {"kind": "terminal"}, "local", home / "jobs")
    for args in (["jobs"], ["jobs", "--json"], ["job", job.id]):
        done = tfdesk(home, *args)
        assert done.returncode == 0, done.stderr
    assert store.get(job.id).state == QUEUED
    assert [e.data.get("state") for e in store.events(job.id)] == [QUEUED]


def test_kubernetes_dry_run_needs_no_configuration(tmp_path):
    from runners.kubernetes.schema import validate
    home = tmp_path / "home"
    home.mkdir()  # no tfdesk.toml at all: no [kubernetes], no credentials
    script = write(tmp_path / "train.py", KERAS)
    done = tfdesk(home, "train", str(script), "--workers", "2", "--backend", "kubernetes",
                  "--dry-run")
    assert done.returncode == 0, done.stderr
    manifests = [m for m in yaml.safe_load_all(done.stdout) if m]
    assert "# converted to horovod" in done.stdout  # the findings, as YAML comments
    kinds = [m["kind"] for m in manifests]
    assert "ConfigMap" in kinds and ("MPIJob" in kinds or "Job" in kinds), kinds
    for m in manifests:
        validate(m)
    assert not (home / "jobs").exists() or not any((home / "jobs").iterdir())


def test_a_starting_job_is_lost_only_when_its_claimant_is_gone(tmp_path):
    """Another engine's job in its short 'starting' window is left alone while that engine
    lives, and marked lost (never started a second time) once it is gone."""
    from tests.jobs_helpers import make_engine
    home = tmp_path / "home"
    home.mkdir()
    store = JobStore(home / "state.sqlite")
    job, _ = store.create("train", {"script_path": "x.py"}, "ann", {"kind": "terminal"},
                          "local", home / "jobs")
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        from runners.local import proc_start_time
        claimant = {"pid": other.pid, "pid_start": proc_start_time(other.pid),
                    "host": os.uname().nodename, "id": "other"}
        assert store.claim(job.id, "local", 2, 2, "ann", claimant)
        engine = make_engine(home)  # a scheduler starting up next to it
        try:
            time.sleep(1.0)
            assert engine.get(job.id).state == "starting"
            other.kill()
            other.wait()
            wait_until(lambda: engine.get(job.id).state == "lost", "the job to be marked lost")
            states = [e.data.get("state") for e in engine.events(job.id) if e.type == "state"]
            assert states == ["queued", "starting", "lost"]
        finally:
            engine.close()
    finally:
        other.kill()
