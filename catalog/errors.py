"""Errors the catalog raises; all are user-facing (the bot shows their message as is)."""
from __future__ import annotations


class CatalogError(Exception):
    user_facing = True


class InvalidInput(CatalogError):
    pass


class NotFound(CatalogError):
    pass


class Duplicate(CatalogError):
    pass


class HasDependants(CatalogError):
    """Refused delete; ``dependants`` lists what still uses the entry (``kind name`` strings)."""

    def __init__(self, what: str, dependants: list[str]):
        self.dependants = list(dependants)
        listing = "\n".join(f"  - {d}" for d in self.dependants)
        super().__init__(f"{what} is still used by:\n{listing}\n"
                         "Delete or change those first, or add --force.")
