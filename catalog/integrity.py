"""Catalog integrity: every entry resolves. A model's files exist, a local dataset's path
exists, a local environment's interpreter exists, and what a pipeline names is in the catalog.

Two uses, one set of rules: :func:`holding` says which entries point into a folder (a job's,
before it is deleted: the delete is refused while any does), and :func:`check` lists the
entries that no longer resolve (``tfdesk catalog check``), removing with ``repair`` those
whose files are gone for good.
"""
from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

from catalog.lookup import KINDS
from catalog.store import transaction


@dataclass(frozen=True)
class Dangling:
    kind: str        # model, dataset, environment, pipeline
    ref: str         # NAME or NAME:VERSION
    why: str
    repairable: bool  # repair removes the entry (its files are gone; nothing else names it)

    def __str__(self) -> str:
        return f"{self.kind} {self.ref}: {self.why}"


def _local(uri: str) -> Path | None:
    """The local path a URI names (None: remote, pvc://, s3://, ...)."""
    if not uri:
        return None
    if uri.startswith("file://"):
        return Path(uri[len("file://"):])
    return None if "://" in uri else Path(uri)


def _inside(path: Path, folder: Path) -> bool:
    try:
        return path.resolve().is_relative_to(folder.resolve())
    except (OSError, RuntimeError):
        return False


# kind -> (table, the column naming a local path, the column(s) making its ref)
PATHS = {"model": ("catalog_models", "artifact_uri"),
         "dataset": ("catalog_datasets", "uri"),
         "environment": ("catalog_environments", "python")}


def _ref(kind: str, row) -> str:
    return f"{row['name']}:{row['version']}" if KINDS[kind].versioned else row["name"]


def holding(conn: sqlite3.Connection, folder: Path | str) -> list[str]:
    """Entries whose files are inside ``folder`` ("model m:2", "dataset d", ...), and
    pipelines whose definition names a path inside it."""
    folder = Path(folder)
    out = []
    for kind, (table, column) in PATHS.items():
        for row in conn.execute(f"SELECT * FROM {table} WHERE {column} != '' ORDER BY id"):
            path = _local(row[column])
            if path is not None and _inside(path, folder):
                out.append(f"{kind} {_ref(kind, row)}")
    text = str(folder.resolve())
    for row in conn.execute("SELECT name FROM catalog_pipelines WHERE instr(definition, ?) > 0 "
                            "ORDER BY name", (text,)):
        out.append(f"pipeline {row['name']}")
    return out


def check(conn: sqlite3.Connection, repair: bool = False) -> list[Dangling]:
    """Entries that do not resolve. With ``repair``, those whose files are gone and that
    nothing depends on are removed, and what is left is returned (a model's derived versions
    keep their own files; their parent link is cleared by the schema)."""
    found: list[Dangling] = []
    for kind, (table, column) in PATHS.items():
        for row in conn.execute(f"SELECT * FROM {table} WHERE {column} != '' ORDER BY id"):
            path = _local(row[column])
            if path is not None and not path.exists():
                found.append(Dangling(kind, _ref(kind, row), f"{path} does not exist",
                                      kind != "environment"))
    for row in conn.execute(
            "SELECT p.name AS pipeline, r.kind, r.name FROM catalog_pipeline_refs r "
            "JOIN catalog_pipelines p ON p.id = r.pipeline_id ORDER BY p.name, r.kind, r.name"):
        k = KINDS.get(row["kind"])
        if k is None:
            continue
        name = row["name"].partition(":")[0] if k.versioned else row["name"]
        if conn.execute(f"SELECT 1 FROM {k.table} WHERE name = ?", (name,)).fetchone() is None:
            found.append(Dangling("pipeline", row["pipeline"],
                                  f"names {row['kind']} {row['name']}, which is not in the "
                                  "catalog", False))
    if repair:
        left = _repair(conn, [d for d in found if d.repairable])
        return [d for d in found if not d.repairable or d in left]
    return found


def _repair(conn: sqlite3.Connection, gone: list[Dangling]) -> list[Dangling]:
    """Remove what is gone; an entry something still depends on (a pipeline, a running job)
    is left and stays reported."""
    from catalog import datasets, models
    from catalog.errors import HasDependants
    left = []
    for d in gone:
        try:
            with transaction(conn):
                (models if d.kind == "model" else datasets).delete(conn, d.ref)
        except HasDependants:
            left.append(d)
    return left
