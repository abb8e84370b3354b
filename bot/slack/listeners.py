"""Bolt listeners: acknowledge at once, hand the work to the worker pool.

Each listener is two lines of plumbing: ``ack()`` and a hand-off. The app uses
``process_before_response=True``, so the ack is the HTTP response and goes out as soon as the
listener returns; the work runs in the pool and calls ``SlackService``.

Why not Bolt's ``lazy=[...]``: it deep-copies the whole request for every lazy function, which
was the largest cost of the ack path under a burst. Why the dedupe claim is in the pool and not
a middleware: an SQLite write in the request thread waits for the GIL behind busy workers;
done first thing in the pool it still guarantees that work starts once per request, and the
ack path touches no database at all (Slack gets a 200 for a retry either way).
"""
from __future__ import annotations

import logging
import re
from concurrent.futures import Executor
from typing import Any, Callable

from slack_bolt import App

from bot.slack.priority import AckFirst
from bot.slack.service import SlackService
from bot.slack.store import SlackStore

log = logging.getLogger(__name__)

COMMAND = "/tf"
SHORTCUT = "tf_convert_file"
ACTIONS = re.compile(r"^tf_")

Work = Callable[[dict[str, Any], Any], None]


def request_key(body: dict[str, Any]) -> tuple[str, str] | None:
    """The id that is the same for a request and all its redeliveries."""
    if body.get("event_id"):
        return body["event_id"], "event"
    if body.get("trigger_id"):
        return body["trigger_id"], str(body.get("type") or "command")
    return None


def register(app: App, service: SlackService, store: SlackStore, pool: Executor,
             ack_first: AckFirst | None = None) -> None:
    def once(work: Work, body: dict[str, Any], respond) -> None:
        if ack_first is not None:
            ack_first.wait()
        key = request_key(body)
        if key and not store.claim(*key):
            log.info("duplicate %s %s ignored", key[1], key[0])
            return
        try:
            work(body, respond)
        except Exception:  # noqa: BLE001 - the pool would swallow it silently
            log.exception("handling a Slack request failed")

    def handoff(work: Work):
        def listener(ack, body, respond):  # Bolt injects by name
            ack()
            pool.submit(once, work, body, respond)
        listener.__name__ = work.__name__
        return listener

    def slash(body, respond):
        service.slash(body["user_id"], body["channel_id"], body.get("text", ""), respond)

    app.command(COMMAND)(handoff(slash))

    def mention(body, respond):
        event = body["event"]
        service.message(event["user"], event["channel"], event["ts"], event.get("thread_ts"),
                        event.get("text", ""), event.get("files") or [])

    app.event("app_mention")(handoff(mention))

    def direct(body, respond):
        event = body["event"]
        if event.get("channel_type") != "im" or event.get("subtype") not in (None, "file_share"):
            return
        if event.get("bot_id") or not event.get("user"):
            return
        service.message(event["user"], event["channel"], event["ts"], event.get("thread_ts"),
                        event.get("text", ""), event.get("files") or [])

    app.event("message")(handoff(direct))

    def home(body, respond):
        event = body["event"]
        if event.get("tab", "home") == "home":
            service.home(event["user"])

    app.event("app_home_opened")(handoff(home))

    def shortcut(body, respond):
        msg = body.get("message", {})
        service.message(body["user"]["id"], body["channel"]["id"], msg.get("ts"),
                        msg.get("thread_ts"), "", msg.get("files") or [])

    app.shortcut(SHORTCUT)(handoff(shortcut))

    def action(body, respond):
        act = body["actions"][0]
        user = body["user"]["id"]
        msg = body.get("message") or {}
        channel = (body.get("channel") or {}).get("id") or user  # App Home: answer in a DM
        thread = msg.get("thread_ts") or msg.get("ts")
        service.action(act["action_id"], act.get("value", ""), user, channel, thread)

    app.action(ACTIONS)(handoff(action))
