"""What tfdesk does for each kind of Slack request, after the listener has acked.

No command logic lives here: every request becomes a command line run through
``bot.parser.parse`` and ``bot.dispatch.run``, exactly as in the terminal, with the asking
user as owner and the Slack thread as the place results go. This module only decides where
answers appear, who may start compute work, and turns shared files into command lines.
"""
from __future__ import annotations

import json
import logging
import os
import re
import shlex
import threading
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from slack_sdk.errors import SlackApiError

from bot.config import Config
from bot.context import Context
from bot.dispatch import authorize, precheck, run_line
from bot.dispatch import run as run_command
from bot.parser import HelpRequested, UsageError, parse
from bot.paths import Areas
from bot.registry import COMMANDS
from bot.reply import Reply
from bot.services import Services
from bot.slack import blocks as bk
from bot.slack import uploads
from bot.slack.access import Gate
from bot.slack.messenger import Messenger
from bot.slack.store import SlackStore
from core import filegate

log = logging.getLogger(__name__)

UPLOAD_KEY = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
MENTION = re.compile(r"<@[A-Z0-9]+(\|[^>]*)?>")


@dataclass
class Where:
    """A Slack conversation and, when answering in a thread, its root."""
    channel: str
    user: str
    thread_ts: str | None = None

    def reply_to(self) -> dict[str, Any]:
        return {"kind": "slack", "channel": self.channel, "thread_ts": self.thread_ts}


