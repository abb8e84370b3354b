"""Run a parsed Command through its handler and always come back with a Reply."""
from __future__ import annotations

import logging
from pathlib import Path

from bot.context import Context
from bot.parser import Command, HelpRequested, UsageError, parse
from bot.registry import COMMANDS, path_dests
from bot.reply import Reply

log = logging.getLogger(__name__)


def run(ctx: Context, command: Command) -> Reply:
    spec = COMMANDS[command.name]
    if spec.terminal_only and ctx.reply_to.get("kind", "terminal") != "terminal":
        return Reply.error(f"'{command.name}' works only in a terminal on the tfdesk machine "
                           f"(tfdesk {command.name} ...)")
    if ctx.file_roots is not None:
        outside = [v for d, names_ok in path_dests(spec) for v in _values(command.args.get(d))
                   if not _inside(v, ctx.file_roots, names_ok)]
        if outside:
            return Reply.error(f"{outside[0]!r} is not a file shared with tfdesk here: share the "
                               "file in this conversation (or name a catalog entry) instead "
                               "of a path on the tfdesk machine")
    try:
        reply = spec.handler(ctx, **command.args)
    except Exception as exc:  # noqa: BLE001 - every failure becomes an answer
        if getattr(exc, "user_facing", False):
            return Reply.error(str(exc))
        log.exception("command %s failed", command.name)
        return Reply.error(f"{command.name} failed unexpectedly: {type(exc).__name__}: {exc}")
    return reply


def run_line(ctx: Context, line: str | list[str]) -> tuple[Command | None, Reply]:
    """Parse and run; usage errors and --help become replies too."""
    try:
        command = parse(line)
    except HelpRequested as h:
        return None, Reply(text=h.text, data={"help": h.text, "command": h.command})
    except UsageError as u:
        text = f"error: {u.message}" + (f"\n\n{u.usage}" if u.usage else "")
        return None, Reply.error(text, {"usage": u.usage, "command": u.command}, status=2)
    return command, run(ctx, command)


def _values(v) -> list[str]:
    if v is None:
        return []
    return [str(x) for x in v] if isinstance(v, (list, tuple)) else [str(v)]


def _inside(value: str, roots, names_ok: bool) -> bool:
    """A URI (s3://, pvc://) is not a local path, nor, where the argument takes one, a catalog
    name; a path must resolve (links followed) into one of ``roots``."""
    if value.startswith("file://"):
        value = value[len("file://"):]
    elif "://" in value:
        return True
    p = Path(value).expanduser()
    if names_ok and not p.is_absolute() and not p.exists() and "/" not in value:
        return True  # a name such as "resnet:3", resolved by the handler
    real = p.resolve()
    return any(real.is_relative_to(Path(r).resolve()) for r in roots)
