"""A training's model enters the catalog under a name someone chose: `train --register NAME`
(with the project given or the channel's), or its pipeline and step; a plain `train` keeps its
model as the job's artifact and says which command registers it. Generated jobs for the naming
rule (catalog/outputs.py); the terminal's `train` end to end for the command."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from catalog import projects
from catalog.outputs import FinishedJob, register_job_outputs
from catalog.store import open_db

NAMES = st.from_regex(r"[a-z][a-z0-9-]{0,10}", fullmatch=True)
SAVES = "import os\nos.makedirs('export', exist_ok=True)\n" \
        "open('export/saved_model.pb', 'wb').write(b'pb')\n"


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(register=st.none() | NAMES, in_pipeline=st.booleans(), script=NAMES)
def test_a_training_is_registered_only_under_a_chosen_name(tmp_path, register, in_pipeline,
                                                           script):
    conn = open_db(tmp_path / f"s-{register}-{in_pipeline}-{script}.db")
    model = tmp_path / "job" / "export"
    model.mkdir(parents=True, exist_ok=True)
    (model / "saved_model.pb").write_bytes(b"pb")
    run = None
    if in_pipeline:
        run = "r-1"
        conn.execute("INSERT INTO catalog_runs (id, pipeline, definition, state, owner, created)"
                     " VALUES (?, 'flow', '{}', 'running', 'ana', 0)", (run,))
    job = FinishedJob("j-1", "train", "ana", source=f"{script}.py", register=register,
                      pipeline_run=run, step="fit" if run else None)
    made = register_job_outputs(conn, job, [{"name": "saved_model", "path": str(model)}],
                                name=register)
    if register:
        assert [m["name"] for m in made] == [register]
    elif in_pipeline:
        assert [m["name"] for m in made] == ["flow-fit"]
    else:
        assert made == []  # never named after the script
    conn.close()


@pytest.fixture
def ctx(tmp_path, monkeypatch):
    from bot.config import load_config
    from bot.context import Context
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("TFDESK_HOME", str(home))
    (home / "tfdesk.toml").write_text(f'[runner]\npython = "{sys.executable}"\n')
    context = Context(load_config())
    yield context
    context.services.close()


def test_train_registers_with_register_and_otherwise_says_how(ctx, tmp_path):
    from bot.dispatch import run_line
    script = tmp_path / "train.py"
    script.write_text(SAVES)
    projects.add(ctx.services.catalog, "vision", "local")
    ok, reply = run_line(ctx, f"train {script} --register mnist-cnn --project vision --wait")
    assert reply.ok, reply.text
    assert "registered as mnist-cnn" in reply.text
    row = ctx.services.catalog.execute(
        "SELECT m.name, m.version, p.name AS project FROM catalog_models m "
        "JOIN catalog_projects p ON p.id = m.project_id").fetchall()
    assert [tuple(r) for r in row] == [("mnist-cnn", 1, "vision")]

    _, plain = run_line(ctx, f"train {script} --wait")
    assert plain.ok, plain.text
    assert "not in the catalog: `tfdesk models add NAME " in plain.text
    assert ctx.services.catalog.execute("SELECT count(*) FROM catalog_models").fetchone()[0] == 1
    path = plain.data["model_note"].split("models add NAME ")[1].split("`")[0]
    _, added = run_line(ctx, f"models add mnist-cnn {path}")  # the command it gave works
    assert added.ok, added.text

    for bad, why in ((f"train {script} --register 'no spaces'", "model name"),
                     (f"train {script} --register m --project nope", "no project 'nope'")):
        _, refused = run_line(ctx, bad)
        assert not refused.ok and why in refused.text, refused.text
    assert len(ctx.services.engine.list()) == 2  # refused before any job
