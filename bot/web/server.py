"""Serving the web view: uvicorn on its own socket (``[web] bind``, default 127.0.0.1), in the
foreground (``tfdesk web``) or in a thread of ``tfdesk serve``, sharing that process's
services (engine, catalog)."""
from __future__ import annotations

import logging
import socket
import threading

import uvicorn

from bot.config import Config
from bot.services import Services
from bot.web.settings import WebSettings, load

log = logging.getLogger(__name__)


class WebServerError(Exception):
    user_facing = True


class WebServer:
    def __init__(self, config: Config, services: Services, settings: WebSettings | None = None,
                 host: str | None = None, port: int | None = None, env=None):
        from bot.web.app import client_env, gate_for, make_app
        self.settings = settings or load(config, client_env() if env is None else env)
        host = host or self.settings.bind
        port = self.settings.port if port is None else port
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.socket = socket.socket(family, socket.SOCK_STREAM)
        self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # Replies go out at once (a response's head and body are two writes; with Nagle on,
        # a keep-alive client's delayed ACK holds the body back ~40 ms). asyncio would set it
        # on each accepted connection only for a socket made with proto=IPPROTO_TCP, which
        # this is not; Linux hands the listener's setting to every connection it accepts.
        self.socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            self.socket.bind((host, port))
        except OSError as exc:
            self.socket.close()
            raise WebServerError(f"the web view cannot listen on {host}:{port}: {exc.strerror}"
                                 " (set [web] port, or --port)") from None
        self.socket.listen(512)
        self.port = self.socket.getsockname()[1]
        if not self.settings.url:  # links name the address really served
            from dataclasses import replace
            self.settings = replace(self.settings, port=self.port, bind=host)
        self.app = make_app(self.settings, services, gate_for(config))
        self.uvicorn = uvicorn.Server(uvicorn.Config(
            self.app, lifespan="off", log_config=None, access_log=False, server_header=False,
            timeout_keep_alive=5, limit_concurrency=200))
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return self.settings.base_url

    def serve_forever(self) -> None:
        try:
            self.uvicorn.run(sockets=[self.socket])
        finally:
            self.socket.close()

    def start(self) -> "WebServer":
        self._thread = threading.Thread(target=self.serve_forever, name="tfdesk-web",
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self.uvicorn.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout)


def start_beside_slack(config: Config, services: Services) -> WebServer | None:
    """``tfdesk serve``'s web view, unless ``[web] serve = false``; a port already taken is
    logged, and Slack is served anyway."""
    settings = load(config, __import__("bot.web.app", fromlist=["client_env"]).client_env())
    if not settings.serve:
        return None
    try:
        server = WebServer(config, services, settings).start()
    except WebServerError as exc:
        log.warning("%s; serving Slack without it", exc)
        return None
    log.info("tfdesk web view on %s (sign in from this machine: tfdesk web --login)",
             server.url)
    return server
