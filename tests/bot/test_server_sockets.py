"""The sockets the servers accept: every connection the Slack endpoint and the web view accept
has Nagle's algorithm off (TCP_NODELAY), read from the accepted socket itself in this process.
uvicorn leaves it to asyncio, which sets it only on connections of a listening socket made
with proto=IPPROTO_TCP; neither server's socket is one, so each sets it on its listener, which
Linux copies to every connection it accepts. Without that, a keep-alive reply's body waits
~40 ms for the client's delayed ACK."""
from __future__ import annotations

import os
import socket

from bot.config import load_config
from bot.services import Services
from bot.web.server import WebServer
from tests.slack_stub import slack  # noqa: F401 - the fixture


def _accepted_by_server(client: socket.socket) -> socket.socket:
    """The server's end of ``client``'s connection, found among this process's descriptors."""
    want = client.getsockname()
    for fd in os.listdir("/proc/self/fd"):
        try:
            s = socket.socket(fileno=os.dup(int(fd)))
        except OSError:
            continue
        try:
            if s.type == socket.SOCK_STREAM and s.getpeername() == want:
                return s
        except OSError:
            pass
        s.close()
    raise AssertionError("the server's end of the connection was not found")


def _nodelay_after_a_request(port: int, path: str) -> int:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as c:
        c.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
        assert c.recv(65536).startswith(b"HTTP/1.1 200")
        server_end = _accepted_by_server(c)
        try:
            return server_end.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
        finally:
            server_end.close()


def test_slack_endpoint_connections_have_nodelay(slack):  # noqa: F811
    assert _nodelay_after_a_request(slack.port, "/healthz") != 0


def test_web_view_connections_have_nodelay(tmp_path):
    config = load_config({"TFDESK_HOME": str(tmp_path)})
    services = Services(config)
    server = WebServer(config, services, host="127.0.0.1", port=0, env={}).start()
    try:
        assert _nodelay_after_a_request(server.port, "/healthz") != 0
    finally:
        server.stop()
        services.close()
