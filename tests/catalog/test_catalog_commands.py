"""The catalog commands through the real parser and dispatcher (what the terminal and Slack
run), against a temporary TFDESK_HOME."""
import json

import pytest

from bot.config import load_config
from bot.context import Context
from bot.permissions import Actor
from bot.dispatch import run_line


@pytest.fixture
def ctx(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / "tfdesk.toml").write_text('[runner]\npython = "/runner/python"\n')
    config = load_config({"TFDESK_HOME": str(home)})
    c = Context(config=config, owner="ann")
    yield c
    c.services.close()


def run(ctx, line):
    command, reply = run_line(ctx, line)
    return reply


def test_add_list_show_delete_with_filters_and_json(ctx, tmp_path):
    data = tmp_path / "d.csv"
    data.write_text("a\n")
    assert run(ctx, "projects add vision -d 'image work'").ok
    r = run(ctx, f"datasets add mnist {data} --tag vision,small -p vision")
    assert r.ok and r.data["dataset"]["tags"] == ["small", "vision"]
    r = run(ctx, f"datasets add mnist {data}")
    assert not r.ok and "already exists" in r.text
    r = run(ctx, f"datasets add 'no good' {data}")
    assert not r.ok and "not valid" in r.text
    r = run(ctx, "datasets list --project vision --tag small --json")
    assert [d["name"] for d in r.data["datasets"]] == ["mnist"]
    assert "mnist" in run(ctx, "datasets list").text
    assert "no datasets match" in run(ctx, "datasets list --owner bob").text
    sm = tmp_path / "sm"
    sm.mkdir()
    (sm / "saved_model.pb").write_bytes(b"pb")
    r = run(ctx, f"models add cnn {sm} --dataset mnist --tf-version 2.15.1")
    assert r.ok and r.data["model"]["ref"] == "cnn:1"
    copy = r.data["model"]["artifact_uri"]
    assert copy.startswith(str(ctx.config.home))
    assert run(ctx, "models show cnn:1").data["model"]["dataset"] == "mnist"
    r = run(ctx, "models delete cnn")
    assert r.ok and r.data["artifacts_removed"] == [copy] and sm.exists()
    r = run(ctx, "models show cnn")
    assert not r.ok and "no model 'cnn'" in r.text
    r = run(ctx, "environments list --json")
    by_name = {e["name"]: e for e in r.data["environments"]}
    assert by_name["runner"]["python"] == "/runner/python" and by_name["runner"]["default"]
    assert run(ctx, "environments match --tf 2.15 --horovod").data["environment"]["name"] == "runner"
    r = run(ctx, "components add hvd --kind train --param workers=2 --param convert=horovod")
    assert r.data["component"]["params"] == {"workers": 2, "convert": "horovod"}
    r = run(ctx, "components add hvd --kind train --param oops")
    assert not r.ok and "KEY=VALUE" in r.text


def test_pipelines_dependants_status_and_export_import(ctx, tmp_path):
    data = tmp_path / "d.csv"
    data.write_text("a\n")
    run(ctx, f"datasets add mnist {data}")
    yml = tmp_path / "p.yaml"
    yml.write_text("name: nightly\nsteps:\n  - name: train\n    kind: train\n"
                   "    with: {script_path: x.py, args: ['${datasets.mnist}']}\n")
    r = run(ctx, f"pipelines add - {yml}")
    assert r.ok and r.data["pipeline"]["name"] == "nightly"
    r = run(ctx, "datasets delete mnist")
    assert not r.ok and "pipeline nightly" in r.text and "--force" in r.text
    bad = tmp_path / "bad.yaml"
    bad.write_text("steps:\n  - {name: a, kind: train, extra: 1}\n")
    r = run(ctx, f"pipelines add bad {bad}")
    assert not r.ok and "'extra' was unexpected" in r.text
    r = run(ctx, "pipeline status run-nope")
    assert not r.ok and "no pipeline run 'run-nope'" in r.text
    r = run(ctx, "pipeline run nightly --from nowhere")
    assert not r.ok and "no step 'nowhere'" in r.text

    out = tmp_path / "backup.json"
    r = run(ctx, f"catalog export {out}")
    assert r.ok and r.data["counts"]["pipelines"] == 1
    assert json.loads(out.read_text())["format"] == "tfdesk-catalog"
    other = Context(config=load_config({"TFDESK_HOME": str(tmp_path / "other")}), owner="bob")
    r = run(other, f"catalog import {out}")
    assert r.ok, r.text
    assert run(other, "pipelines show nightly").data["pipeline"]["uses"] == ["dataset mnist"]
    r = run(other, f"catalog import {out}")
    assert not r.ok and "nothing was imported" in r.text
    other.services.close()


def test_channel_default_project(ctx, tmp_path):
    data = tmp_path / "d.csv"
    data.write_text("a\n")
    run(ctx, "projects add vision")
    assert not run(ctx, "projects use vision").ok  # no channel in a terminal
    # The operator, answering in a channel (a member's paths are tested in test_security_*).
    slack = Context(config=ctx.config, actor=Actor("U1"),
                    reply_to={"kind": "slack", "channel": "C42", "thread_ts": "1.0"})
    assert run(slack, "projects use vision").ok
    r = run(slack, f"datasets add mnist {data}")
    assert r.data["dataset"]["project"] == "vision"
    r = run(ctx, "projects delete vision")
    assert not r.ok and "dataset mnist" in r.text
    slack.services.close()
