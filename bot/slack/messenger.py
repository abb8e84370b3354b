"""Posting to Slack so nothing is lost.

The WebClient itself retries rate limits (honouring ``Retry-After``) and 5xx answers with
backoff (see ``app.make_client``). A message that still cannot be posted is written to the
outbox in the state database and resent by :meth:`Messenger.flush_outbox`, which ``serve``
runs periodically and at start.
"""
from __future__ import annotations

import hashlib
import json
import logging
import re
import threading
from pathlib import Path
from typing import Any, Callable

from slack_sdk.errors import SlackApiError, SlackClientError

from bot.slack.store import SlackStore

log = logging.getLogger(__name__)

# Errors that will never succeed on a retry: keeping the message would only loop.
PERMANENT = {"channel_not_found", "not_in_channel", "is_archived", "invalid_blocks",
             "msg_too_long", "no_text", "invalid_auth", "account_inactive", "user_not_found",
             "message_not_found", "cant_update_message", "file_not_found"}


# Keys whose string values Slack shows (and parses for mentions and links): the notification
# text, every text object and rich-text element, alt texts, titles, an upload's comment.
SHOWN_KEYS = {"text", "alt_text", "title", "initial_comment", "fallback", "pretext"}
BARE_BROADCAST = re.compile(r"(?<![\w@])@(channel|here|everyone)\b", re.I)
WORD_JOINER = "\u2060"


def quiet(obj: Any) -> Any:
    """``obj`` (a message, a view, or a text) with every mention and link written in text made
    inert: ``<`` becomes Slack's escape, so ``<!channel>``, ``<!here>``, ``<@U1>``,
    ``<!subteam^S1>`` and ``<https://x|label>`` show as written and notify no one; a bare
    ``@channel`` gets a word joiner. Idempotent. A mention tfdesk means is structure (a
    rich-text ``user`` element), never text, so it is untouched."""
    if isinstance(obj, str):
        return _quiet_text(obj)
    if isinstance(obj, dict):
        return {k: (_quiet_text(v) if k in SHOWN_KEYS and isinstance(v, str) else quiet(v))
                for k, v in obj.items()}
    if isinstance(obj, list):
        return [quiet(v) for v in obj]
    return obj


def _quiet_text(text: str) -> str:
    if "<" in text:  # every control sequence opens with it; escaped, none can form
        text = text.replace("<", "&lt;")
    if "@" in text:
        text = BARE_BROADCAST.sub(lambda m: "@" + WORD_JOINER + m.group(1), text)
    return text


def error_code(exc: Exception) -> str:
    if isinstance(exc, SlackApiError):
        return str(exc.response.get("error") or exc.response.status_code)
    return f"{type(exc).__name__}: {exc}"


