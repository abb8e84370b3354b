"""Ownership beyond cancel and delete, through dispatch with a Slack member as the asker: a new
version of someone else's model or component, a pipeline that registers into someone else's
model, code planted in a component, and pipeline runs counting against the running-job limit."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.config import load_config
from bot.context import Context
from bot.dispatch import authorize, run_line
from bot.permissions import Actor, member
from bot.registry import COMMANDS

SLACK = {"kind": "slack", "channel": "C1", "thread_ts": "1.0"}


@pytest.fixture
def home(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    return home


def upload(home, user, key, name, text):
    folder = home / "slack" / "uploads" / key
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text, encoding="utf-8")
    (folder / "upload.json").write_text(json.dumps({"name": name, "user": user}))
    return folder / name


def ctx_of(home, actor):
    reply_to = SLACK if actor.remote else {"kind": "terminal"}
    return Context(load_config({"TFDESK_HOME": str(home)}), actor=actor, reply_to=reply_to)


def run(ctx, line):
    return run_line(ctx, line)[1]


def test_a_new_version_of_someone_elses_model_or_component_is_refused(home, tmp_path):
    sm = tmp_path / "sm"
    sm.mkdir()
    (sm / "saved_model.pb").write_bytes(b"pb")
    owner = ctx_of(home, Actor("UOWNER"))
    assert run(owner, f"models add cnn {sm}").ok
    assert run(owner, "components add hvd --kind train --param workers=2").ok
    mine = upload(home, "UCOMP", "F1", "model.keras", "not really keras")
    comp = ctx_of(home, member("UCOMP", "compute"))
    r = run(comp, "models add cnn F1/model.keras --format keras")
    assert not r.ok and "only its owner or a tfdesk admin may add a version to it" in r.text
    r = run(comp, "components add hvd --kind train --param workers=64")
    assert not r.ok and "belongs to UOWNER" in r.text
    assert [m["ref"] for m in run(owner, "models list --json").data["models"]] == ["cnn:1"]
    assert run(owner, "components show hvd").data["component"]["params"] == {"workers": 2}
    # Their own names are theirs to version; an admin may version anyone's.
    assert run(comp, "models add mine F1/model.keras --format keras").ok
    assert run(comp, "models add mine F1/model.keras --format keras").ok
    admin = ctx_of(home, member("UADMIN", "admin"))
    assert run(admin, "components add hvd --kind train --param workers=4").ok
    assert mine.is_file()


def test_inline_code_and_tfdesk_settings_cannot_be_planted_in_a_component(home):
    none = ctx_of(home, member("UNONE"))
    r = run(none, "components add evil --kind train --param script_source=import_os")
    assert not r.ok and "inline code" in r.text
    r = run(ctx_of(home, member("UCOMP", "compute")),
            "components add tuned --kind convert-model --param settings=x")
    assert not r.ok and "settings" in r.text
    r = run(none, "components add hard --kind train --param script=/etc/passwd")
    assert not r.ok and "not a file shared with tfdesk" in r.text
    assert run(ctx_of(home, Actor("local")), "components list").data["components"] == []


def test_a_pipeline_cannot_register_into_someone_elses_model(home, tmp_path):
    sm = tmp_path / "sm"
    sm.mkdir()
    (sm / "saved_model.pb").write_bytes(b"pb")
    assert run(ctx_of(home, Actor("UOWNER")), f"models add prod {sm}").ok
    upload(home, "UCOMP", "F1", "train.py", "print(1)\n")
    upload(home, "UCOMP", "F2", "p.yaml",
           "params: {script: train.py}\nsteps:\n  - name: t\n    kind: train\n"
           "    register: prod\n    with: {script: '${params.script}'}\n")
    r = run(ctx_of(home, member("UCOMP", "compute")), "pipelines add takeover F2/p.yaml")
    assert not r.ok and "belongs to UOWNER" in r.text
    assert run(ctx_of(home, Actor("local")), "pipelines list").data["pipelines"] == []


def test_a_running_pipeline_run_counts_against_the_limit(home):
    from catalog import runs
    from catalog.store import open_db
    ctx = ctx_of(home, member("UCOMP", "compute", max_running=1))
    assert authorize(ctx, COMMANDS["train"]) is None
    assert run(ctx_of(home, Actor("UCOMP")), "projects add p").ok  # the catalog exists
    conn = open_db(ctx.config.state_path)
    with conn:
        conn.execute("INSERT INTO catalog_runs (id, pipeline, definition, state, owner, "
                     "reply_to, driver, created) VALUES ('run-1', 'p', '{}', 'running', "
                     "'UCOMP', '{}', ?, 0)", (json.dumps(runs._me()),))
    assert "limit is 1" in authorize(ctx, COMMANDS["pipeline run"])
    assert authorize(ctx_of(home, member("UOTHER", "compute", max_running=1)),
                     COMMANDS["train"]) is None
    with conn:  # a run whose tfdesk is gone holds nothing
        conn.execute("UPDATE catalog_runs SET driver = ?",
                     (json.dumps({"pid": 1, "start": -1, "host": runs._me()["host"]}),))
    assert authorize(ctx, COMMANDS["train"]) is None
    conn.close()


def test_a_name_is_a_catalog_model_never_a_file_beside_the_tfdesk_process(home, tmp_path,
                                                                         monkeypatch):
    from bot.dispatch import resolve_paths
    from bot.paths import PathRefused
    sm = tmp_path / "sm"
    sm.mkdir()
    (sm / "saved_model.pb").write_bytes(b"pb")
    operator = ctx_of(home, Actor("UOWNER"))
    copy = run(operator, f"models add cnn {sm}").data["model"]["artifact_uri"]
    monkeypatch.chdir(tmp_path)  # where tfdesk runs: "sm" and "~" name its files there
    comp = ctx_of(home, member("UCOMP", "compute"))
    for name in ("sm", "~", "cnn:7", "../sm"):
        with pytest.raises(PathRefused):
            resolve_paths(comp, COMMANDS["infer"], {"model": name})
    assert resolve_paths(comp, COMMANDS["infer"], {"model": "cnn"})["model"] == copy
    assert resolve_paths(comp, COMMANDS["evaluate"], {"model": "cnn:1", "data": None,
                                                      "against": None})["model"] == copy
    # At the terminal, a file that exists wins (the handler gets a private copy of it, made
    # through the file gate); otherwise the catalog's name.
    got = Path(resolve_paths(operator, COMMANDS["infer"], {"model": "sm"})["model"])
    assert got.name == "sm" and got.is_relative_to(home / "gate")
    assert (got / "saved_model.pb").read_bytes() == b"pb"
    assert resolve_paths(operator, COMMANDS["infer"], {"model": "cnn:1"})["model"] == copy


def test_resuming_a_pipeline_reuses_only_your_own_runs_outputs(home):
    from catalog import runs
    from catalog.errors import InvalidInput
    from catalog.store import open_db
    operator = ctx_of(home, Actor("UOWNER"))
    upload(home, "UOWNER", "F0", "p.yaml", "steps:\n  - {name: a, kind: convert-script, with: "
           "{script: /x.py}}\n  - {name: b, kind: train, with: {script: '${steps.a.outputs."
           "script}'}}\n")
    assert run(operator, f"pipelines add two {home}/slack/uploads/F0/p.yaml").ok
    conn = open_db(operator.config.state_path)
    theirs = runs.start(conn, "two", "UOWNER")
    with conn:
        conn.execute("UPDATE catalog_run_steps SET state = 'succeeded', outputs = ? WHERE "
                     "run_id = ? AND idx = 0", (json.dumps({"script": "/x.py"}), theirs))
    r = run(ctx_of(home, member("UCOMP", "compute")), "pipeline run two --from b")
    assert not r.ok and "no earlier run of yours" in r.text
    with pytest.raises(InvalidInput):
        runs.start(conn, "two", "UCOMP", from_step="b", reuse_own_only=True)
    mine = runs.start(conn, "two", "UADMIN", from_step="b")  # an admin's: anyone's run
    assert runs.status(conn, mine)["resumed_from"] == theirs
    conn.close()


def test_slack_roles_come_from_the_slack_section(home):
    from bot.slack.access import Gate, Policy
    from bot.slack.store import SlackStore
    policy = Policy.from_section({"compute_users": ["UC"], "compute_channels": "CTRAIN",
                                  "admin_users": ["UA"], "max_running_jobs_per_user": 3})
    gate = Gate(policy, SlackStore(home / "state.sqlite"))
    assert gate.actor("UX", "C1").permissions == {"read", "own"}
    assert "compute" in gate.actor("UX", "CTRAIN").permissions  # in that channel only
    assert "compute" in gate.actor("UC", "C1").permissions
    admin = gate.actor("UA", "C1")
    assert admin.is_admin and admin.remote and admin.max_running == 3
    assert not gate.actor("UC", "C1").is_admin


def test_what_a_catalog_entry_points_at_is_a_kept_copy_and_only_that(home):
    """From Slack, `datasets add` and `models add --in-place` register the file gate's copy,
    kept with the entry; `models add` (copied into the model store) keeps no second copy, and
    a refused command leaves none."""
    upload(home, "UCOMP", "FDATA", "data.keras", "PK\x03\x04 model")
    comp = ctx_of(home, member("UCOMP", "compute"))
    kept = home / "catalog" / "files"
    listed = lambda: sorted(p.name for p in kept.iterdir()) if kept.exists() else []  # noqa: E731
    reply = run(comp, "models add copied FDATA --format keras")
    assert reply.ok, reply.text
    assert listed() == []
    reply = run(comp, "models add inplace FDATA --in-place --format keras")
    assert reply.ok and len(listed()) == 1, reply.text
    uri = reply.data["model"]["artifact_uri"]
    assert uri.startswith(str(kept)) and Path(uri).read_text() == "PK\x03\x04 model"
    reply = run(comp, "datasets add d FDATA/data.keras --format other")
    assert reply.ok and len(listed()) == 2, reply.text
    before = sorted((home / "gate").rglob("*")) if (home / "gate").exists() else []
    assert not run(comp, "pipelines add p FDATA/data.keras").ok  # not a pipeline: refused
    after = sorted((home / "gate").rglob("*")) if (home / "gate").exists() else []
    assert after == before