class SlackService:
    def __init__(self, config: Config, client, store: SlackStore, gate: Gate,
                 messenger: Messenger, services: Services | None = None):
        self.config = config
        # Long-lived objects every request's Context uses (KB, engine, catalog): one per process.
        self.services = services or Services(config)
        self.client = client
        self.store = store
        self.gate = gate
        self.messenger = messenger
        section = config.section("slack")
        self.model_limit = int(float(section.get("max_model_mb", uploads.DEFAULT_MODEL_LIMIT_MB))
                               * 1024 * 1024)
        self.uploads_dir = config.home / "slack" / "uploads"
        # Set by the job publisher: called with (job_id, Where, status message ts).
        self.on_job_started: Callable[[str, Where, str | None], None] | None = None
        # Threads where a command is still running: (channel, thread_ts) -> how many.
        self._busy: Counter = Counter()
        self._busy_lock = threading.Lock()

    def busy(self, channel: str, thread_ts: str | None) -> bool:
        """Is a command still running in this thread? Its answer will speak for its jobs."""
        with self._busy_lock:
            return self._busy[(channel, thread_ts)] > 0

    @contextmanager
    def _working(self, where: "Where"):
        key = (where.channel, where.thread_ts)
        with self._busy_lock:
            self._busy[key] += 1
        try:
            yield
        finally:
            with self._busy_lock:
                self._busy[key] -= 1
                if self._busy[key] <= 0:
                    del self._busy[key]

    def _dispatch(self, where: "Where", command, ctx: Context | None = None) -> Reply:
        with self._working(where):
            return run_command(ctx or self.context(where), command)

    # -- shared pieces -------------------------------------------------------------------------
    def context(self, where: Where) -> Context:
        # The asker with their roles: dispatch checks every command against them, and a
        # member's paths name only their own uploads, outputs and jobs.
        return Context(self.config, reply_to=where.reply_to(), services=self.services,
                       actor=self.gate.actor(where.user, where.channel),
                       audit=self.gate.auditor(where.user, where.channel))

    def _run(self, where: Where, argv: list[str] | str,
             command=None) -> tuple[Any, Reply, str | None]:
        """Parse (unless the caller already did) and run (dispatch authorises). Returns
        (command or None, reply, refusal reason or None)."""
        if command is None:
            try:
                command = parse(argv)
            except (HelpRequested, UsageError):
                _, reply = run_line(self.context(where), argv)  # the help or usage answer
                return None, reply, None
        reply = self._dispatch(where, command)
        return command, reply, reply.text if reply.refused else None

    def _answer(self, where: Where, reply: Reply, *, line: str | None = None,
                as_json: bool = False, extra=(), status_ts: str | None = None,
                track: bool = False) -> str | None:
        """Post (or update ``status_ts`` with) a rendered reply, then upload its files."""
        message = bk.render_reply(reply, user=where.user if line else None, line=line,
                                  as_json=as_json, extra=extra)
        if status_ts and self.messenger.update(where.channel, status_ts, message):
            ts = status_ts
        else:
            ts = self.messenger.post(where.channel, message, thread_ts=where.thread_ts)
        if track:  # the answer of a command that started a job becomes its status message
            self._job_started(reply, where, ts)
        if reply.files:
            self.messenger.upload(where.channel, where.thread_ts or ts, reply.files)
        return ts

    def _job_started(self, reply: Reply, where: Where, ts: str | None) -> None:
        if reply.job is None:
            return
        job_id = reply.job.id
        if reply.ok and reply.job.state in bk.RUNNING_STATES:
            self.store.set_job_message(job_id, where.channel, where.thread_ts or ts, ts)
            if self.on_job_started:
                self.on_job_started(job_id, where, ts)
            return
        # A job that already finished (a command that waited for it) has said everything in
        # this answer: its record is closed so the publisher never posts a second result.
        self.store.set_job_message(job_id, where.channel, where.thread_ts or ts, ts)
        self.store.mark_final_sent(job_id)

    # -- /tf ---------------------------------------------------------------------------------
    def slash(self, user: str, channel: str, text: str, respond: Callable | None = None) -> None:
        text = (text or "").strip() or "help"
        where = Where(channel, user)
        try:
            command = parse(text)
        except (HelpRequested, UsageError):
            command = None
        if command is not None and _starts_work(command.name):
            # Slow work answers in a thread: open it first so the job can report into it.
            # A refusal is for the asker only: asked first, then run (refused and audited).
            ctx = self.context(where)
            if precheck(ctx, command):
                self._ephemeral(where, run_command(ctx, command), respond)
                return
            root = bk.render_reply(Reply(text=":hourglass_flowing_sand: working on it…"),
                                   user=user, line=text)
            ts = self.messenger.post(channel, root, keep=False)
            if ts is None:
                self._ephemeral(where, Reply.error(
                    "tfdesk cannot post in this conversation; invite it (`/invite @tfdesk`) "
                    "or use a channel it is in."), respond)
                return
            where.thread_ts = ts
            reply = self._dispatch(where, command, self.context(where))
            if not reply.ok:
                self.messenger.update(channel, ts, bk.render_reply(reply, user=user, line=text))
                self._job_started(reply, where, ts)  # closes the record of a failed job
                return
            self._answer(where, reply, as_json=command.json, track=True)
            return
        command, reply, _ = self._run(where, text, command)  # parsed once, above
        if command is None or not reply.ok:
            # Help, usage errors and refusals are for the asker only.
            self._ephemeral(where, reply, respond, as_json=bool(command and command.json))
            return
        message = bk.render_reply(reply, user=user, line=text, as_json=command.json)
        ts = self.messenger.post(channel, message, keep=False)
        if ts is None:  # not in this conversation: answer privately rather than not at all
            self._ephemeral(where, reply, respond, as_json=command.json)
            return
        if reply.files:
            self.messenger.upload(channel, ts, reply.files)

    def _ephemeral(self, where: Where, reply: Reply, respond=None, as_json=False) -> None:
        self.messenger.ephemeral(where.channel, where.user,
                                 bk.render_reply(reply, as_json=as_json),
                                 thread_ts=where.thread_ts, respond=respond)

    # -- mentions and direct messages -----------------------------------------------------------
    def message(self, user: str, channel: str, ts: str, thread_ts: str | None, text: str,
                files: list[dict[str, Any]]) -> None:
        """A mention in a channel, or a direct message: files are converted, text is a command."""
        where = Where(channel, user, thread_ts or ts)
        instruction = MENTION.sub("", text or "").strip()
        if files:
            for f in files:
                self.intake(where, f, instruction)
            return
        if not instruction:
            instruction = "help"
        command, reply, _ = self._run(where, instruction)
        # A command that starts a job: its answer becomes the job's status message.
        track = bool(command and _starts_work(command.name))
        self._answer(where, reply, as_json=bool(command and command.json), track=track)

    # -- file uploads --------------------------------------------------------------------------
    def file_info(self, f: dict[str, Any]) -> dict[str, Any]:
        if f.get("url_private_download") and f.get("name") and "size" in f:
            return f
        # Events may carry only the id ("file_access": "check_file_info").
        return self.client.files_info(file=f["id"])["file"]

    def intake(self, where: Where, f: dict[str, Any], instruction: str) -> None:
        status_ts = None
        try:
            info = self.file_info(f)
            name = info.get("name") or info.get("title") or f["id"]
            kind = uploads.check_declared(name, info.get("size"), self.model_limit)
            dest = self.uploads_dir / self.upload_key(info["id"], where.user) / \
                uploads.safe_name(name)
            argv = (_script_argv(dest, uploads.script_target(instruction))
                    if kind.kind == "script" else uploads.model_argv(dest, instruction))
            ctx = self.context(where)
            if authorize(ctx, COMMANDS[argv[0]]):  # before downloading anything
                raise uploads.UploadError(run_command(ctx, parse(argv)).text)
            status_ts = self.messenger.post(where.channel, {
                "text": f"Received {name}; converting…",
                "blocks": [bk.section(f":inbox_tray: Received `{bk.escape(name)}` "
                                      f"({kind.label}); converting…")]},
                thread_ts=where.thread_ts, keep=False)
            url = info.get("url_private_download") or info.get("url_private")
            if not url:
                raise uploads.UploadError(f"Slack gave no download link for `{name}`.")
            uploads.download(url, self.config.slack_bot_token or "", dest, name, kind,
                             uploads.limit_for(kind, self.model_limit),
                             allowed_hosts=uploads.file_hosts(
                                 self.config.slack_api_url,
                                 self.config.section("slack").get("file_hosts") or ()))
            # Which file in the folder is the user's, for the buttons later.
            (dest.parent / "upload.json").write_text(json.dumps(
                {"name": dest.name, "slack_name": name, "user": where.user}), encoding="utf-8")
        except uploads.UploadError as exc:
            reply = Reply.error(str(exc))
            self._answer(where, reply, status_ts=status_ts)
            return
        except SlackApiError as exc:
            self._answer(where, Reply.error(
                f"could not read the file from Slack: {exc.response.get('error')}"),
                status_ts=status_ts)
            return
        if kind.kind == "script":
            self.convert_script(where, dest, argv, status_ts)
            return
        _, reply, _ = self._run(where, argv)
        self._answer(where, reply, status_ts=status_ts, track=True)

    def convert_script(self, where: Where, script: Path, argv: list[str],
                       status_ts: str | None = None) -> None:
        """Run ``convert`` and answer with a summary, a diff excerpt, the converted file and
        the full report as files, and the buttons for what comes next."""
        _, reply, _ = self._run(where, argv)
        if not reply.ok:
            self._answer(where, reply, status_ts=status_ts)
            return
        data = reply.data if isinstance(reply.data, dict) else {}
        target = argv[argv.index("--to") + 1]
        report = script.parent / f"{script.stem}.{target.replace('-', '_')}.report.txt"
        # The terminal's text, without the server-side path it was written to.
        full = "\n\n".join(p for p in reply.text.split("\n\n") if not p.startswith("wrote "))
        report.write_text(full + "\n", encoding="utf-8")
        (script.parent / "report.txt").write_text(full + "\n", encoding="utf-8")
        files = list(reply.files)
        shown = Reply(text=summary_text(full, data), data={"diff": data.get("diff", "")},
                      files=files + [report])
        self._answer(where, shown, status_ts=status_ts,
                     extra=[script_buttons(script.parent.name, target)])

    def upload_key(self, file_id: str, user: str) -> str:
        """The folder a shared file goes to: its Slack id, unless someone else shared the same
        file first (an upload belongs to whoever shared it): then the id and the sharer's."""
        key = safe_key(file_id)
        owner = Areas.of(self.config).upload_owner(key)
        return key if owner in (None, user) else safe_key(f"{file_id}-{user}")

    def uploaded(self, key: str, user: str, channel: str) -> Path:
        """The shared file a button names, for its owner (or an admin) only: a button is a
        message anyone in the conversation can press."""
        areas = Areas.of(self.config)
        if not UPLOAD_KEY.match(key or ""):
            raise uploads.UploadError("that button refers to no upload.")
        owner = areas.upload_owner(key)
        if owner != user and not self.gate.actor(user, channel).is_admin:
            raise uploads.UploadError("that upload belongs to someone else: its buttons are "
                                      "for whoever shared it (or an admin).")
        name = areas.upload_name(key)
        path = self.uploads_dir / key / name if name else None
        if path is None or not path.is_file():
            raise uploads.UploadError("the uploaded file is gone; share it again.")
        return path

    def _report(self, key: str) -> str:
        """The kept report of an upload's conversion, read through the file gate."""
        try:
            with filegate.open_beneath(self.uploads_dir, (key, "report.txt")) as f:
                if f.is_dir or f.st.st_size > REPORT_LIMIT:
                    raise uploads.UploadError("that report cannot be shown.")
                with os.fdopen(os.dup(f.fd), "rb") as fh:
                    return fh.read(REPORT_LIMIT).decode("utf-8", errors="replace")
        except (FileNotFoundError, filegate.GateRefused):
            raise uploads.UploadError("no report was kept for that conversion.") from None

    # -- buttons ----------------------------------------------------------------------------
    def action(self, action_id: str, value: str, user: str, channel: str,
               thread_ts: str | None) -> None:
        where = Where(channel, user, thread_ts)
        try:
            if action_id in {"tf_train2", "tf_convert_tfd", "tf_show_report"}:
                key = _loads(value).get("u", "")
                script = self.uploaded(key, user, channel)
                if action_id == "tf_show_report":
                    text = self._report(key)
                    self.messenger.post(channel, bk.render_reply(Reply(text=text)),
                                        thread_ts=thread_ts)
                    if len(text) > bk.SECTION_LIMIT * 10:
                        self.messenger.upload(channel, thread_ts, [script.parent / "report.txt"])
                    return
                if action_id == "tf_convert_tfd":
                    self.convert_script(where, script, _script_argv(script,
                                                                           "tf-distribute"))
                    return
                target = _loads(value).get("to", "horovod")
                argv = ["train", str(script), "--workers", "2", "--convert", target]
            elif action_id == "tf_job_cancel":
                argv = ["cancel", value]
            elif action_id == "tf_job_logs":
                argv = ["logs", value, "--tail", "200"]
            else:
                return
        except uploads.UploadError as exc:
            self._ephemeral(where, Reply.error(str(exc)))
            return
        command, reply, reason = self._run(where, argv)
        if reason:
            self._ephemeral(where, reply)
            return
        self._answer(where, reply, line=shlex.join(argv), track=action_id == "tf_train2")

    # -- App Home ------------------------------------------------------------------------------
    def home(self, user: str) -> None:
        from bot.slack.home import home_view
        jobs = None
        if "jobs" in COMMANDS:
            _, reply = run_line(self.context(Where(user, user)), ["jobs", "--mine"])
            jobs = reply
        # Shown like every message: no server paths.
        self.client.views_publish(user_id=user, view=self.messenger.outgoing(home_view(user, jobs)))


