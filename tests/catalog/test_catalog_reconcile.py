"""Pipeline runs and model reads against the real job engine, without TensorFlow: the runner
interpreter is this Python and the training scripts are tiny programs that wait for a gate
file in a registered dataset folder, the job's read-only input (its sandbox shows it nothing
else; the folder is bound live, so the gate opening is seen). A real `tfdesk pipeline run`
process is killed mid-step to play a crashed tfdesk."""
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from bot.config import load_config
from bot.context import Context
from bot.dispatch import run_line
from catalog import models, open_db
from runners.inputs import Grant

REPO = Path(__file__).resolve().parents[2]

GATED = textwrap.dedent("""\
    import os, pathlib, sys, time
    gate = pathlib.Path(sys.argv[1])
    end = time.time() + 60
    while not gate.exists() and time.time() < end:
        time.sleep(0.05)
    if not gate.exists():
        sys.exit("the gate never opened")
    m = pathlib.Path(os.environ["TFDESK_WORKDIR"]) / "saved_model"
    m.mkdir()
    (m / "saved_model.pb").write_bytes(b"pb")
    print("Epoch 1/1")
""")

PIPELINE = """\
name: gated
steps:
  - name: slow
    kind: train
    register: gated-model
    with: {{script: "{gated}", args: ["${{datasets.gates}}/gate"]}}
  - name: quick
    kind: train
    register: quick-model
    with: {{script: "{gated}", args: ["${{datasets.gates}}/gate"]}}
"""


class Gate:
    """The gate the scripts wait for: a file in the ``gates`` dataset's folder, which every
    job of these pipelines is given as its input."""

    def __init__(self, folder: Path):
        self.folder = folder
        folder.mkdir()

    def open(self) -> None:
        (self.folder / "gate").touch()


GATES: dict[Path, Gate] = {}


@pytest.fixture
def home(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / "tfdesk.toml").write_text(f'[runner]\npython = "{sys.executable}"\n'
                                      '[jobs]\nlocal_workers = 1\ngrace_s = 1\n')
    (tmp_path / "gated.py").write_text(GATED)
    (tmp_path / "pipeline.yaml").write_text(PIPELINE.format(gated=tmp_path / "gated.py"))
    gate = GATES[tmp_path] = Gate(tmp_path / "gates")
    ctx = context(home)
    assert run(ctx, f"datasets add gates {gate.folder}").ok
    close(ctx)
    yield home
    gate.open()  # lets any job still waiting end by itself


def context(home):
    return Context(config=load_config({"TFDESK_HOME": str(home)}), owner="ann")


def close(ctx):
    ctx.services.close()


def run(ctx, line):
    _command, reply = run_line(ctx, line)
    return reply


