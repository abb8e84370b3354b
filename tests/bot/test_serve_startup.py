"""`tfdesk serve` when Slack refuses the bot token or cannot be reached: a plain set-up error
(exit 1, what to check), not a traceback. The real process against the Slack stub over HTTP."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from tests.slack_stub import SIGNING_SECRET, SlackStub

REPO = Path(__file__).resolve().parents[2]


def serve(tmp_path, token: str, api_url: str) -> subprocess.CompletedProcess:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "TFDESK_HOME": str(home), "SLACK_BOT_TOKEN": token,
           "SLACK_SIGNING_SECRET": SIGNING_SECRET, "SLACK_API_URL": api_url,
           "PYTHONPATH": str(REPO)}
    env.pop("SLACK_APP_TOKEN", None)
    return subprocess.run([sys.executable, "-m", "bot.cli", "serve", "--host", "127.0.0.1",
                           "--port", str(port)], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL)


def test_a_token_slack_rejects_is_a_set_up_error(tmp_path):
    stub = SlackStub().start()
    try:
        proc = serve(tmp_path, "xoxb-not-the-right-one", stub.api_url)
    finally:
        stub.stop()
    assert proc.returncode == 1
    assert "Traceback" not in proc.stdout + proc.stderr
    assert "bot token check (auth.test)" in proc.stderr
    assert "invalid_auth" in proc.stderr
    assert "SLACK_BOT_TOKEN" in proc.stderr


def test_slack_out_of_reach_is_a_set_up_error(tmp_path):
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    proc = serve(tmp_path, "xoxb-anything", f"http://127.0.0.1:{closed}/api/")
    assert proc.returncode == 1
    assert "Traceback" not in proc.stdout + proc.stderr
    assert "bot token check (auth.test)" in proc.stderr
    assert "network access to slack.com" in proc.stderr


if __name__ == "__main__":
    pytest.main([__file__])
