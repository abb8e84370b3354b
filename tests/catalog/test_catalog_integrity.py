"""Catalog integrity as an invariant: whatever happens to the jobs of a pipeline (a step fails,
is cancelled, or its job is deleted afterwards), every catalog entry still resolves: its files
exist, its parent exists, what a pipeline names is there. Real engine, real jobs (this Python
as the runner; tiny scripts), real `tfdesk` commands; `catalog check` is the oracle, and it
is itself checked against entries whose files are removed behind its back."""
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from bot.config import load_config
from bot.context import Context
from bot.dispatch import run_line
from catalog import datasets, integrity, models, open_db

STEP = textwrap.dedent("""\
    import os, pathlib, sys, time
    mode, gate = sys.argv[1], pathlib.Path(sys.argv[2])
    if mode == "fail":
        raise ValueError("calibration file lacks input 'features'")
    if mode == "wait":
        end = time.time() + 60
        while not gate.exists() and time.time() < end:
            time.sleep(0.05)
    m = pathlib.Path(os.environ["TFDESK_WORKDIR"]) / "saved_model"
    m.mkdir()
    (m / "saved_model.pb").write_bytes(b"pb")
""")

PIPELINE = """\
name: two
params: {{m0: ok, m1: ok}}
steps:
  - name: first
    kind: train
    register: first-model
    with: {{script: step.py, args: ["${{params.m0}}", "{gate}"]}}
  - name: second
    kind: train
    register: second-model
    with: {{script: step.py, args: ["${{params.m1}}", "{gate}"]}}
"""


@pytest.fixture
def home(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / "tfdesk.toml").write_text(f'[runner]\npython = "{sys.executable}"\n'
                                      '[jobs]\nlocal_workers = 1\ngrace_s = 1\n')
    (tmp_path / "step.py").write_text(STEP)
    (tmp_path / "pipeline.yaml").write_text(PIPELINE.format(gate=tmp_path / "gate"))
    yield home
    (tmp_path / "gate").touch()


def run(ctx, line):
    return run_line(ctx, line)[1]


def resolves(conn) -> list[str]:
    """Every way an entry can fail to resolve, independently of catalog.integrity."""
    bad = []
    for m in conn.execute("SELECT * FROM catalog_models"):
        if m["artifact_uri"] and not Path(m["artifact_uri"]).exists():
            bad.append(f"model {m['name']}:{m['version']} has no files")
        if m["parent_id"] is not None and conn.execute(
                "SELECT 1 FROM catalog_models WHERE id = ?", (m["parent_id"],)).fetchone() is None:
            bad.append(f"model {m['name']}:{m['version']} names a missing parent")
    return bad + [str(d) for d in integrity.check(conn)]


def step_job(conn, idx: int):
    row = conn.execute("SELECT job_id FROM catalog_run_steps WHERE idx = ? AND job_id IS NOT "
                       "NULL ORDER BY rowid DESC LIMIT 1", (idx,)).fetchone()
    return row["job_id"] if row else None


