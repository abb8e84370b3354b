"""Components: reusable, versioned pipeline steps (a job kind with default parameters)."""
from __future__ import annotations

import json
import sqlite3
from typing import Any

from catalog import entries, lookup
from catalog.errors import HasDependants, InvalidInput, NotFound
from catalog.names import check_name, split_ref
from catalog.store import now, transaction

KIND = "component"
# The job kinds a step can run; the job engine implements them (see catalog.executor).
STEP_KINDS = ("convert-script", "train", "convert-model", "infer", "evaluate")


def check_kind(kind: str, kinds=STEP_KINDS) -> str:
    if kind not in kinds:
        raise InvalidInput(f"unknown step kind {kind!r}; one of: {', '.join(kinds)}")
    return kind


def add(conn: sqlite3.Connection, name: str, kind: str, owner: str, params: dict | None = None,
        description: str = "", project: str | None = None, tags=None) -> dict[str, Any]:
    check_name(name, "component name")
    check_kind(kind)
    params = params or {}
    if not isinstance(params, dict):
        raise InvalidInput("component parameters must be a mapping of names to values")
    from runners import specs  # the kind's parameters: what its steps may say in with:
    unknown = specs.unknown_parameters(kind, params) if kind in specs.STEP_SPECS else []
    if unknown:
        raise InvalidInput(f"{unknown[0]!r} is not a parameter of {kind} (it takes: "
                           f"{', '.join(specs.parameters(kind))})")
    with transaction(conn):
        row = conn.execute("SELECT MAX(version) AS v, MIN(kind) AS k FROM catalog_components "
                           "WHERE name = ?", (name,)).fetchone()
        if row["v"] and row["k"] != kind:
            raise InvalidInput(f"component {name!r} is a {row['k']} step; a new version cannot "
                               f"change it to {kind}")
        version = (row["v"] or 0) + 1
        pid = entries.project_id(conn, project)
        cur = conn.execute(
            "INSERT INTO catalog_components (name, version, kind, params, description, owner, "
            "project_id, created) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (name, version, kind, json.dumps(params, sort_keys=True), description or "", owner,
             pid, now()))
        entries.set_tags(conn, KIND, cur.lastrowid, tags or [])
    return get(conn, f"{name}:{version}")


def _dicts(conn, rows):
    out = entries.to_dicts(conn, KIND, rows, json_fields=("params",))
    for d in out:
        d["ref"] = f"{d['name']}:{d['version']}"
    return out


def get(conn: sqlite3.Connection, ref: str) -> dict[str, Any]:
    row = lookup.row(conn, KIND, ref)
    d = _dicts(conn, [row])[0]
    d["used_by"] = entries.pipelines_naming(conn, KIND, row["name"])
    return d


def list_(conn: sqlite3.Connection, project=None, tag=None, owner=None, search=None,
          limit=50, offset=0) -> list[dict[str, Any]]:
    rows = entries.list_rows(conn, "catalog_components", KIND, project=project, tag=tag,
                             owner=owner, search=search, limit=limit, offset=offset)
    return _dicts(conn, rows)


def delete(conn: sqlite3.Connection, ref: str, force: bool = False) -> dict[str, Any]:
    name, version = split_ref(ref, "component")
    with transaction(conn):
        rows = ([lookup.row(conn, KIND, ref)] if version is not None else conn.execute(
            "SELECT * FROM catalog_components WHERE name = ?", (name,)).fetchall())
        if not rows:
            raise NotFound(f"no component {ref!r}; see 'components list'")
        deps = entries.pipelines_naming(conn, KIND, name)
        if deps and not force:
            raise HasDependants(f"component {ref!r}", deps)
        for row in rows:
            entries.drop_tags(conn, KIND, row["id"])
            conn.execute("DELETE FROM catalog_components WHERE id = ?", (row["id"],))
    return {"deleted": [f"component {r['name']}:{r['version']}" for r in rows],
            "dependants": deps}
