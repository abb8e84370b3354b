"""The command set, loaded once when a process starts.

Handler modules declare their commands with :func:`bot.registry.command`; importing them fills
the table. The process's edge (``bot.cli.main``, and through it the console and ``serve``; a
test session's conftest) calls :func:`load` once. The plumbing (parser, dispatch, services,
Slack) only reads the filled table and never imports a handler, so the import graph runs one
way: edge -> handlers -> plumbing.
"""
from __future__ import annotations

from bot.registry import COMMANDS, CommandSpec


def load() -> dict[str, CommandSpec]:
    """Fill the command table (once; later calls return the same table)."""
    import bot.handlers  # noqa: F401  (each handler module registers its commands)
    return COMMANDS


def security_page_table() -> str:
    """The permission table as site_docs/admin/security.md holds it."""
    from bot.permissions import markdown_table
    return markdown_table(load())


if __name__ == "__main__":  # python -m bot.commands: the table for the security page
    print(security_page_table())
