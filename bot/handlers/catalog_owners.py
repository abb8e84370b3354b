"""Whose catalog entries are whose: the checks the catalog commands make before they delete,
replace or add a version of something, and the folders no one registers as a model."""
from __future__ import annotations

from pathlib import Path

from bot.context import Context
from bot.permissions import check_owner

VERSIONED = ("models", "components")


def db(ctx: Context):
    return ctx.services.catalog


def owners(ctx: Context, kind: str, name: str) -> list[str]:
    """Who owns the entries ``kind delete NAME`` would delete (every version of a bare name)."""
    from catalog.names import split_ref
    table = f"catalog_{kind}"
    if kind in VERSIONED:
        base, version = split_ref(name, kind[:-1])
        sql, params = f"SELECT owner FROM {table} WHERE name = ?", [base]
        if version is not None:
            sql, params = sql + " AND version = ?", params + [version]
    else:
        sql, params = f"SELECT owner FROM {table} WHERE name = ?", [name]
    return [r[0] for r in db(ctx).execute(sql, params)]


def check_owners(ctx: Context, kind: str, name: str, action: str = "delete") -> None:
    for owner in owners(ctx, kind, name):
        check_owner(ctx.actor, owner, f"{kind[:-1]} {name!r}", action)


def first_owner(ctx: Context, kind: str, name: str) -> None:
    """A new version of NAME changes what NAME (its latest version) means to everyone using it:
    only the one who created NAME, or an admin, may add one."""
    row = db(ctx).execute(f"SELECT owner FROM catalog_{kind} WHERE name = ? ORDER BY version "
                          "LIMIT 1", (name,)).fetchone()
    if row is not None:
        check_owner(ctx.actor, row[0], f"{kind[:-1]} {name!r}", "add a version to")


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
