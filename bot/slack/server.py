"""Running the app: the HTTP endpoint (``/slack/events`` and ``/healthz``) or Socket Mode.

The HTTP endpoint is uvicorn (asyncio, h11) in front of Bolt's ASGI adapter. An asyncio
server holds an idle or stalled connection for the cost of a socket, so slow or hostile
clients cannot take the threads that acks need (the old thread-per-connection server was
starved by 64 connections that never finished their headers). Around the adapter:

- connections that do not finish their request headers within ``header_timeout_s`` (or send
  more than ``max_header_bytes`` of them) are closed (uvicorn only times out idle keep-alive
  connections), bodies must arrive within
  ``body_timeout_s``, and at most ``max_connections`` connections or requests are served
  at once (503 beyond, uvicorn's ``limit_concurrency``);
- a body over 1 MiB gets 413, whether declared or streamed chunked; an invalid or negative
  ``Content-Length`` never reaches the app (h11 answers 400);
- a signed slash command is acked as soon as its signature checks out and Bolt dispatches
  it in the worker pool (the ack costs an HMAC, not Bolt's whole dispatch);
- everything else goes through the adapter, with Bolt's (synchronous) dispatch in a small
  thread pool so that it never blocks the event loop.
"""
from __future__ import annotations

import asyncio
import json
import logging
import socket
import threading
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass, fields
from typing import Any

import h11
import uvicorn
from slack_bolt import App, BoltRequest
from slack_bolt.adapter.asgi import SlackRequestHandler
from slack_bolt.response import BoltResponse
from slack_sdk.signature import SignatureVerifier
from uvicorn.protocols.http.h11_impl import H11Protocol

from bot.slack.priority import AckFirst

log = logging.getLogger(__name__)

EVENTS_PATH = "/slack/events"
HEALTH_PATH = "/healthz"
MAX_BODY = 1024 * 1024  # Slack's payloads are small; anything bigger is not from Slack
DISPATCH_THREADS = 8    # Bolt dispatches that are not early-acked slash commands
DEFAULT_BIND = "0.0.0.0"


class ServerError(Exception):
    user_facing = True


@dataclass(frozen=True)
class Limits:
    """What one client may hold of the endpoint; each is a ``[slack]`` key of the same name."""
    header_timeout_s: float = 10.0   # request line and headers must be complete by then
    body_timeout_s: float = 10.0     # ... and the body by this long after the headers
    keep_alive_s: float = 5.0        # an idle keep-alive connection is closed after this
    max_connections: int = 1000      # open connections or requests; 503 beyond
    max_header_bytes: int = 16384    # request line + headers (h11's incomplete-event limit)
    backlog: int = 2048              # bursts of slash commands must not be refused at accept()

    @classmethod
    def from_section(cls, section: dict[str, Any]) -> "Limits":
        out = {}
        for f in fields(cls):
            if f.name in section:
                kind = int if f.type in (int, "int") else float
                try:
                    value = kind(section[f.name])
                except (TypeError, ValueError):
                    raise ServerError(f"[slack] {f.name} must be a number, not "
                                      f"{section[f.name]!r}") from None
                if value <= 0:
                    raise ServerError(f"[slack] {f.name} must be positive, not {value}")
                out[f.name] = value
        return cls(**out)


def prestart(pool: ThreadPoolExecutor, n: int) -> None:
    """Start a pool's threads now: starting one waits for it to run, and under a burst that
    wait (a hand-over of the interpreter) landed on the ack path of the request starting it."""
    barrier = threading.Barrier(n + 1)
    for _ in range(n):
        pool.submit(barrier.wait)
    barrier.wait()


def is_slash_command(body: bytes, content_type: str) -> bool:
    """A slash command's form post (``command=/tf&...``): its ack is always an empty 200."""
    return content_type.startswith("application/x-www-form-urlencoded") and (
        body.startswith(b"command=") or b"&command=" in body) and b"payload=" not in body


class _TooLarge(Exception):
    pass


def _header(scope: dict, name: bytes) -> str:
    for key, value in scope["headers"]:
        if key == name:
            return value.decode("latin-1")
    return ""


async def _send(send, status: int, body: bytes, content_type: str = "text/plain;charset=utf-8",
                headers: list[tuple[bytes, bytes]] | None = None) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", content_type.encode()),
                            (b"content-length", str(len(body)).encode()), *(headers or [])]})
    await send({"type": "http.response.body", "body": body})


async def _read_body(receive) -> bytes:
    """The whole body, refusing it as soon as it passes ``MAX_BODY`` (chunked bodies have no
    declared length to check up front)."""
    chunks, total = [], 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            raise ConnectionError("client went away")
        chunk = message.get("body", b"")
        total += len(chunk)
        if total > MAX_BODY:
            raise _TooLarge
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


