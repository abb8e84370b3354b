"""help: list commands, or show one command's usage."""
from __future__ import annotations

from bot.registry import COMMANDS, arg, command
from bot.reply import Reply


@command("help", "list commands, or show one command's help",
         args=[arg("topic", nargs="*", help="a command, e.g. 'ask' or 'kb build'")],
         examples=["tfdesk help", "tfdesk help ask"], permission="read")
def help_(ctx, topic):
    from bot.parser import command_help
    name = " ".join(topic)
    if name and not any(c == name or c.startswith(name + " ") for c in COMMANDS):
        return Reply.error(f"no command {name!r}; try 'help' for the list",
                           {"commands": sorted(COMMANDS)})
    if name:
        text = command_help(name)
        return Reply(text=text, data={"command": name, "help": text})
    rows = [(n, COMMANDS[n].help) for n in sorted(COMMANDS)]
    width = max(len(n) for n, _ in rows)
    text = "Commands (add --json to any for structured output):\n" + "\n".join(
        f"  {n.ljust(width)}  {h}" for n, h in rows)
    return Reply(text=text, data={"commands": [{"name": n, "help": h} for n, h in rows]})