class Messenger:
    def __init__(self, client, store: SlackStore, scrub: Callable[[Any], Any] | None = None,
                 public_dir: Path | None = None):
        self.client = client
        self.store = store
        # Applied to every message before it goes out (answers show no server paths), and to
        # text files (reports) uploaded: their scrubbed copies are kept in ``public_dir``.
        self.scrub = scrub or (lambda message: message)
        self.public_dir = public_dir
        # Called with (job_id, method, response) when an outbox item finally goes out.
        self.on_delivered: Callable[[str | None, str, Any], None] | None = None
        # What each message (channel, ts) shows now: an update that changes nothing is not
        # sent, whichever thread (publisher, command, button) asks for it.
        self._shown: dict[tuple[str, str], str] = {}
        self._shown_lock = threading.Lock()

    def outgoing(self, message: Any) -> Any:
        """What Slack gets for ``message``: no server paths, no mention written in text. Every
        post, update, ephemeral, upload comment and published view goes through here."""
        return quiet(self.scrub(message))

    def _call(self, method: str, payload: dict[str, Any], job_id: str | None, keep: bool):
        fn = getattr(self.client, method.replace(".", "_"))
        # Also the outbox's items, whatever wrote them: nothing reaches Slack unquieted.
        payload = quiet(payload)
        kwargs = dict(payload)
        if method == "files_upload_v2":
            kwargs["file_uploads"] = [dict(f) for f in kwargs["file_uploads"]]
        try:
            return fn(**kwargs)
        except (SlackApiError, SlackClientError, OSError) as exc:
            code = error_code(exc)
            if keep and code not in PERMANENT:
                self.store.enqueue(method, payload, code, job_id)
                log.warning("%s failed (%s); kept in the outbox", method, code)
            else:
                log.warning("%s failed (%s)", method, code)
            raise

    def post(self, channel: str, message: dict[str, Any], thread_ts: str | None = None,
             job_id: str | None = None, keep: bool = True) -> str | None:
        message = self.outgoing(message)
        payload = {"channel": channel, **message}
        if thread_ts:
            payload["thread_ts"] = thread_ts
        try:
            ts = self._call("chat.postMessage", payload, job_id, keep)["ts"]
        except (SlackApiError, SlackClientError, OSError):
            return None
        with self._shown_lock:
            self._remember((channel, ts), _content(message))
        return ts

    def _remember(self, key: tuple[str, str], content: str) -> None:
        self._shown.pop(key, None)
        self._shown[key] = content
        while len(self._shown) > SHOWN_KEPT:  # recent messages are the ones updated
            self._shown.pop(next(iter(self._shown)))

    def update(self, channel: str, ts: str, message: dict[str, Any],
               job_id: str | None = None) -> bool:
        message = self.outgoing(message)
        key, content = (channel, ts), _content(message)
        with self._shown_lock:  # claimed before sending, so two threads never send it twice
            before = self._shown.get(key)
            if before == content:
                return True
            self._remember(key, content)
        try:
            self._call("chat.update", {"channel": channel, "ts": ts, **message}, job_id, True)
            return True
        except (SlackApiError, SlackClientError, OSError):
            with self._shown_lock:
                if self._shown.get(key) == content:
                    self._shown[key] = before
            return False

    def ephemeral(self, channel: str, user: str, message: dict[str, Any],
                  thread_ts: str | None = None, respond: Callable | None = None) -> bool:
        """Only ``user`` sees it; falls back to the command's response_url outside channels
        the bot is in (a DM between two people, say)."""
        message = self.outgoing(message)
        payload = {"channel": channel, "user": user, **message}
        if thread_ts:
            payload["thread_ts"] = thread_ts
        try:
            self._call("chat.postEphemeral", payload, None, keep=False)
            return True
        except (SlackApiError, SlackClientError, OSError):
            if respond is None:
                return False
            try:
                respond(response_type="ephemeral", replace_original=False, **message)
                return True
            except Exception as exc:  # noqa: BLE001 - nothing else can be done
                log.warning("response_url failed: %s", type(exc).__name__)
                return False

    def upload(self, channel: str, thread_ts: str | None, files: list[Path],
               comment: str | None = None, job_id: str | None = None) -> bool:
        files = [self._public_file(Path(f)) for f in files if Path(f).is_file()]
        if not files:
            return True
        payload: dict[str, Any] = {
            "channel": channel,
            "file_uploads": [{"file": str(f), "filename": f.name, "title": f.name} for f in files],
        }
        if thread_ts:
            payload["thread_ts"] = thread_ts
        if comment:
            payload["initial_comment"] = self.outgoing(comment)
        try:
            self._call("files_upload_v2", payload, job_id, True)
            return True
        except (SlackApiError, SlackClientError, OSError):
            return False

    def _public_file(self, path: Path) -> Path:
        """A text report as it may be shown (scrubbed), or the file itself."""
        if self.public_dir is None or path.suffix.lower() not in SCRUBBED_FILES \
                or path.stat().st_size > SCRUB_MAX_BYTES:
            return path
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return path
        shown = self.scrub(text)
        if shown == text:
            return path
        key = hashlib.sha256(str(path.resolve()).encode() + shown.encode()).hexdigest()[:16]
        copy = self.public_dir / key / path.name
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_text(shown, encoding="utf-8")
        return copy

    def flush_outbox(self) -> int:
        """Resend what Slack would not take before; returns how many went out."""
        sent = 0
        for item in self.store.outbox():
            try:
                resp = self._call(item["method"], item["payload"], item["job_id"], keep=False)
            except (SlackApiError, SlackClientError, OSError) as exc:
                code = error_code(exc)
                if code in PERMANENT:
                    self.store.outbox_done(item["id"])
                else:
                    self.store.outbox_failed(item["id"], code)
                continue
            self.store.outbox_done(item["id"])
            sent += 1
            if self.on_delivered:
                self.on_delivered(item["job_id"], item["method"], resp)
        return sent


SHOWN_KEPT = 2000
# Reports shown as files: scrubbed like messages. Scripts (.py) are the member's own code and
# go as they are.
SCRUBBED_FILES = {".json", ".txt", ".yaml", ".yml", ".log", ".md", ".csv"}
SCRUB_MAX_BYTES = 20_000_000


def _content(message: dict[str, Any]) -> str:
    return json.dumps(message, sort_keys=True, default=str)