class _BoltAdapter(SlackRequestHandler):
    """Bolt's ASGI adapter with its synchronous ``App.dispatch`` moved off the event loop."""

    def __init__(self, app: App, executor: Executor):
        super().__init__(app, EVENTS_PATH)
        self.executor = executor

    async def dispatch(self, request) -> BoltResponse:
        req = BoltRequest(body=await request.get_raw_body(), query=request.query_string,
                          headers=request.get_headers())
        return await asyncio.get_running_loop().run_in_executor(self.executor,
                                                                self.app.dispatch, req)


class SlackEndpoint:
    """The ASGI application: health, limits and the early ack in front of Bolt's adapter."""

    def __init__(self, app: App, ack_first: AckFirst | None = None,
                 pool: Executor | None = None, signing_secret: str | None = None,
                 limits: Limits = Limits()):
        self.app = app
        self.limits = limits
        self.inflight = ack_first or AckFirst()
        self.pool = pool
        self.verifier = (SignatureVerifier(signing_secret)
                         if pool is not None and signing_secret else None)
        self.dispatcher = ThreadPoolExecutor(DISPATCH_THREADS, thread_name_prefix="tfdesk-bolt")
        self.adapter = _BoltAdapter(app, self.dispatcher)

    def close(self) -> None:
        self.dispatcher.shutdown(wait=False, cancel_futures=True)

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "lifespan":
            await self.adapter(scope, receive, send)
            return
        if scope["type"] != "http":
            return
        path, method = scope["path"], scope["method"]
        if path == HEALTH_PATH and method in ("GET", "HEAD"):
            await _send(send, 200, json.dumps({"ok": True}).encode(), "application/json")
            return
        if path != EVENTS_PATH:
            await _send(send, 404, b"not found")
            return
        if method != "POST":
            await _send(send, 405, b"method not allowed", headers=[(b"allow", b"POST")])
            return
        declared = _header(scope, b"content-length")
        if declared.isdigit() and int(declared) > MAX_BODY:  # h11 refused anything not digits
            await _send(send, 413, b"payload too large")
            return
        with self.inflight:  # work handed to the pool waits while requests are being acked
            try:
                raw = await asyncio.wait_for(_read_body(receive), self.limits.body_timeout_s)
            except _TooLarge:
                await _send(send, 413, b"payload too large")
                return
            except asyncio.TimeoutError:
                await _send(send, 408, b"request body too slow")
                return
            except ConnectionError:
                return
            if self.verifier is not None and is_slash_command(
                    raw, _header(scope, b"content-type")):
                headers = {k.decode("latin-1"): v.decode("latin-1")
                           for k, v in scope["headers"]}
                if self.verifier.is_valid_request(raw, headers):
                    await _send(send, 200, b"")
                    self.pool.submit(self._dispatch_later, raw,
                                     scope["query_string"].decode("latin-1"), headers)
                    return
            await self.adapter(scope, _replay(raw), send)

    def _dispatch_later(self, raw: bytes, query: str, headers: dict[str, str]) -> None:
        self.inflight.wait()
        try:  # the request is parsed here too: Bolt's parsing is part of what the ack skips
            resp = self.app.dispatch(BoltRequest(body=raw.decode("utf-8", errors="replace"),
                                                 query=query, headers=headers))
        except Exception:  # noqa: BLE001 - the pool would swallow it silently
            log.exception("dispatching an acked slash command failed")
            return
        if resp.status != 200:
            log.warning("slash command acked early but Bolt answered %s", resp.status)


def _replay(body: bytes):
    """A ``receive`` that hands the already-read body to the adapter."""
    sent = False

    async def receive():
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}
    return receive


class _HeaderDeadline:
    """A deadline and a size cap for the request line and headers: uvicorn's only timeout is
    for idle keep-alive connections, so a client that never finishes its headers would hold
    its connection for ever (and, with httptools, could send headers without end)."""
    header_timeout = 10.0
    max_header_bytes = 16384
    _header_timer = None
    _header_bytes = 0

    def _arm(self) -> None:
        if self._header_timer is None:
            self._header_bytes = 0
            self._header_timer = self.loop.call_later(self.header_timeout, self._too_slow)

    def _disarm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _too_slow(self) -> None:
        self._header_timer = None
        if not self.transport.is_closing():
            self.transport.close()

    def _count(self, data: bytes) -> None:
        if self._header_timer is not None:
            self._header_bytes += len(data)

    def _over(self) -> bool:
        """Still in the headers and past their cap (checked after a chunk was parsed, so body
        bytes that came with the end of the headers do not count): 431 and close."""
        if self._header_timer is None or self._header_bytes <= self.max_header_bytes:
            return False
        self._disarm()
        if not self.transport.is_closing():
            self.transport.write(b"HTTP/1.1 431 Request Header Fields Too Large\r\n"
                                 b"content-length: 0\r\nconnection: close\r\n\r\n")
            self.transport.close()
        return True


