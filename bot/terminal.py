"""How the terminal and the console show replies and progress (rich on stderr)."""
from __future__ import annotations

import sys

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from bot.context import Context
from bot.reply import Reply
from bot.services import Services


def emit(reply: Reply, as_json: bool, out=None, err=None) -> None:
    out = out or sys.stdout
    err = err or sys.stderr
    if as_json:
        print(reply.to_json(), file=out)
    else:
        print(reply.text, file=out if reply.ok else err)
        if reply.links:
            from bot.web.links import as_text
            print(as_text(reply.links), file=out if reply.ok else err)
        for f in reply.files:
            print(f"file: {f}", file=out)


def make_progress_context(config, stream=None, services: Services | None = None
                          ) -> tuple[Context, Progress]:
    console = Console(file=stream or sys.stderr)
    progress = Progress(TextColumn("{task.description}"), BarColumn(),
                        TextColumn("{task.completed}/{task.total}"), TimeElapsedColumn(),
                        console=console, transient=True, disable=not console.is_terminal)
    tasks: dict[str, int] = {}

    def report(message, done=None, total=None):
        if not console.is_terminal:
            return
        key = message.split(":")[0]
        if key not in tasks:
            tasks[key] = progress.add_task(message, total=total)
        progress.update(tasks[key], description=message, completed=done or 0, total=total)

    return Context(config=config, progress=report, services=services), progress
