"""The terminal face: ``tfdesk COMMAND ...`` and, with no arguments, the local console."""
from __future__ import annotations

import os
import sys

from bot import commands
from bot.config import ConfigError, load_config
from bot.dispatch import run_line
from bot.services import Services
from bot.terminal import emit, make_progress_context


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    commands.load()  # the command table, filled once for this process
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
