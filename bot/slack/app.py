"""The Bolt app factory: one place that wires config, Web API client, state and listeners."""
from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from slack_bolt import App
from slack_sdk import WebClient
from slack_sdk.http_retry.builtin_handlers import (ConnectionErrorRetryHandler,
                                                   RateLimitErrorRetryHandler,
                                                   ServerErrorRetryHandler)
from slack_sdk.http_retry.builtin_interval_calculators import \
    BackoffRetryIntervalCalculator

from bot.config import Config
from bot.paths import Areas, public
from bot.slack import listeners
from bot.slack.access import Gate, Policy
from bot.slack.messenger import Messenger
from bot.slack.priority import AckFirst
from bot.slack.redact import install_redaction
from bot.slack.server import prestart
from bot.slack.service import SlackService
from bot.slack.store import SlackStore

log = logging.getLogger(__name__)

RETRIES = 4
WORKERS = 16


class SlackSetupError(Exception):
    user_facing = True


def make_client(config: Config) -> WebClient:
    """Web API client: base URL from config (SLACK_API_URL), retries for 429 and 5xx."""
    kwargs = {"token": config.slack_bot_token, "timeout": 30}
    if config.slack_api_url:
        kwargs["base_url"] = config.slack_api_url.rstrip("/") + "/"
    client = WebClient(**kwargs)
    # 5xx and dropped connections: exponential backoff (0.5 s, 1 s, 2 s, 4 s by default);
    # 429: exactly the Retry-After Slack asks for.
    backoff = BackoffRetryIntervalCalculator(
        backoff_factor=float(config.section("slack").get("retry_backoff_s", 0.5)))
    client.retry_handlers = [
        ConnectionErrorRetryHandler(max_retry_count=2, interval_calculator=backoff),
        RateLimitErrorRetryHandler(max_retry_count=RETRIES),
        ServerErrorRetryHandler(max_retry_count=RETRIES, interval_calculator=backoff)]
    return client


@dataclass
class SlackBot:
    app: App
    service: SlackService
    store: SlackStore
    messenger: Messenger
    client: WebClient
    ack_first: AckFirst
    pool: ThreadPoolExecutor


def build(config: Config, socket_mode: bool = False, running_jobs=None,
          services=None) -> SlackBot:
    if not config.slack_bot_token:
        raise SlackSetupError("SLACK_BOT_TOKEN is not set.")
    if not socket_mode and not config.slack_signing_secret:
        raise SlackSetupError("SLACK_SIGNING_SECRET is needed for the HTTP endpoint "
                              "(or set SLACK_APP_TOKEN for Socket Mode).")
    install_redaction(config.slack_signing_secret, config.slack_bot_token,
                      config.slack_app_token)
    client = make_client(config)
    store = SlackStore(config.state_path)
    # Nothing posted to Slack shows a path on the tfdesk machine (bot.paths.public).
    areas = Areas.of(config)
    messenger = Messenger(client, store, scrub=lambda message: public(message, areas),
                          public_dir=config.home / "slack" / "public")
    # Roles from [slack]; the running-job limit is counted by dispatch (running_jobs is
    # kept in the signature for callers that still pass it).
    gate = Gate(Policy.from_section(config.section("slack")), store, client)
    service = SlackService(config, client, store, gate, messenger, services)
    pool = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="tfdesk-slack")
    prestart(pool, WORKERS)
    app = App(client=client,  # the client carries the bot token
              signing_secret=config.slack_signing_secret or "-",
              # ack() is the HTTP response, sent from the request thread as soon as the
              # listener returns; all work is handed to the pool.
              process_before_response=True,
              listener_executor=pool)
    ack_first = AckFirst(float(config.section("slack").get("ack_first_max_wait_s", 0.5)))
    listeners.register(app, service, store, pool, ack_first)
    return SlackBot(app, service, store, messenger, client, ack_first, pool)


def create_app(config: Config) -> App:
    return build(config).app
