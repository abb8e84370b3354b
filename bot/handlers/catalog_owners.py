"""Whose catalog entries are whose: the checks the catalog commands make before they delete,
replace or add a version of something, and the folders no one registers as a model."""
from __future__ import annotations

from pathlib import Path

from bot.context import Context
from bot.permissions import check_owner


def db(ctx: Context):
    return ctx.services.catalog


def check_owners(ctx: Context, kind: str, name: str, action: str = "delete") -> None:
    """Only the owner (or an admin) deletes or replaces what ``kind delete NAME`` names."""
    from catalog.lookup import owners
    for owner in owners(db(ctx), kind, name):
        check_owner(ctx.actor, owner, f"{kind[:-1]} {name!r}", action)


def first_owner(ctx: Context, kind: str, name: str) -> None:
    """A new version of NAME changes what NAME (its latest version) means to everyone using it:
    only the one who created NAME, or an admin, may add one."""
    from catalog.lookup import first_owner as creator
    owner = creator(db(ctx), kind, name)
    if owner is not None:
        check_owner(ctx.actor, owner, f"{kind[:-1]} {name!r}", "add a version to")


def model_store(ctx: Context) -> Path:
    """Where ``models add`` copies models: the only model files the catalog ever deletes."""
    return ctx.config.home / "catalog" / "models"


def not_tfdesk_folder(ctx: Context, path: Path) -> None:
    """A model is a file or a model's folder, never one of tfdesk's own folders (or one
    holding them): registering those would copy, or point the catalog at, everyone's work."""
    from bot.paths import Areas
    from catalog.errors import InvalidInput
    real = path.expanduser().resolve()
    for own in Areas.of(ctx.config).own_folders():
        if own.resolve().is_relative_to(real):
            raise InvalidInput(f"{path} is (or holds) tfdesk's own folder {own.name}/; "
                               "register a model's file or folder instead")
