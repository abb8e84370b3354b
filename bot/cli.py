"""The terminal face: ``tfdesk COMMAND ...`` and, with no arguments, the local console."""
from __future__ import annotations

import os
import sys

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from bot.config import ConfigError, load_config
from bot.context import Context
from bot.dispatch import run_line
from bot.reply import Reply
from bot.services import Services


def emit(reply: Reply, as_json: bool, out=None, err=None) -> None:
    out = out or sys.stdout
    err = err or sys.stderr
    if as_json:
        print(reply.to_json(), file=out)
    else:
        print(reply.text, file=out if reply.ok else err)
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


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        config = load_config()
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for warning in config.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    services = Services(config)  # this process's KB, engine and catalog, opened on first use
    try:
        if not argv:
            from bot.console import console_loop
            services.scheduler = True  # a long-running console schedules and follows jobs
            return console_loop(config, services=services)
        ctx, progress = make_progress_context(config, services=services)
        with progress:
            command, reply = run_line(ctx, argv)
    finally:
        services.close()
    try:
        emit(reply, as_json=(command.json if command else "--json" in argv))
        sys.stdout.flush()
    except BrokenPipeError:  # e.g. `tfdesk diff ... | head`: the reader left, not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return reply.status if not reply.ok else 0


if __name__ == "__main__":
    sys.exit(main())
