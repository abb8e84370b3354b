"""The Slack HTTP endpoint against hostile clients, over real sockets to the real server
(uvicorn behind Bolt's adapter): stalled connections, bad lengths, oversize bodies, downloads
pointed at foreign hosts, secrets in logs."""
from __future__ import annotations

import concurrent.futures as cf
import logging
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest
from tests.slack_stub import (BOT_TOKEN, SIGNING_SECRET, SlackEnv, command_body,  # noqa: F401
                        message_text, sign, slack)


def raw(port: int, data: bytes, timeout: float = 5.0) -> bytes:
    """Send ``data`` as is and read until the server closes."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(data)
        out = b""
        while True:
            try:
                chunk = s.recv(65536)
            except (socket.timeout, ConnectionResetError):
                break
            if not chunk:
                break
            out += chunk
        return out


def stalled(port: int, n: int) -> list[socket.socket]:
    """``n`` connections that begin a request and never finish its headers."""
    out = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(b"POST /slack/events HTTP/1.1\r\nHost: x\r\nContent-Type: text/pl")
        out.append(s)
    return out


def test_idle_connections_do_not_starve_health_or_acks(slack):
    held = stalled(slack.port, 200)
    try:
        started = time.monotonic()
        assert httpx.get(f"http://127.0.0.1:{slack.port}/healthz", timeout=5).json() == \
            {"ok": True}
        assert time.monotonic() - started < 1
        with cf.ThreadPoolExecutor(20) as pool:
            acks = list(pool.map(lambda i: slack.command("help", user=f"U{i}"), range(20)))
        assert [r.status_code for r in acks] == [200] * 20
        slack.stub.wait_for("chat.postMessage", lambda c: "<@U19>" in message_text(c["args"]),
                            timeout=30)
    finally:
        for s in held:
            s.close()


def test_headers_never_finished_are_cut_off(tmp_path):
    env = SlackEnv(tmp_path, "[slack]\nheader_timeout_s = 1\n")
    try:
        s = stalled(env.port, 1)[0]
        s.settimeout(10)
        started = time.monotonic()
        assert s.recv(100) == b""  # closed by the server
        assert time.monotonic() - started < 5
        s.close()
        # A complete request on a fresh connection is still served.
        assert httpx.get(f"http://127.0.0.1:{env.port}/healthz").status_code == 200
    finally:
        env.close()


@pytest.mark.parametrize("length", ["-1", "-5000", "abc", "1e3", "+10"])
def test_invalid_content_length_is_400(slack, length):
    body = command_body("help")
    req = (f"POST /slack/events HTTP/1.1\r\nHost: x\r\nContent-Length: {length}\r\n"
           "Content-Type: application/x-www-form-urlencoded\r\n\r\n").encode() + body.encode()
    answer = raw(slack.port, req)
    assert answer.startswith(b"HTTP/1.1 400"), answer[:200]
    time.sleep(0.3)
    assert not slack.stub.calls_to("chat.postMessage")


def test_headers_past_their_cap_are_cut_off(slack):
    req = b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + b"X-Pad: " + b"a" * 40000 + b"\r\n\r\n"
    answer = raw(slack.port, req)
    assert answer == b"" or answer.startswith((b"HTTP/1.1 431", b"HTTP/1.1 400")), answer[:100]
    assert httpx.get(f"http://127.0.0.1:{slack.port}/healthz").status_code == 200


def test_pure_python_parser_has_the_same_limits(slack):
    """h11 (uvicorn's own dependency) serves when httptools is not installed."""
    from bot.slack.server import HttpServer, Limits, SlackEndpoint, _H11
    limits = Limits(header_timeout_s=1)
    protocol = type("P", (_H11,), {"header_timeout": 1, "max_header_bytes": 16384})
    runtime = slack.runtime
    server = HttpServer(SlackEndpoint(runtime.bot.app, runtime.bot.ack_first, runtime.bot.pool,
                                      SIGNING_SECRET, limits), "127.0.0.1", 0, limits, protocol)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        port = server.server_port
        held = stalled(port, 50)
        assert httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5).status_code == 200
        req = (b"POST /slack/events HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n")
        assert raw(port, req).startswith(b"HTTP/1.1 400")
        body = command_body("help", user="UH11")
        resp = httpx.post(f"http://127.0.0.1:{port}/slack/events", content=body,
                          headers={"Content-Type": "application/x-www-form-urlencoded",
                                   **sign(body)})
        assert resp.status_code == 200
        held[0].settimeout(5)
        assert held[0].recv(10) == b""  # the header deadline closed it
        for s in held:
            s.close()
    finally:
        server.shutdown()
        server.server_close()


def test_body_over_one_mib_is_413_declared_or_chunked(slack):
    big = b"x" * (1024 * 1024 + 1)
    declared = (b"POST /slack/events HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n"
                % len(big))
    assert raw(slack.port, declared).startswith(b"HTTP/1.1 413")  # refused before the body

    def chunks():
        for i in range(0, len(big), 65536):
            yield big[i:i + 65536]
    resp = httpx.post(slack.endpoint, content=chunks(), timeout=10)
    assert resp.status_code == 413


def test_slow_body_gets_408(tmp_path):
    env = SlackEnv(tmp_path, "[slack]\nbody_timeout_s = 1\n")
    try:
        req = b"POST /slack/events HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nab"
        assert raw(env.port, req, timeout=10).startswith(b"HTTP/1.1 408")
    finally:
        env.close()


def test_bad_limit_setting_is_a_clear_error(tmp_path):
    from bot.slack.server import Limits, ServerError
    with pytest.raises(ServerError, match="header_timeout_s must be positive"):
        Limits.from_section({"header_timeout_s": -1})


