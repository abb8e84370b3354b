"""Export and import of the whole catalog as one JSON document (backups, moving installs).

Import is all-or-nothing: entries are checked as they are added, inside one transaction, and
any problem (a duplicate name, a bad entry) rolls everything back and is reported.
"""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from catalog.errors import Duplicate, InvalidInput
from catalog.store import SCHEMA_VERSION, transaction

FORMAT = "tfdesk-catalog"
# Export order is import order: what others point at comes first.
TABLES = ["catalog_projects", "catalog_channel_projects", "catalog_project_jobs",
          "catalog_datasets", "catalog_environments", "catalog_components", "catalog_models",
          "catalog_pipelines", "catalog_pipeline_refs", "catalog_runs", "catalog_run_steps",
          "catalog_tags"]
# Entries whose names must not clash with what is already here.
NAMED = {"catalog_projects": ("name",), "catalog_datasets": ("name",),
         "catalog_environments": ("name",), "catalog_pipelines": ("name",),
         "catalog_components": ("name", "version"), "catalog_models": ("name", "version")}
# Integer ids that are remapped on import: table -> {column: table it points at}.
ID_LINKS = {
    "catalog_channel_projects": {"project_id": "catalog_projects"},
    "catalog_project_jobs": {"project_id": "catalog_projects"},
    "catalog_datasets": {"project_id": "catalog_projects"},
    "catalog_environments": {"project_id": "catalog_projects"},
    "catalog_components": {"project_id": "catalog_projects"},
    "catalog_models": {"project_id": "catalog_projects", "parent_id": "catalog_models",
                       "dataset_id": "catalog_datasets"},
    "catalog_pipelines": {"project_id": "catalog_projects"},
    "catalog_pipeline_refs": {"pipeline_id": "catalog_pipelines"},
    "catalog_runs": {"project_id": "catalog_projects"},
}
TAG_TABLES = {"project": "catalog_projects", "dataset": "catalog_datasets",
              "environment": "catalog_environments", "component": "catalog_components",
              "model": "catalog_models", "pipeline": "catalog_pipelines"}


def export(conn: sqlite3.Connection) -> dict[str, Any]:
    doc: dict[str, Any] = {"format": FORMAT, "schema_version": SCHEMA_VERSION, "tables": {}}
    # One read transaction: a consistent snapshot even while jobs write.
    conn.execute("BEGIN")
    try:
        for table in TABLES:
            order = "id" if "id" in _columns(conn, table) else "1, 2"
            doc["tables"][table] = [dict(r) for r in
                                    conn.execute(f"SELECT * FROM {table} ORDER BY {order}")]
    finally:
        conn.execute("COMMIT")
    return doc


def export_file(conn: sqlite3.Connection, path: str | Path) -> dict[str, int]:
    path = Path(path)
    doc = export(conn)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(doc, indent=1, ensure_ascii=False), encoding="utf-8")
    tmp.replace(path)  # never a half-written backup under the real name
    return {t.removeprefix("catalog_"): len(rows) for t, rows in doc["tables"].items()}


def _columns(conn, table: str) -> list[str]:
    return [r["name"] for r in conn.execute(f"PRAGMA table_info({table})")]


def import_doc(conn: sqlite3.Connection, doc: Any) -> dict[str, int]:
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise InvalidInput(f"not a tfdesk catalog export (expected \"format\": \"{FORMAT}\")")
    # Older exports lack only columns added since (all nullable), so they import as they are.
    if doc.get("schema_version") not in range(1, SCHEMA_VERSION + 1):
        raise InvalidInput(f"catalog export has schema version {doc.get('schema_version')}; "
                           f"this tfdesk reads version {SCHEMA_VERSION}")
    tables = doc.get("tables")
    if not isinstance(tables, dict):
        raise InvalidInput("catalog export has no 'tables' mapping")
    unknown = sorted(set(tables) - set(TABLES))
    if unknown:
        raise InvalidInput(f"catalog export has unknown tables: {', '.join(unknown)}")
    counts: dict[str, int] = {}
    new_ids: dict[str, dict[int, int]] = {t: {} for t in TABLES}
    with transaction(conn):
        for table in TABLES:
            rows = tables.get(table, [])
            if not isinstance(rows, list):
                raise InvalidInput(f"{table}: expected a list of rows")
            cols = set(_columns(conn, table))
            for n, row in enumerate(rows):
                if not isinstance(row, dict) or set(row) - cols:
                    extra = sorted(set(row) - cols) if isinstance(row, dict) else []
                    raise InvalidInput(f"{table} row {n}: not a valid row"
                                       + (f" (unknown columns {', '.join(extra)})" if extra
                                          else ""))
                row = dict(row)
                if table == "catalog_environments" and row.get("owner") == "tfdesk":
                    # The built-in runner environment: every install makes its own.
                    here = conn.execute("SELECT id FROM catalog_environments WHERE name = ?",
                                        (row.get("name"),)).fetchone()
                    if here is not None:
                        new_ids[table][row.get("id")] = here["id"]
                        continue
                if table in NAMED:
                    keys = NAMED[table]
                    where = " AND ".join(f"{k} = ?" for k in keys)
                    if conn.execute(f"SELECT 1 FROM {table} WHERE {where}",
                                    [row.get(k) for k in keys]).fetchone():
                        label = ":".join(str(row.get(k)) for k in keys)
                        raise Duplicate(f"import refused: {table.removeprefix('catalog_')[:-1]} "
                                        f"{label!r} already exists here; nothing was imported")
                for col, target in ID_LINKS.get(table, {}).items():
                    if row.get(col) is not None:
                        row[col] = new_ids[target].get(row[col], row[col])
                if table == "catalog_tags":
                    target = TAG_TABLES.get(row.get("kind"))
                    if target is None:
                        raise InvalidInput(f"catalog_tags row {n}: unknown kind {row.get('kind')!r}")
                    row["item_id"] = new_ids[target].get(row["item_id"], row["item_id"])
                if table == "catalog_runs" and conn.execute(
                        "SELECT 1 FROM catalog_runs WHERE id = ?", (row.get("id"),)).fetchone():
                    raise Duplicate(f"import refused: pipeline run {row.get('id')!r} already "
                                    "exists here; nothing was imported")
                if table == "catalog_environments" and row.get("is_default"):
                    if conn.execute("SELECT 1 FROM catalog_environments WHERE is_default = 1 "
                                    "AND kind = ?", (row.get("kind"),)).fetchone():
                        row["is_default"] = 0  # this install keeps its own default
                old_id = row.pop("id", None) if "id" in cols and table != "catalog_runs" else None
                names = list(row)
                try:
                    verb = "INSERT OR IGNORE" if table == "catalog_tags" else "INSERT"
                    cur = conn.execute(f"{verb} INTO {table} ({', '.join(names)}) VALUES "
                                       f"({', '.join('?' * len(names))})",
                                       [row[k] for k in names])
                except sqlite3.IntegrityError as exc:
                    raise InvalidInput(f"{table} row {n} cannot be imported: {exc}; nothing was "
                                       "imported") from None
                if old_id is not None:
                    new_ids[table][old_id] = cur.lastrowid
            counts[table.removeprefix("catalog_")] = len(rows)
    return counts


def import_file(conn: sqlite3.Connection, path: str | Path) -> dict[str, int]:
    path = Path(path)
    if not path.is_file():
        raise InvalidInput(f"no file {str(path)!r} to import")
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"{path} is not valid JSON: {exc}") from None
    return import_doc(conn, doc)
