"""The local console: the same commands as ``tfdesk``/``/tf``, typed at a prompt."""
from __future__ import annotations

import sys

from bot.config import Config
from bot.dispatch import run_line
from bot.terminal import emit, make_progress_context

BANNER = """tfdesk console: type a command as you would after /tf in Slack or tfdesk in a terminal.
Try: ask pad a tensor with zeros | history tf.keras.Model.fit | diff 2.15 2.16 --module tf.keras
'help' lists every command; 'quit' or Ctrl-D leaves."""


TRACEBACK = "Traceback (most recent call last)"


def _rest_of_traceback(first: str, stdin, interactive: bool) -> str:
    """A pasted traceback arrives a line at a time: read on to its error line (the first
    line that is not indented and not a frame), or to a blank line or the end."""
    lines = [first]
    while True:
        try:
            more = input("") if interactive else stdin.readline()
        except EOFError:
            break
        if not more or not more.strip():
            break
        lines.append(more.rstrip("\n"))
        if not more[:1].isspace() and not more.startswith(("Traceback", "During handling",
                                                             "The above exception")):
            break
    return "\n".join(lines)


def console_loop(config: Config, stdin=None, stdout=None, services=None) -> int:
    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout
    interactive = stdin.isatty()
    if interactive:
        try:
            import readline  # noqa: F401  (line editing and history)
        except ImportError:
            pass
    print(BANNER, file=stdout, flush=True)
    ctx, progress = make_progress_context(config, services=services)
    ctx.console = True
    while True:
        if interactive:
            try:
                line = input("tfdesk> ")
            except EOFError:
                print(file=stdout)
                return 0
        else:
            print("tfdesk> ", end="", file=stdout, flush=True)
            line = stdin.readline()
            if not line:
                return 0
        line = line.strip()
        if line.startswith("/tf "):
            line = line[4:]
        if line.startswith("ask ") and TRACEBACK in line:
            line = _rest_of_traceback(line, stdin, interactive)
        if not line:
            continue
        if line in {"quit", "exit"}:
            return 0
        with progress:
            command, reply = run_line(ctx, line)
        emit(reply, as_json=bool(command and command.json), out=stdout, err=stdout)
        stdout.flush()
