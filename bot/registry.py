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

    ``path=True`` marks a local file or folder: from Slack, such a path must lie in the
    folders tfdesk itself fills (uploads, job outputs); ``path="or-name"`` also takes a
    catalog name there. See :func:`bot.dispatch.run`.
    """
    return (flags, kwargs)


def path_dests(spec: "CommandSpec") -> list[tuple[str, bool]]:
    """(argparse ``dest``, takes a catalog name too) of every path argument of ``spec``."""
    out = []
    for flags, kwargs in spec.args:
        if kwargs.get("path"):
            long = next((f for f in flags if f.startswith("--")), flags[0])
            out.append((kwargs.get("dest") or long.lstrip("-").replace("-", "_"),
                        kwargs["path"] == "or-name"))
    return out


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
    # Commands that act on the tfdesk machine itself (serve, build, files named by path):
    # refused from Slack, where the asker is not at that machine.
    terminal_only: bool = False


COMMANDS: dict[str, CommandSpec] = {}
GROUP_HELP: dict[str, str] = {}


def group(name: str, help: str) -> None:
    GROUP_HELP[name] = help


def command(name: str, help: str, args: list[Arg] | None = None, description: str = "",
            examples: list[str] | None = None, slow: bool = False, terminal_only: bool = False):
    def register(fn):
        if name in COMMANDS:
            raise RuntimeError(f"command {name!r} registered twice")
        COMMANDS[name] = CommandSpec(name, help, fn, list(args or []), description or help,
                                     list(examples or []), slow, terminal_only)
        return fn
    return register
