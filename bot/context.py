"""What a handler gets besides its arguments: configuration, the process's services, who
asked, where to report."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from bot.config import Config
from bot.permissions import Actor, member
from bot.services import Services


@dataclass
class Context:
    config: Config
    owner: str = "local"
    # Where results of slow work go: {"kind": "terminal"} or {"kind": "slack", "channel":..., "thread_ts":...}
    reply_to: dict[str, Any] = field(default_factory=lambda: {"kind": "terminal"})
    # Progress callback for long work in the foreground: progress(message, done, total).
    progress: Callable[[str, int | None, int | None], None] | None = None
    # The process's long-lived objects (KB, engine, catalog), built once at the edge and
    # shared by every request; a context made without one (a test, a script) gets its own.
    services: Services | None = None
    # Who asks, with their roles (bot.permissions). Left out: the terminal's operator, named
    # ``owner``; a context answering elsewhere gets a plain member's rights, never more.
    actor: Actor | None = None
    # Called by dispatch for every command that changes something or is refused:
    # audit(command name, command line, allowed, reason).
    audit: Callable[[str, str, bool, str], None] | None = None
    # Typed at the local console (bot.console), where `serve` would only open another one.
    console: bool = False

    def __post_init__(self) -> None:
        if self.services is None:
            self.services = Services(self.config)
        if self.actor is None:
            terminal = self.reply_to.get("kind", "terminal") == "terminal"
            self.actor = Actor(self.owner) if terminal else member(self.owner)
        self.owner = self.actor.id

    def report(self, message: str, done: int | None = None, total: int | None = None) -> None:
        if self.progress:
            self.progress(message, done, total)
