"""Parse a command line (terminal argv or the text of ``/tf ...``) into a Command."""
from __future__ import annotations

import argparse
import re
import shlex
from dataclasses import dataclass, field
from typing import Any

from bot.registry import COMMANDS, GROUP_HELP


class UsageError(Exception):
    """Bad command line. ``usage`` is the help of the (sub)command that was meant."""

    def __init__(self, message: str, usage: str = "", command: str = ""):
        super().__init__(message)
        self.message = message
        self.usage = usage
        self.command = command


class HelpRequested(Exception):
    def __init__(self, text: str, command: str = ""):
        super().__init__(text)
        self.text = text
        self.command = command


@dataclass
class Command:
    name: str
    args: dict[str, Any] = field(default_factory=dict)
    json: bool = False
    line: str = field(default="", compare=False)  # as typed, for the audit


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of printing and exiting."""

    def error(self, message):
        raise UsageError(message, self.format_help(), self.prog.partition(" ")[2])

    def exit(self, status=0, message=None):
        raise HelpRequested(self.format_help(), self.prog.partition(" ")[2])

    def print_help(self, file=None):
        raise HelpRequested(self.format_help(), self.prog.partition(" ")[2])


def build_parser(prog: str = "tfdesk") -> argparse.ArgumentParser:
    root = _Parser(prog=prog, description="tfdesk: a help desk for TensorFlow teams.",
                   formatter_class=argparse.RawDescriptionHelpFormatter)
    subs = {"": root.add_subparsers(dest="_cmd", metavar="COMMAND", parser_class=_Parser)}
    parsers: dict[str, argparse.ArgumentParser] = {"": root}
    for name in sorted(COMMANDS, key=lambda n: (n.count(" "), n)):
        spec = COMMANDS[name]
        parts = name.split(" ")
        for depth in range(1, len(parts)):
            prefix = " ".join(parts[:depth])
            if prefix not in parsers:
                parent = " ".join(parts[:depth - 1])
                p = subs[parent].add_parser(parts[depth - 1], help=GROUP_HELP.get(prefix, ""),
                                            description=GROUP_HELP.get(prefix, ""))
                parsers[prefix] = p
                subs[prefix] = p.add_subparsers(dest=f"_cmd{depth}", metavar="SUBCOMMAND",
                                                parser_class=_Parser)
        parent = " ".join(parts[:-1])
        epilog = ("examples:\n" + "\n".join(f"  {e}" for e in spec.examples)) if spec.examples else None
        p = subs[parent].add_parser(parts[-1], help=spec.help, description=spec.description,
                                    epilog=epilog,
                                    formatter_class=argparse.RawDescriptionHelpFormatter)
        for flags, kwargs in spec.args:
            p.add_argument(*flags, **{k: v for k, v in kwargs.items()
                                      if k not in ("path", "after_dashes")})
        p.add_argument("--json", action="store_true", help="answer with structured JSON")
        p.set_defaults(_command=name)
        parsers[name] = p
    return root


_PARSER: tuple[int, argparse.ArgumentParser] | None = None


def parser() -> argparse.ArgumentParser:
    """The parser of the command table as loaded at start (bot.commands.load); rebuilt only
    when the table changed since."""
    global _PARSER
    if not COMMANDS:
        raise RuntimeError("no commands are loaded: the process's edge calls "
                           "bot.commands.load() once at start")
    if _PARSER is None or _PARSER[0] != len(COMMANDS):
        _PARSER = (len(COMMANDS), build_parser())
    return _PARSER[1]


# Commands whose words are free text (a question, a pasted error or traceback): quotes,
# apostrophes and newlines there are the text, not shell syntax. Options may close the line.
FREE_TEXT = ("ask",)
_TRAILING_OPTION = re.compile(r"\s+(--json|(?:--version|-v|--limit|-k)\s+\S+)\s*$")
_LEADING_OPTION = re.compile(r"^\s*(--json|(?:--version|-v|--limit|-k)\s+\S+)(?=\s)")
_QUOTES = ("\"", "'")


def _unwrap(text: str) -> str:
    """A question typed in one pair of quotes (as a shell would need) is the words inside."""
    if len(text) >= 2 and text[0] == text[-1] and text[0] in _QUOTES \
            and text[0] not in text[1:-1]:
        return text[1:-1]
    return text


def split(line: str) -> list[str]:
    head, _, rest = line.strip().partition(" ")
    if head in FREE_TEXT and any(c in rest for c in "'\"\n\\#`"):
        options: list[str] = []
        while (m := _LEADING_OPTION.search(rest)) is not None:
            options += m.group(1).split()
            rest = rest[m.end():]
        while (m := _TRAILING_OPTION.search(rest)) is not None:
            options[:0] = m.group(1).split()
            rest = rest[:m.start()]
        return [head, *options, "--", _unwrap(rest.strip())]
    try:
        return shlex.split(line)
    except ValueError as exc:  # unbalanced quotes
        raise UsageError(f"could not read the command line: {exc}") from None


def _after_dashes(argv: list[str]) -> tuple[list[str], tuple[str, list[str]] | None]:
    """``train s.py --workers 2 -- --lr 0.1``: for a command with an ``after_dashes``
    argument, everything after the first ``--`` is that argument's, as given (argparse alone
    would hand a ``nargs="*"`` positional nothing once the one before it matched)."""
    if "--" not in argv:
        return argv, None
    cut = argv.index("--")
    try:
        name = vars(parser().parse_known_args(argv[:cut])[0]).get("_command")
    except (UsageError, HelpRequested):
        return argv, None
    spec = COMMANDS.get(name or "")
    for flags, kwargs in (spec.args if spec else []):
        if kwargs.get("after_dashes"):
            return argv[:cut], (kwargs.get("dest") or flags[0], argv[cut + 1:])
    return argv, None


def parse(line: str | list[str]) -> Command:
    argv = split(line) if isinstance(line, str) else list(line)
    if not argv:
        raise UsageError("no command given", parser().format_help())
    argv, after = _after_dashes(argv)
    ns, extra = parser().parse_known_args(argv)
    values = vars(ns)
    name = values.pop("_command", None)
    if extra:
        # argparse reports a sub-command's unknown option from the top-level parser, with the
        # list of every command; the command's own usage is what helps.
        raise UsageError(f"unrecognized arguments: {' '.join(extra)}",
                         command_help(name) if name else parser().format_help(), name or "")
    if name is None:  # a group without its sub-command, e.g. "kb"
        group = " ".join(a for a in argv if not a.startswith("-"))
        raise UsageError(f"{group!r} needs a sub-command", parser().format_help(), group)
    as_json = values.pop("json", False)
    args = {k: v for k, v in values.items() if not k.startswith("_cmd")}
    if after is not None:
        args[after[0]] = after[1]
    return Command(name, args, as_json, line if isinstance(line, str) else shlex.join(argv))


def command_help(name: str) -> str:
    """Help text of one command or group ('' for the top level)."""
    try:
        parse((name.split() if name else []) + ["--help"])
    except HelpRequested as h:
        return h.text
    except UsageError as u:
        return u.usage
    return ""
