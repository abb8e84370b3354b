"""What a handler gets besides its arguments: configuration, the process's services, who
asked, where to report."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from bot.config import Config
from bot.services import Services


@dataclass
class Context:
    config: Config
    owner: str = "local"
    # Where results of slow work go: {"kind": "terminal"} or {"kind": "slack", "channel":..., "thread_ts":...}
    reply_to: dict[str, Any] = field(default_factory=lambda: {"kind": "terminal"})
    # Progress callback for long work in the foreground: progress(message, done, total).
    progress: Callable[[str, int | None, int | None], None] | None = None
    # Where local paths named in a command may lie; None for the terminal (any path). Slack
    # sets it to the folders tfdesk fills itself, so nobody reads the server's files through
    # a command.
    file_roots: tuple[Path, ...] | None = None
    # The process's long-lived objects (KB, engine, catalog), built once at the edge and
    # shared by every request; a context made without one (a test, a script) gets its own.
    services: Services | None = None

    def __post_init__(self) -> None:
        if self.services is None:
            self.services = Services(self.config)

    def report(self, message: str, done: int | None = None, total: int | None = None) -> None:
        if self.progress:
            self.progress(message, done, total)
