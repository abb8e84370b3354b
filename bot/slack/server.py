"""Running the app: the HTTP endpoint (``/slack/events`` and ``/healthz``) or Socket Mode."""
from __future__ import annotations

import json
import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlparse

from slack_bolt import App, BoltRequest

from bot.slack.priority import AckFirst

log = logging.getLogger(__name__)

EVENTS_PATH = "/slack/events"
HEALTH_PATH = "/healthz"
MAX_BODY = 1024 * 1024  # Slack's payloads are small; anything bigger is not from Slack


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # bursts of slash commands must not be refused at accept()


def make_server(app: App, host: str = "0.0.0.0", port: int = 3000,
                ack_first: AckFirst | None = None) -> ThreadingHTTPServer:
    inflight = ack_first or AckFirst()
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

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
                body = self.rfile.read(length).decode("utf-8", errors="replace")
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