def _script_argv(script: Path, target: str) -> list[str]:
    """``convert`` of an upload; the converted script goes to the member's own outputs
    (outputs/UPLOAD-ID/NAME), as everything written for a member does."""
    argv = uploads.script_argv(script, target)
    out = argv.index("-o") + 1
    argv[out] = f"{script.parent.name}/{Path(argv[out]).name}"
    return argv


def _starts_work(name: str) -> bool:
    spec = COMMANDS[name]
    return spec.permission == "compute" or spec.slow


def safe_key(file_id: str) -> str:
    return file_id if UPLOAD_KEY.match(file_id) else re.sub(r"[^A-Za-z0-9_-]", "_", file_id)[:64]


def _loads(value: str) -> dict[str, Any]:
    try:
        data = json.loads(value)
    except (TypeError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


SUMMARY_FINDINGS = 12
REPORT_LIMIT = 20_000_000  # a conversion report is text; past this it is not a report


def summary_text(full: str, data: dict[str, Any]) -> str:
    """The head line and the first findings; the whole report travels as a file."""
    head = full.split("\n\n", 1)[0]
    findings = data.get("findings") or []
    lines = [head]
    for f in findings[:SUMMARY_FINDINGS]:
        lines.append(f"line {f.get('line')}: {f.get('severity')} [{f.get('rule_id')}] "
                     f"{f.get('message')}")
    if len(findings) > SUMMARY_FINDINGS:
        lines.append(f"… {len(findings) - SUMMARY_FINDINGS} more in the full report")
    return "\n".join(lines)


def script_buttons(key: str, target: str) -> dict[str, Any]:
    buttons = [bk.button("Train with 2 workers", "tf_train2",
                         bk.json_value({"u": key, "to": target}), "primary")]
    if target != "tf-distribute":
        buttons.append(bk.button("Convert to tf.distribute instead", "tf_convert_tfd",
                                 bk.json_value({"u": key})))
    buttons.append(bk.button("Show full report", "tf_show_report", bk.json_value({"u": key})))
    return bk.actions(buttons, block_id=f"script:{key}")
