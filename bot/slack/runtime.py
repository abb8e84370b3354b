"""``tfdesk serve`` for Slack: the app, the job publisher and the maintenance loop together."""
from __future__ import annotations

import logging
import signal
import sys
import threading

from bot.config import Config
from bot.services import Services
from bot.slack.app import SlackBot, build
from bot.slack.progress import JobPublisher
from bot.slack.server import (DEFAULT_BIND, Limits, make_server, serve_socket_mode,
                              socket_mode_handler)
from bot.web.links import from_config as web_links
from core.vocabulary import ACTIVE

log = logging.getLogger(__name__)



class Runtime:
    def __init__(self, config: Config, mode: str = "http", engine=None,
                 maintenance_interval: float = 30.0, min_update_interval: float = 1.0,
                 poll_interval: float = 2.0, services: Services | None = None):
        self.config = config
        self.mode = mode
        # One set of services for the whole process: every Slack request's Context shares
        # them, the engine is this machine's scheduler, and the search index is built before
        # the first question rather than during it.
        self._own_services = services is None
        self.services = services or Services(config, scheduler=True, engine=engine)
        self.engine = self.services.start_engine()
        self.services.warm()
        self.jobs = self.engine.store
        self.bot: SlackBot = build(config, socket_mode=(mode == "socket"),
                                   running_jobs=self.running_jobs, services=self.services)
        self.publisher = JobPublisher(self.jobs, self.bot.messenger, self.bot.store,
                                      config.home / "slack" / "charts",
                                      min_interval=min_update_interval,
                                      poll_interval=poll_interval,
                                      busy=self.bot.service.busy, web=web_links(config))
        self.bot.service.on_job_started = self.publisher.attach
        self.maintenance_interval = maintenance_interval
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self.server = None
        self.socket = None
        self._subscription = self.engine.subscribe(self.publisher.on_event)

    def running_jobs(self, owner: str) -> int:
        return len(self.jobs.list(states=ACTIVE, owner=owner))

    def maintain_once(self) -> None:
        """Resend kept messages, deliver finals that are owed, forget old request ids."""
        self.bot.messenger.flush_outbox()
        self.publisher.deliver_pending()
        self.bot.store.prune_seen()

    def _maintenance(self) -> None:
        while not self._stop.is_set():
            try:
                self.maintain_once()
            except Exception:  # noqa: BLE001 - keep the loop alive; Slack may be down
                log.exception("maintenance failed")
            self._stop.wait(self.maintenance_interval)

    def start_background(self) -> None:
        self.publisher.start()
        t = threading.Thread(target=self._maintenance, name="tfdesk-slack-maintenance",
                             daemon=True)
        t.start()
        self._threads.append(t)

    def start_http(self, host: str = "127.0.0.1", port: int = 0):
        """Serve in a background thread (tests, benchmarks); returns the bound port."""
        self.server = self._make_server(host, port)
        t = threading.Thread(target=self.server.serve_forever, name="tfdesk-slack-http",
                             daemon=True)
        t.start()
        self._threads.append(t)
        return self.server.server_port

    def _make_server(self, host: str, port: int):
        return make_server(self.bot.app, host, port, self.bot.ack_first, self.bot.pool,
                           self.config.slack_signing_secret,
                           Limits.from_section(self.config.section("slack")))

    def start_socket_mode(self) -> None:
        """Connect over Socket Mode in background threads (tests); ``stop`` disconnects."""
        self.socket = socket_mode_handler(self.bot.app, self.config.slack_app_token)
        self.socket.connect()

    def stop(self) -> None:
        self._stop.set()
        if self.socket:
            self.socket.close()
        if self.server:
            self.server.shutdown()
            self.server.server_close()
        self.engine.unsubscribe(self._subscription)
        self.publisher.stop()
        if self._own_services:
            self.services.close()


def run_forever(config: Config, mode: str, host: str | None, port: int,
                services: Services | None = None) -> None:
    # Acks wait for the GIL behind busy workers after every socket call; a shorter switch
    # interval (default 5 ms) hands it back to them sooner. This process only serves Slack.
    sys.setswitchinterval(float(config.section("slack").get("switch_interval_s", 0.001)))
    from runners.isolation import protect_process
    protect_process()  # jobs of tfdesk's own user cannot read its tokens from /proc
    if services is not None:
        services.scheduler = True
    runtime = Runtime(config, mode, services=services)
    runtime.start_background()
    web = None
    # SIGTERM (systemd, docker stop) stops as Ctrl-C does: uvicorn shuts down gracefully and
    # hands the signal back, and the runtime then stops its threads.
    previous = signal.signal(signal.SIGTERM, _terminated)
    try:
        from bot.web.server import start_beside_slack
        web = start_beside_slack(config, runtime.services)  # the browser view, same process
        if mode == "socket":
            log.info("tfdesk connecting to Slack in Socket Mode")
            serve_socket_mode(runtime.bot.app, config.slack_app_token)
        else:
            host = host or config.section("slack").get("bind") or DEFAULT_BIND
            server = runtime._make_server(host, port)
            runtime.server = server
            log.info("tfdesk Slack endpoint on http://%s:%d/slack/events (health: /healthz)",
                     host, server.server_port)
            server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
        if web is not None:
            web.stop()
        runtime.stop()
        log.info("tfdesk stopped")


def _terminated(signum, frame) -> None:
    raise KeyboardInterrupt
