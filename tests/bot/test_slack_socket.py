"""Socket Mode: Bolt's built-in client against a local WebSocket stand-in for Slack.

The app asks the Web API stub (``apps.connections.open``, with the app token) for the socket
URL, connects, and acks each envelope over the socket; answers go through the Web API as in
HTTP mode. No signing secret is needed in this mode."""
from __future__ import annotations

import time
from urllib.parse import parse_qsl

import pytest
from tests.slack_stub import (APP_TOKEN, BOT_TOKEN, SlackStub, SocketModeStub, command_body,
                        message_text)

from bot.config import load_config
from bot.slack.runtime import Runtime


@pytest.fixture
def socket_env(tmp_path):
    stub = SlackStub().start()
    sock = SocketModeStub(stub)
    home = tmp_path / "home"
    home.mkdir()
    config = load_config({"TFDESK_HOME": str(home), "SLACK_BOT_TOKEN": BOT_TOKEN,
                          "SLACK_APP_TOKEN": APP_TOKEN, "SLACK_API_URL": stub.api_url})
    runtime = Runtime(config, mode="socket", min_update_interval=0.05, poll_interval=0.2)
    runtime.start_background()
    runtime.start_socket_mode()
    yield stub, sock, runtime
    runtime.stop()
    sock.stop()
    stub.stop()


def test_slash_command_over_socket_mode_is_acked_and_answered(socket_env):
    stub, sock, _ = socket_env
    payload = dict(parse_qsl(command_body("help convert", user="U1", channel="C1")))
    ack = sock.send("slash_commands", payload)
    assert ack["latency_ms"] < 3000
    assert [c["args"].get("token") or c["auth"] for c in stub.calls_to("apps.connections.open")
            ] == [f"Bearer {APP_TOKEN}"]
    answer = stub.wait_for("chat.postMessage", lambda c: c["args"]["channel"] == "C1")[0]
    assert "convert" in message_text(answer["args"])
    assert answer["auth"] == f"Bearer {BOT_TOKEN}"


def test_event_redelivered_over_socket_mode_does_work_once(socket_env):
    stub, sock, _ = socket_env
    event = {"type": "app_mention", "user": "U1", "channel": "C1", "ts": "1700000000.000001",
             "text": "<@UBOT> help"}
    payload = {"token": "legacy", "team_id": "T1", "api_app_id": "A1", "type": "event_callback",
               "event": event, "event_id": "EvSOCKET1", "event_time": int(time.time())}
    sock.send("events_api", payload)
    sock.send("events_api", payload, retry_attempt=1)  # Slack redelivers: acked, not redone
    call = stub.wait_for("chat.postMessage")[0]
    assert call["args"]["thread_ts"] == "1700000000.000001"
    time.sleep(0.5)
    assert len(stub.calls_to("chat.postMessage")) == 1
