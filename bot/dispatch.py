"""Run a parsed Command through its handler and always come back with a Reply."""
from __future__ import annotations

import logging

from bot.context import Context
from bot.parser import Command, HelpRequested, UsageError, parse
from bot.registry import COMMANDS
from bot.reply import Reply

log = logging.getLogger(__name__)


def run(ctx: Context, command: Command) -> Reply:
    spec = COMMANDS[command.name]
    if spec.terminal_only and ctx.reply_to.get("kind", "terminal") != "terminal":
        return Reply.error(f"'{command.name}' works only in a terminal on the tfdesk machine "
                           f"(tfdesk {command.name} ...)")
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