class _H11(_HeaderDeadline, H11Protocol):
    def connection_made(self, transport) -> None:
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        if self.conn.their_state is h11.IDLE:
            self._arm()  # a request (maybe a further one on a kept-alive connection) begins
        self._count(data)
        super().data_received(data)
        if self.conn.their_state is not h11.IDLE:
            self._disarm()
        self._over()

    def connection_lost(self, exc) -> None:
        self._disarm()
        super().connection_lost(exc)


def _httptools_protocol():
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    class _HttpTools(_HeaderDeadline, HttpToolsProtocol):
        def connection_made(self, transport) -> None:
            super().connection_made(transport)
            self._arm()

        def on_message_begin(self) -> None:
            self._arm()
            self._parsed_header_bytes = 0
            super().on_message_begin()

        def _measure(self, n: int) -> None:
            # Whole headers can arrive in one read: measure what the parser hands over too.
            # Raising here makes httptools fail the parse: uvicorn answers 400 and closes.
            self._parsed_header_bytes += n
            if self._parsed_header_bytes > self.max_header_bytes:
                raise ValueError("request headers too large")

        def on_url(self, url: bytes) -> None:
            self._measure(len(url))
            super().on_url(url)

        def on_header(self, name: bytes, value: bytes) -> None:
            self._measure(len(name) + len(value) + 4)
            super().on_header(name, value)

        def on_headers_complete(self) -> None:
            self._disarm()
            super().on_headers_complete()

        def data_received(self, data: bytes) -> None:
            self._count(data)
            super().data_received(data)
            self._over()

        def connection_lost(self, exc) -> None:
            self._disarm()
            super().connection_lost(exc)
    return _HttpTools


def _protocol(limits: Limits):
    """httptools (C, llhttp) when installed: parsing is most of an ack's cost under a burst;
    h11 (pure Python, uvicorn's own dependency) otherwise."""
    try:
        base = _httptools_protocol()
    except ImportError:
        base = _H11
    return type("Protocol", (base,), {"header_timeout": limits.header_timeout_s,
                                      "max_header_bytes": limits.max_header_bytes})


def _bind(host: str, port: int, backlog: int) -> socket.socket:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                   flags=socket.AI_PASSIVE)
        family = infos[0][0]
        sock = socket.create_server((host, port), family=family, backlog=backlog)
    except OSError as exc:
        raise ServerError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    # Replies go out at once (a response's head and body are two writes; with Nagle on, a
    # keep-alive client's delayed ACK holds the body back ~40 ms). asyncio sets this on each
    # accepted connection only for a socket made with proto=IPPROTO_TCP, which
    # create_server's is not; Linux hands the listener's setting to every connection.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


class HttpServer:
    """uvicorn on a socket bound up front (so port 0 works and a busy port is reported at
    once); ``serve_forever``/``shutdown``/``server_close`` as the runtime expects."""

    def __init__(self, endpoint: SlackEndpoint, host: str, port: int, limits: Limits,
                 protocol: type | None = None):
        self.endpoint = endpoint
        self.socket = _bind(host, port, limits.backlog)
        self.server_address = self.socket.getsockname()[:2]
        self.server_port = self.server_address[1]
        config = uvicorn.Config(
            endpoint, http=protocol or _protocol(limits), lifespan="off",
            log_config=None, access_log=False, server_header=False,
            timeout_keep_alive=int(max(1, limits.keep_alive_s)),
            limit_concurrency=limits.max_connections, backlog=limits.backlog,
            h11_max_incomplete_event_size=limits.max_header_bytes,
            timeout_graceful_shutdown=5)
        self.uvicorn = uvicorn.Server(config)
        self._stopped = threading.Event()
        self._started = False

    def serve_forever(self) -> None:
        self._started = True
        try:
            self.uvicorn.run(sockets=[self.socket])
        finally:
            self._stopped.set()

    def shutdown(self, timeout: float = 10.0) -> None:
        self.uvicorn.should_exit = True
        if self._started:
            self._stopped.wait(timeout)

    def server_close(self) -> None:
        self.socket.close()
        self.endpoint.close()


def make_server(app: App, host: str = DEFAULT_BIND, port: int = 3000,
                ack_first: AckFirst | None = None, pool: Executor | None = None,
                signing_secret: str | None = None, limits: Limits | None = None) -> HttpServer:
    """The HTTP endpoint. With ``pool`` and ``signing_secret``, a slash command is acked as
    soon as its signature checks out and Bolt dispatches it in the pool."""
    limits = limits or Limits()
    return HttpServer(SlackEndpoint(app, ack_first, pool, signing_secret, limits),
                      host, port, limits)


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
