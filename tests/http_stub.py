"""The small local HTTP server every stand-in (Slack's Web API, its OpenID Connect end) runs
on: real HTTP on 127.0.0.1 and a free port, requests handed to the stand-in's ``_get`` /
``_post``, stopped cleanly."""
from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class LocalHTTPStub:
    """Subclasses define ``_get(handler)`` and ``_post(handler)``."""
    protocol_version = "HTTP/1.1"
    server: ThreadingHTTPServer | None = None

    def start(self):
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = stub.protocol_version

            def log_message(self, *args):
                pass

            def do_GET(self):  # noqa: N802
                stub._get(self)

            def do_POST(self):  # noqa: N802
                stub._post(self)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self.server:
            self.server.shutdown()
            self.server.server_close()

    @property
    def port(self) -> int:
        return self.server.server_address[1]
