"""Bolt listeners: acknowledge at once, hand the work to a lazy listener.

Each listener is two lines of plumbing. ``ack()`` runs in the request's own thread (the app
uses ``process_before_response=True``), so Slack gets its answer within milliseconds however
busy the worker pool is; the lazy half runs in the pool and calls ``SlackService``.
"""
from __future__ import annotations

import re
from typing import Any

from slack_bolt import App, BoltResponse

from bot.slack.service import SlackService
from bot.slack.store import SlackStore

COMMAND = "/tf"
SHORTCUT = "tf_convert_file"
ACTIONS = re.compile(r"^tf_")


def _ack(ack):
    ack()


def request_key(body: dict[str, Any]) -> tuple[str, str] | None:
    """The id that is the same for a request and all its redeliveries."""
    if body.get("event_id"):
        return body["event_id"], "event"
    if body.get("trigger_id"):
        return body["trigger_id"], str(body.get("type") or "command")
    return None


def register(app: App, service: SlackService, store: SlackStore) -> None:
    @app.middleware
    def dedupe(body, next, logger):  # noqa: A002 - Bolt injects by name
        key = request_key(body)
        if key and not store.claim(*key):
            logger.info("duplicate %s %s ignored", key[1], key[0])
            return BoltResponse(status=200, body="")
        return next()

    def slash(body, respond):
        service.slash(body["user_id"], body["channel_id"], body.get("text", ""), respond)

    app.command(COMMAND)(ack=_ack, lazy=[slash])

    def mention(event):
        service.message(event["user"], event["channel"], event["ts"], event.get("thread_ts"),
                        event.get("text", ""), event.get("files") or [])

    app.event("app_mention")(ack=_ack, lazy=[mention])

    def direct(event):
        if event.get("channel_type") != "im" or event.get("subtype") not in (None, "file_share"):
            return
        if event.get("bot_id") or not event.get("user"):
            return
        service.message(event["user"], event["channel"], event["ts"], event.get("thread_ts"),
                        event.get("text", ""), event.get("files") or [])

    app.event("message")(ack=_ack, lazy=[direct])

    def home(event):
        if event.get("tab", "home") == "home":
            service.home(event["user"])

    app.event("app_home_opened")(ack=_ack, lazy=[home])

    def shortcut(body):
        msg = body.get("message", {})
        service.message(body["user"]["id"], body["channel"]["id"], msg.get("ts"),
                        msg.get("thread_ts"), "", msg.get("files") or [])

    app.shortcut(SHORTCUT)(ack=_ack, lazy=[shortcut])

    def action(body):
        act = body["actions"][0]
        user = body["user"]["id"]
        msg = body.get("message") or {}
        channel = (body.get("channel") or {}).get("id") or user  # App Home: answer in a DM
        thread = msg.get("thread_ts") or msg.get("ts")
        service.action(act["action_id"], act.get("value", ""), user, channel, thread)

    app.action(ACTIONS)(ack=_ack, lazy=[action])
