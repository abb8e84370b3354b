"""Block Kit rendering limits and how serve picks its mode."""
from __future__ import annotations

import pytest

from bot.config import load_config
from bot.handlers.serve import ServeError, choose_mode
from bot.reply import Reply
from bot.reply import JobRef
from bot.slack.blocks import render_reply


def test_long_answers_fit_slacks_limits():
    text = "\n".join(f"  line {i} <tf.Tensor> & ```" for i in range(5000))
    msg = render_reply(Reply(text=text), user="U1", line="ask x")
    assert len(msg["blocks"]) <= 50
    for b in msg["blocks"]:
        if b["type"] == "section":
            assert len(b["text"]["text"]) <= 3000
    body = "".join(b["text"]["text"] for b in msg["blocks"] if b["type"] == "section")
    assert "&lt;tf.Tensor&gt; &amp;" in body and "<tf.Tensor>" not in body
    assert len(msg["text"]) <= 300


def test_running_job_answer_gets_cancel_and_logs_buttons():
    job = {"id": "j-1", "state": "running", "kind": "train", "backend": "local"}
    msg = render_reply(Reply(text="started", data=job, job=JobRef("j-1", "running")))
    ids = [e["action_id"] for b in msg["blocks"] if b["type"] == "actions"
           for e in b["elements"]]
    assert ids == ["tf_job_cancel", "tf_job_logs"]
    done = render_reply(Reply(text="done", data={**job, "state": "succeeded"},
                              job=JobRef("j-1", "succeeded")))
    assert not [b for b in done["blocks"] if b["type"] == "actions"]


@pytest.mark.parametrize("env,mode", [
    ({}, "console"),
    ({"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_APP_TOKEN": "xapp-1"}, "socket"),
    ({"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_SIGNING_SECRET": "s"}, "http"),
    ({"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_SIGNING_SECRET": "s", "SLACK_APP_TOKEN": "xapp-1"},
     "socket"),
])
def test_serve_mode(tmp_path, env, mode):
    assert choose_mode(load_config({"TFDESK_HOME": str(tmp_path), **env})) == mode


@pytest.mark.parametrize("env,words", [
    ({"SLACK_BOT_TOKEN": "xoxb-1"}, "neither SLACK_APP_TOKEN"),
    ({"SLACK_SIGNING_SECRET": "s"}, "SLACK_BOT_TOKEN is not"),
    ({"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_APP_TOKEN": "xoxb-2"}, "app-level token"),
])
def test_serve_half_configured_says_what_is_missing(tmp_path, env, words):
    with pytest.raises(ServeError, match=words):
        choose_mode(load_config({"TFDESK_HOME": str(tmp_path), **env}))


def test_serve_without_slack_starts_the_console(tmp_path):
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-m", "bot.cli", "serve"], input="help\nquit\n",
                         capture_output=True, text=True, timeout=120,
                         env={"TFDESK_HOME": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    assert "tfdesk console" in out.stdout and "Commands" in out.stdout