@pytest.mark.parametrize("idx", [0, 1])
@pytest.mark.parametrize("action", ["fail", "cancel", "delete", "delete --force"])
def test_every_entry_resolves_whatever_happens_to_a_step(home, tmp_path, idx, action,
                                                        monkeypatch):
    ctx = Context(config=load_config({"TFDESK_HOME": str(home)}), owner="ann")
    conn = open_db(ctx.config.state_path)
    try:
        # Added in the pipeline's folder, run from another: the stored paths are absolute.
        monkeypatch.chdir(tmp_path)
        assert run(ctx, "pipelines add - pipeline.yaml").ok
        (tmp_path / "elsewhere").mkdir()
        monkeypatch.chdir(tmp_path / "elsewhere")
        mode = {"fail": "fail", "cancel": "wait"}.get(action, "ok")
        line = f"pipeline run two --param m{idx}={mode}"
        if action == "cancel":
            got = {}
            t = threading.Thread(target=lambda: got.update(r=run(ctx, line)))
            t.start()
            end = time.monotonic() + 60
            while step_job(conn, idx) is None or \
                    ctx.services.engine.get(step_job(conn, idx)).state != "running":
                assert time.monotonic() < end, "the step's job never ran"
                time.sleep(0.1)
            assert run(ctx, f"cancel {step_job(conn, idx)}").ok
            t.join(60)
            reply = got["r"]
        else:
            reply = run(ctx, line)
        job_id = step_job(conn, idx)
        if action.startswith("delete"):
            assert reply.ok, reply.text
            before = models.get(conn, ["first-model", "second-model"][idx])
            r = run(ctx, f"{action.split()[0]} {job_id} {' '.join(action.split()[1:])}")
            assert not r.ok and "model" in r.text, r.text  # refused, and says what holds it
            assert Path(before["artifact_uri"]).exists()
        else:
            assert not reply.ok
            job = ctx.services.engine.get(job_id)
            assert job.state == ("failed" if action == "fail" else "cancelled")
            if action == "fail":  # the real cause is in the record, not only "exit status 1"
                assert "lacks input 'features'" in job.reason
                assert "lacks input 'features'" in run(ctx, f"job {job_id}").text
        assert resolves(conn) == []
        kept = {r["name"] for r in conn.execute("SELECT name FROM catalog_models")}
        assert kept == ({"first-model", "second-model"} if action.startswith("delete")
                        else {"first-model"} if idx == 1 else set())
    finally:
        conn.close()
        ctx.services.close()


def test_catalog_check_finds_and_repairs_what_was_removed_behind_its_back(home, tmp_path):
    ctx = Context(config=load_config({"TFDESK_HOME": str(home)}), owner="ann")
    conn = ctx.services.catalog
    try:
        for i in range(3):
            (tmp_path / f"m{i}.onnx").write_bytes(b"onnx")
            models.add(conn, f"m{i}", "ann", artifact_uri=str(tmp_path / f"m{i}.onnx"), copy=False)
        (tmp_path / "d.npz").write_bytes(b"npz")
        datasets.add(conn, "d", str(tmp_path / "d.npz"), "ann")
        assert run(ctx, "catalog check").ok
        (tmp_path / "m1.onnx").unlink()
        (tmp_path / "d.npz").unlink()
        r = run(ctx, "catalog check --json")
        assert not r.ok and sorted(p["ref"] for p in r.data["dangling"]) == ["d", "m1:1"]
        r = run(ctx, "catalog check --repair")
        assert r.ok, r.text
        assert {x["name"] for x in models.list_(conn)} == {"m0", "m2"}
        assert datasets.list_(conn) == []
        assert run(ctx, "catalog check").ok
    finally:
        ctx.services.close()


def test_what_a_pipeline_registers_is_named_by_it_and_inherits_its_project(home, tmp_path,
                                                                           monkeypatch):
    """No ``register:``: the model is ``PIPELINE-STEP`` (not the script's file name), in the
    pipeline's project, with the exact TensorFlow of the runtime the job ran in."""
    ctx = Context(config=load_config({"TFDESK_HOME": str(home)}), owner="ann")
    conn = open_db(ctx.config.state_path)
    try:
        monkeypatch.chdir(tmp_path)
        (tmp_path / "p.yaml").write_text(
            f'name: mnist\nsteps:\n  - name: train\n    kind: train\n'
            f'    with: {{script: step.py, args: [ok, "{tmp_path / "gate"}"]}}\n')
        assert run(ctx, "projects add vision").ok
        assert run(ctx, "pipelines add - p.yaml --project vision").ok
        r = run(ctx, "pipeline run mnist")
        assert r.ok, r.text
        got = models.get(conn, "mnist-train")
        job = ctx.services.engine.get(got["job_id"])
        assert got["project"] == "vision"
        runtime = job.spec.runtime
        assert got["tf_version"] == runtime.tf_version and got["tf_version"].count(".") == 2
    finally:
        conn.close()
        ctx.services.close()