class _Foreign:
    """Somebody else's web server: records what it is sent."""

    def __init__(self):
        self.seen: list[dict] = []
        seen = self.seen

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802
                seen.append({"path": self.path, "auth": self.headers.get("Authorization")})
                body = b"print('hi')\n" * 10
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *a):
                pass
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_port}"

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.parametrize("where", ["foreign", "foreign-https"])
def test_download_to_a_foreign_host_is_refused_without_the_token(slack, where):
    foreign = _Foreign()
    try:
        url = (foreign.url + "/steal/train.py" if where == "foreign"
               else "https://files.slack.com.evil.example/train.py")
        f = {"id": "FEVIL1", "name": "train.py", "size": 120, "filetype": "python",
             "url_private_download": url, "url_private": url}
        slack.event({"type": "app_mention", "user": "UADMIN", "channel": "C1",
                     "ts": "1700000000.000101", "text": "<@UBOT> convert this", "files": [f]})
        call = slack.stub.wait_for("chat.update", timeout=20) or []
        texts = [message_text(c["args"]) for c in slack.stub.calls_to("chat.update")
                 + slack.stub.calls_to("chat.postMessage")
                 + slack.stub.calls_to("chat.postEphemeral")]
        assert call and any("Slack's file host" in t for t in texts), texts
        assert foreign.seen == []  # nothing at all was sent there, token or not
        assert not list((slack.home / "uploads").rglob("train.py"))
    finally:
        foreign.close()


def test_download_from_slack_file_host_still_works(slack):
    f = slack.stub.add_file("train.py", b"print('hello')\n" * 4)
    slack.event({"type": "app_mention", "user": "UADMIN", "channel": "C1",
                 "ts": "1700000000.000102", "text": "<@UBOT> convert", "files": [f]})
    dl = slack.stub.wait_for("file.download", timeout=20)[0]
    assert dl["auth"] == f"Bearer {BOT_TOKEN}"


def test_signing_secret_and_tracebacks_are_redacted(slack, caplog):
    caplog.set_level(logging.DEBUG)
    log = logging.getLogger("bot.slack.test")
    log.warning("secret is %s", SIGNING_SECRET)
    try:
        raise RuntimeError(f"request failed with Authorization: Bearer {BOT_TOKEN} "
                           f"and {SIGNING_SECRET}")
    except RuntimeError:
        log.exception("it broke")
    text = caplog.text
    assert "it broke" in text and "RuntimeError" in text  # the traceback is still there
    assert BOT_TOKEN not in text and SIGNING_SECRET not in text
    for handler in logging.getLogger().handlers + [caplog.handler]:
        for record in caplog.records:
            assert BOT_TOKEN not in handler.format(record)


def test_serve_binds_where_configured_and_says_who_jobs_run_as(tmp_path):
    """The real ``tfdesk serve`` process: [slack] bind, the start-up log, a clean stop."""
    import os
    import signal
    import subprocess
    import sys
    from pathlib import Path

    from tests.slack_stub import SlackStub
    stub = SlackStub().start()
    home = tmp_path / "home"
    home.mkdir()
    (home / "tfdesk.toml").write_text('[slack]\nbind = "127.0.0.1"\n')
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    repo = Path(__file__).resolve().parents[2]
    env = {**os.environ, "TFDESK_HOME": str(home), "SLACK_BOT_TOKEN": BOT_TOKEN,
           "SLACK_SIGNING_SECRET": SIGNING_SECRET, "SLACK_API_URL": stub.api_url,
           "PYTHONPATH": str(repo)}
    env.pop("SLACK_APP_TOKEN", None)
    proc = subprocess.Popen([sys.executable, "-m", "bot.cli", "serve", "--port", str(port)],
                            cwd=repo, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        else:
            pytest.fail("tfdesk serve did not come up")
        body = command_body("help", user="USERVE")
        resp = httpx.post(f"http://127.0.0.1:{port}/slack/events", content=body,
                          headers={"Content-Type": "application/x-www-form-urlencoded",
                                   **sign(body)})
        assert resp.status_code == 200
        stub.wait_for("chat.postMessage", timeout=30)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            out, _ = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
        stub.stop()
    assert "http://127.0.0.1:%d/slack/events" % port in out
    assert "local jobs run" in out and " as " in out  # who they run as (sandbox or not)
    assert proc.returncode == 0 and "tfdesk stopped" in out  # SIGTERM stops it cleanly
    assert BOT_TOKEN not in out and SIGNING_SECRET not in out


def test_file_hosts_are_slack_the_api_host_and_the_configured_ones():
    from bot.slack.uploads import UploadError, check_download_url, file_hosts
    allowed = file_hosts("http://127.0.0.1:8123/api/", ["files.slack-gov.com"])
    for url in ("https://files.slack.com/files-pri/T1-F1/download/a.py",
                "http://127.0.0.1:8123/files-pri/F1/download/a.py",
                "https://files.slack-gov.com/files-pri/T1-F1/a.py"):
        check_download_url(url, "a.py", allowed)
    for url in ("http://files.slack.com/files-pri/a.py",      # not HTTPS
                "https://files.slack.com:8443/a.py",           # another port
                "http://127.0.0.1:9999/a.py",                  # the API host, another port
                "https://files.slack.com.evil.example/a.py",
                "https://evil.example/files.slack.com/a.py",
                "file:///etc/passwd"):
        with pytest.raises(UploadError, match="Slack's file host"):
            check_download_url(url, "a.py", allowed)