def wait_for(check, what, timeout=30):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        got = check()
        if got:
            return got
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def crash_mid_step(home, tmp_path):
    """Run the pipeline in a real tfdesk process; kill it (SIGKILL) once step 1's job runs."""
    ctx = context(home)
    assert run(ctx, f"pipelines add - {tmp_path / 'pipeline.yaml'}").ok
    close(ctx)
    proc = subprocess.Popen([sys.executable, "-m", "bot.cli", "pipeline", "run", "gated"],
                            cwd=REPO, env={**os.environ, "TFDESK_HOME": str(home)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    conn = open_db(context(home).config.state_path)

    def started():
        row = conn.execute("SELECT s.run_id, s.job_id FROM catalog_run_steps s WHERE idx = 0 "
                           "AND job_id IS NOT NULL").fetchone()
        if row is None:
            return None
        job = conn.execute("SELECT state, handle FROM jobs WHERE id = ?",
                           (row["job_id"],)).fetchone()
        return (row["run_id"], row["job_id"], json.loads(job["handle"] or "{}")) \
            if job is not None and job["state"] == "running" else None
    try:
        run_id, job_id, handle = wait_for(started, "the first step's job to run")
    finally:
        proc.kill()
        _out, err = proc.communicate()
    conn.close()
    assert proc.returncode == -signal.SIGKILL, err.decode()[-2000:]
    return run_id, job_id, handle


def test_a_run_whose_tfdesk_crashed_is_followed_to_the_end(home, tmp_path):
    run_id, job_id, _handle = crash_mid_step(home, tmp_path)
    ctx = context(home)
    try:
        r = run(ctx, f"pipeline status {run_id} --json")
        st = r.data["run"]
        assert st["state"] == "running" and st["orphaned"]
        assert f"pipeline follow {run_id}" in r.text
        GATES[tmp_path].open()  # the job, which outlived tfdesk, can now finish
        r = run(ctx, f"pipeline follow {run_id}")
        st = r.data["run"]
        assert r.ok and st["state"] == "succeeded", r.text
        assert [s["state"] for s in st["steps"]] == ["succeeded", "succeeded"]
        assert st["steps"][0]["job_id"] == job_id  # followed, not started again
        assert not st["orphaned"]
        conn = open_db(ctx.config.state_path)
        gated = models.get(conn, "gated-model:1")
        assert (gated["job_id"], gated["run_id"]) == (job_id, run_id)
        assert models.get(conn, "quick-model:1")["run_id"] == run_id
        conn.close()
        r = run(ctx, f"pipeline follow {run_id}")  # nothing left to follow: just the status
        assert r.ok and r.data["run"]["state"] == "succeeded"
    finally:
        close(ctx)


def test_a_long_running_tfdesk_takes_over_orphaned_runs_by_itself(home, tmp_path):
    run_id, job_id, _handle = crash_mid_step(home, tmp_path)
    GATES[tmp_path].open()
    from bot.services import make_engine
    config = context(home).config
    engine = make_engine(config, start=True)
    try:
        conn = open_db(config.state_path)
        wait_for(lambda: conn.execute("SELECT state FROM catalog_runs WHERE id = ?",
                                      (run_id,)).fetchone()["state"] == "succeeded",
                 "the restarted tfdesk to finish the run")
        assert conn.execute("SELECT job_id FROM catalog_run_steps WHERE run_id = ? AND idx = 0",
                            (run_id,)).fetchone()[0] == job_id
        conn.close()
    finally:
        engine.close()


def test_a_run_whose_job_died_with_tfdesk_is_marked_failed_with_the_reason(home, tmp_path):
    run_id, job_id, handle = crash_mid_step(home, tmp_path)
    os.killpg(handle["pgid"], signal.SIGKILL)  # the machine "rebooted": the job is gone too
    wait_for(lambda: not Path(f"/proc/{handle['pid']}").exists() or
             Path(f"/proc/{handle['pid']}/stat").read_text().split(")")[1].split()[0] == "Z",
             "the job's supervisor to die")
    ctx = context(home)
    try:
        assert run(ctx, "jobs").ok  # any command that starts the engine reconciles
        r = run(ctx, f"pipeline status {run_id} --json")
        st = r.data["run"]
        assert st["state"] == "failed" and not st["orphaned"]
        slow, quick = st["steps"]
        assert slow["state"] == "failed" and f"its job {job_id} lost" in slow["error"]
        assert quick["state"] == "not-run"
        assert "failed after tfdesk stopped" in st["error"]
        assert "pipeline run gated --from slow" in r.text
        r = run(ctx, f"pipeline follow {run_id}")
        assert not r.ok and r.data["run"]["state"] == "failed"
    finally:
        close(ctx)


def test_deleting_a_model_a_job_reads_is_refused_until_the_job_ends(home, tmp_path):
    """A queued or running job naming a catalog model holds it: delete lists the job."""
    onnx = home / "m.onnx"
    onnx.write_bytes(b"not really onnx")  # the infer job will fail on it: that ends it too
    ctx = context(home)
    try:
        assert run(ctx, f"models add m {onnx}").ok
        engine = ctx.services.engine
        # The only local slot is taken, so the reader stays queued while we try to delete.
        gates = GATES[tmp_path].folder
        blocker = engine.submit("train", {"script_path": str(tmp_path / "gated.py"),
                                          "args": [str(gates / "gate")], "inputs": [str(gates)]},
                                "ann", grant=Grant(roots=(gates,)))
        conn = open_db(ctx.config.state_path)
        stored = models.get(conn, "m")["artifact_uri"]  # the catalog's copy, as ${models.m}
        reader = engine.submit("infer", {"model": stored, "batch": [1]}, "ann")
        wait_for(lambda: models.get(conn, "m")["used_by"], "the job's use to be recorded")
        r = run(ctx, "models delete m")
        assert not r.ok and f"job {reader.id}" in r.text and "--force" in r.text
        assert Path(stored).exists() and models.get(conn, "m")["used_by"] == [f"job {reader.id}"]
        GATES[tmp_path].open()
        assert engine.wait(blocker.id, timeout=30).state == "succeeded"
        assert engine.wait(reader.id, timeout=60).state in ("succeeded", "failed")
        wait_for(lambda: not models.get(conn, "m")["used_by"], "the use to be released")
        r = run(ctx, "models delete m")
        assert r.ok, r.text
        conn.close()
    finally:
        close(ctx)


def test_deleting_a_model_a_running_pipeline_step_reads_is_refused(home, tmp_path):
    saved = home / "base"
    saved.mkdir()
    (saved / "saved_model.pb").write_bytes(b"pb")
    (tmp_path / "reads.yaml").write_text(textwrap.dedent(f"""\
        name: reads
        steps:
          - name: tune
            kind: train
            with: {{script: "{tmp_path / 'gated.py'}",
                    args: ["${{datasets.gates}}/gate", "${{models.base}}"]}}
    """))
    ctx = context(home)
    try:
        assert run(ctx, f"models add base {saved}").ok
        assert run(ctx, f"pipelines add - {tmp_path / 'reads.yaml'}").ok
        import threading
        done, other = {}, context(home)  # another tfdesk process, as it were
        t = threading.Thread(target=lambda: done.update(r=run(other, "pipeline run reads")))
        t.start()
        conn = open_db(ctx.config.state_path)
        used = wait_for(lambda: [u for u in models.get(conn, "base")["used_by"]
                                 if u.startswith("run ")], "the run's use")
        r = run(ctx, "models delete base")
        assert not r.ok and used[0] in r.text and "pipeline reads" in r.text
        GATES[tmp_path].open()
        t.join(60)
        assert done["r"].ok, done["r"].text
        assert models.get(conn, "base")["used_by"] == ["pipeline reads"]  # the run let go
        conn.close()
        close(other)
    finally:
        close(ctx)


def test_a_run_whose_job_tfdesk_cannot_read_fails_naming_the_fault(home, tmp_path):
    """The running step's job row is damaged while tfdesk is down: the next command ends the
    job (its process told to stop) and the run fails with the store's words, instead of
    every command failing on the row."""
    run_id, job_id, handle = crash_mid_step(home, tmp_path)
    conn = open_db(context(home).config.state_path)
    conn.execute("UPDATE jobs SET spec = '{\"v\": 2, \"kind\": \"train\", \"x\": 1}' "
                 "WHERE id = ?", (job_id,))
    conn.commit()
    conn.close()
    ctx = context(home)
    try:
        assert run(ctx, "jobs").ok
        wait_for(lambda: not Path(f"/proc/{handle['pid']}").exists() or
                 Path(f"/proc/{handle['pid']}/stat").read_text().split(")")[1].split()[0]
                 == "Z", "the job's supervisor to stop")
        st = run(ctx, f"pipeline status {run_id} --json").data["run"]
        assert st["state"] == "failed"
        slow = st["steps"][0]
        assert f"its job {job_id} lost: tfdesk cannot read this job" in slow["error"]
        assert f"job {job_id}: its stored spec is not valid: x" in slow["error"]
    finally:
        close(ctx)
