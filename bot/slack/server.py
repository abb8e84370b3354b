"""Running the app: the HTTP endpoint (``/slack/events`` and ``/healthz``) or Socket Mode."""
from __future__ import annotations

import json
import logging
import threading
from concurrent.futures import Executor, ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlparse

from slack_bolt import App, BoltRequest
from slack_sdk.signature import SignatureVerifier

from bot.slack.priority import AckFirst

log = logging.getLogger(__name__)

EVENTS_PATH = "/slack/events"
HEALTH_PATH = "/healthz"
MAX_BODY = 1024 * 1024  # Slack's payloads are small; anything bigger is not from Slack


HANDLER_THREADS = 64


def prestart(pool: ThreadPoolExecutor, n: int) -> None:
    """Start a pool's threads now: starting one waits for it to run, and under a burst that
    wait (a hand-over of the interpreter) landed on the ack path of the request starting it."""
    barrier = threading.Barrier(n + 1)
    for _ in range(n):
        pool.submit(barrier.wait)
    barrier.wait()


class _Server(ThreadingHTTPServer):
    """Connections are handled by a fixed, pre-started pool of threads rather than a new
    thread each (see ``prestart``)."""
    daemon_threads = True
    request_queue_size = 256  # bursts of slash commands must not be refused at accept()

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._handlers = ThreadPoolExecutor(HANDLER_THREADS, thread_name_prefix="tfdesk-http")
        prestart(self._handlers, HANDLER_THREADS)

    def process_request(self, request, client_address):
        self._handlers.submit(self.process_request_thread, request, client_address)

    def server_close(self):
        super().server_close()
        self._handlers.shutdown(wait=False, cancel_futures=True)


def is_slash_command(body: bytes, content_type: str) -> bool:
    """A slash command's form post (``command=/tf&...``): its ack is always an empty 200."""
    return content_type.startswith("application/x-www-form-urlencoded") and (
        body.startswith(b"command=") or b"&command=" in body) and b"payload=" not in body


def make_server(app: App, host: str = "0.0.0.0", port: int = 3000,
                ack_first: AckFirst | None = None, pool: Executor | None = None,
                signing_secret: str | None = None) -> ThreadingHTTPServer:
    """The HTTP endpoint. With ``pool`` and ``signing_secret``, a slash command is acked as
    soon as its signature checks out, and Bolt dispatches it in the pool: the ack then costs
    an HMAC instead of Bolt's whole dispatch (about 1.5 ms of interpreter time each, which a
    burst of 200 pays in series). Everything else goes through Bolt in the request thread."""
    inflight = ack_first or AckFirst()
    verifier = SignatureVerifier(signing_secret) if pool is not None and signing_secret else None

    def dispatch_later(raw: bytes, query: str, headers: dict[str, list[str]]) -> None:
        inflight.wait()
        try:  # the request is parsed here too: Bolt's parsing is part of what the ack skips
            resp = app.dispatch(BoltRequest(body=raw.decode("utf-8", errors="replace"),
                                            query=query, headers=headers))
        except Exception:  # noqa: BLE001 - the pool would swallow it silently
            log.exception("dispatching an acked slash command failed")
            return
        if resp.status != 200:
            log.warning("slash command acked early but Bolt answered %s", resp.status)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        timeout = 30  # a client that stalls mid-request frees its thread

        def _send(self, status: int, body: bytes, headers: dict | None = None):
            self.send_response(status)
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):  # noqa: N802
            if urlparse(self.path).path == HEALTH_PATH:
                self._send(200, json.dumps({"ok": True}).encode(),
                           {"Content-Type": "application/json"})
            else:
                self._send(404, b"not found", {"Content-Type": "text/plain"})

        def do_POST(self):  # noqa: N802
            url = urlparse(self.path)
            if url.path != EVENTS_PATH:
                self._send(404, b"not found", {"Content-Type": "text/plain"})
                return
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY:
                self._send(413, b"payload too large", {"Content-Type": "text/plain"})
                return
            with inflight:  # work handed to the pool waits while requests are being acked
                raw = self.rfile.read(length)
                if verifier is not None and is_slash_command(
                        raw, self.headers.get("Content-Type", "")) and \
                        verifier.is_valid_request(raw, self.headers):
                    self._send(200, b"", {"Content-Type": "text/plain;charset=utf-8"})
                    headers = {k.lower(): [v] for k, v in self.headers.items()}
                    pool.submit(dispatch_later, raw, url.query, headers)
                    return
                body = raw.decode("utf-8", errors="replace")
                headers = {k.lower(): [v] for k, v in self.headers.items()}
                resp = app.dispatch(BoltRequest(body=body, query=url.query, headers=headers))
                out = {k: v[0] if isinstance(v, list) and v else v
                       for k, v in resp.headers.items()}
                self._send(resp.status, (resp.body or "").encode("utf-8"), out)

        def log_message(self, fmt, *args):  # access log at DEBUG, never with bodies
            log.debug("%s %s", self.address_string(), fmt % args)

    return _Server((host, port), Handler)


def serve_http(app: App, host: str, port: int, ready: threading.Event | None = None) -> None:
    server = make_server(app, host, port)
    log.info("tfdesk Slack endpoint on http://%s:%d%s", host, server.server_port, EVENTS_PATH)
    if ready:
        ready.set()
    try:
        server.serve_forever()
    finally:
        server.server_close()


def socket_mode_handler(app: App, app_token: str):
    """Bolt's built-in Socket Mode client (no extra dependency); it asks the app's own
    ``WebClient`` (so ``SLACK_API_URL``) for the WebSocket URL."""
    from slack_bolt.adapter.socket_mode import SocketModeHandler
    return SocketModeHandler(app, app_token)


def serve_socket_mode(app: App, app_token: str) -> None:
    socket_mode_handler(app, app_token).start()
