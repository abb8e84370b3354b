"""Finding one catalog entry by name, for every kind: the single lookup the kinds share.

Kinds differ only in data (their table, whether names carry versions, the word used in
messages), so the rules are a table and one function reads them.
"""
from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from catalog.errors import NotFound
from catalog.names import check_name, split_ref


@dataclass(frozen=True)
class Kind:
    table: str
    word: str            # "model": in messages and name checks
    versioned: bool      # NAME[:VERSION]; a bare name is the latest version

    @property
    def listing(self) -> str:
        return f"{self.word}s list"


KINDS = {k.word: k for k in (
    Kind("catalog_datasets", "dataset", False),
    Kind("catalog_models", "model", True),
    Kind("catalog_environments", "environment", False),
    Kind("catalog_components", "component", True),
    Kind("catalog_projects", "project", False),
    Kind("catalog_pipelines", "pipeline", False),
)}


def kind_of(kind: str) -> Kind:
    """``model`` or ``models`` -> its Kind."""
    return KINDS[kind[:-1] if kind.endswith("s") and kind[:-1] in KINDS else kind]


def row(conn: sqlite3.Connection, kind: str, ref: str) -> sqlite3.Row:
    """The entry ``ref`` names (``NAME``, or ``NAME[:VERSION]`` for versioned kinds), or
    NotFound saying which names exist."""
    k = kind_of(kind)
    if not k.versioned:
        check_name(ref, f"{k.word} name")
        found = conn.execute(f"SELECT * FROM {k.table} WHERE name = ?", (ref,)).fetchone()
        if found is None:
            raise NotFound(f"no {k.word} named {ref!r}; see '{k.listing}'")
        return found
    name, version = split_ref(ref, k.word)
    if version is None:
        found = conn.execute(f"SELECT * FROM {k.table} WHERE name = ? ORDER BY version DESC "
                             "LIMIT 1", (name,)).fetchone()
    else:
        found = conn.execute(f"SELECT * FROM {k.table} WHERE name = ? AND version = ?",
                             (name, version)).fetchone()
    if found is None:
        hint = ""
        if version is not None:
            have = [r["version"] for r in reversed(versions(conn, kind, name))]
            if have:
                hint = f" (versions: {', '.join(map(str, have))})"
        raise NotFound(f"no {k.word} {ref!r}{hint}; see '{k.listing}'")
    return found


def versions(conn: sqlite3.Connection, kind: str, name: str) -> list[sqlite3.Row]:
    """Every version of ``name`` of a versioned kind, newest first ([] when none)."""
    k = kind_of(kind)
    return conn.execute(f"SELECT * FROM {k.table} WHERE name = ? ORDER BY version DESC",
                        (name,)).fetchall()


def owners(conn: sqlite3.Connection, kind: str, ref: str) -> list[str]:
    """Who owns the entries a delete of ``ref`` would remove (every version of a bare name of
    a versioned kind); [] when there are none."""
    k = kind_of(kind)
    sql, params = f"SELECT owner FROM {k.table} WHERE name = ?", [ref]
    if k.versioned:
        name, version = split_ref(ref, k.word)
        params = [name]
        if version is not None:
            sql, params = sql + " AND version = ?", [name, version]
    return [r[0] for r in conn.execute(sql, params)]


def first_owner(conn: sqlite3.Connection, kind: str, name: str) -> str | None:
    """Who created ``name`` (its first version): the one who may add versions to it."""
    k = kind_of(kind)
    order = " ORDER BY version" if k.versioned else ""
    found = conn.execute(f"SELECT owner FROM {k.table} WHERE name = ?{order} LIMIT 1",
                         (name,)).fetchone()
    return found[0] if found is not None else None
