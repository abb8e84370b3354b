"""Declarative command table shared by every face.

A handler module declares its commands with :func:`command`; the parser builds argparse
sub-parsers from this table, so the terminal and Slack parse identically. Names with a
space ("kb build", "datasets list") become nested sub-commands.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

Arg = tuple[tuple[str, ...], dict[str, Any]]


def arg(*flags: str, **kwargs: Any) -> Arg:
    """One argparse argument, as data: ``arg("--limit", type=int, default=5)``.

    ``path=True`` marks a local file or folder the command reads: from Slack it names the
    asker's own uploads, outputs or jobs (``bot.paths``); ``path="or-name"`` also takes a
    catalog name there; ``path="out"`` is a file the command writes: from Slack, always in
    the asker's own output folder. See :func:`bot.dispatch.run`.
    """
    return (flags, kwargs)


def count(most: int | None = None) -> Callable[[str], int]:
    """An argparse ``type`` for a how-many option: a whole number from 1 (to ``most``), so a
    zero or negative ``--limit`` is a usage error, not silently one result."""
    def parse(text: str) -> int:
        import argparse
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"a whole number is needed, not {text!r}") from None
        if value < 1 or (most is not None and value > most):
            span = f"from 1 to {most}" if most is not None else "1 or more"
            raise argparse.ArgumentTypeError(f"must be {span}, not {value}")
        return value
    parse.__name__ = "count"
    return parse


def path_args(spec: "CommandSpec") -> list[tuple[str, str]]:
    """(argparse ``dest``, kind) of every path argument of ``spec``; kind is "in" (read),
    "or-name" (read, or a catalog name) or "out" (written)."""
    out = []
    for flags, kwargs in spec.args:
        if kwargs.get("path"):
            long = next((f for f in flags if f.startswith("--")), flags[0])
            kind = kwargs["path"] if isinstance(kwargs["path"], str) else "in"
            out.append((kwargs.get("dest") or long.lstrip("-").replace("-", "_"), kind))
    return out


def path_dests(spec: "CommandSpec") -> list[tuple[str, bool]]:
    """(argparse ``dest``, takes a catalog name too) of every path argument of ``spec``."""
    return [(dest, kind == "or-name") for dest, kind in path_args(spec)]


@dataclass
class CommandSpec:
    name: str
    help: str
    handler: Callable[..., Any]
    args: list[Arg] = field(default_factory=list)
    description: str = ""
    examples: list[str] = field(default_factory=list)
    # Slow commands run as jobs or lazily in Slack; the face decides how.
    slow: bool = False
    # Who may run it (bot.permissions.PERMISSIONS); None = undeclared, refused by dispatch.
    permission: str | None = None

    @property
    def terminal_only(self) -> bool:
        """Acts on the tfdesk machine itself (serve, build): refused from Slack."""
        return self.permission == "terminal"


COMMANDS: dict[str, CommandSpec] = {}
GROUP_HELP: dict[str, str] = {}


def group(name: str, help: str) -> None:
    GROUP_HELP[name] = help


def command(name: str, help: str, args: list[Arg] | None = None, description: str = "",
            examples: list[str] | None = None, slow: bool = False,
            permission: str | None = None):
    """Register a command. ``permission`` is one of bot.permissions.PERMISSIONS (read, own,
    compute, admin, terminal); a command without one is refused when run."""
    from bot.permissions import PERMISSIONS
    if permission is not None and permission not in PERMISSIONS:
        raise RuntimeError(f"command {name!r}: unknown permission {permission!r}")

    def register(fn):
        if name in COMMANDS:
            raise RuntimeError(f"command {name!r} registered twice")
        COMMANDS[name] = CommandSpec(name, help, fn, list(args or []), description or help,
                                     list(examples or []), slow, permission)
        return fn
    return register
