"""Projects group datasets, models, components, pipelines and jobs; a Slack channel can have
a default project."""
from __future__ import annotations

import sqlite3
from typing import Any

from catalog import entries, lookup
from catalog.errors import Duplicate, HasDependants
from catalog.names import check_name
from catalog.store import now, transaction

KIND = "project"
# Tables whose rows can belong to a project, with the word used in dependant lists.
MEMBER_TABLES = [("catalog_datasets", "dataset"), ("catalog_models", "model"),
                 ("catalog_components", "component"), ("catalog_pipelines", "pipeline"),
                 ("catalog_environments", "environment")]


def add(conn: sqlite3.Connection, name: str, owner: str, description: str = "",
        tags=None) -> dict[str, Any]:
    check_name(name, "project name")
    with transaction(conn):
        if conn.execute("SELECT 1 FROM catalog_projects WHERE name = ?", (name,)).fetchone():
            raise Duplicate(f"a project named {name!r} already exists")
        cur = conn.execute("INSERT INTO catalog_projects (name, description, owner, created) "
                           "VALUES (?, ?, ?, ?)", (name, description or "", owner, now()))
        entries.set_tags(conn, KIND, cur.lastrowid, tags or [])
    return get(conn, name)


def members(conn: sqlite3.Connection, project_id: int) -> list[str]:
    out = []
    for table, word in MEMBER_TABLES:
        cols = "name, version" if table in ("catalog_models", "catalog_components") else "name"
        for r in conn.execute(f"SELECT {cols} FROM {table} WHERE project_id = ? ORDER BY name",
                              (project_id,)):
            out.append(f"{word} {r['name']}" + (f":{r['version']}" if "version" in r.keys() else ""))
    return out


def get(conn: sqlite3.Connection, name: str) -> dict[str, Any]:
    row = lookup.row(conn, KIND, name)
    d = entries.to_dicts(conn, KIND, [row])[0]
    d["members"] = members(conn, row["id"])
    d["jobs"] = [r["job_id"] for r in conn.execute(
        "SELECT job_id FROM catalog_project_jobs WHERE project_id = ? ORDER BY job_id",
        (row["id"],))]
    d["channels"] = [r["channel"] for r in conn.execute(
        "SELECT channel FROM catalog_channel_projects WHERE project_id = ?", (row["id"],))]
    return d


def list_(conn: sqlite3.Connection, tag=None, owner=None, search=None, limit=50,
          offset=0) -> list[dict[str, Any]]:
    rows = entries.list_rows(conn, "catalog_projects", KIND, tag=tag, owner=owner,
                             search=search, limit=limit, offset=offset)
    return entries.to_dicts(conn, KIND, rows)


def delete(conn: sqlite3.Connection, name: str, force: bool = False) -> dict[str, Any]:
    """Refused while anything belongs to the project; forced, the members stay but leave it."""
    with transaction(conn):
        row = lookup.row(conn, KIND, name)
        deps = members(conn, row["id"])
        if deps and not force:
            raise HasDependants(f"project {name!r}", deps)
        for table, _ in MEMBER_TABLES + [("catalog_runs", "run")]:
            conn.execute(f"UPDATE {table} SET project_id = NULL WHERE project_id = ?", (row["id"],))
        entries.drop_tags(conn, KIND, row["id"])
        conn.execute("DELETE FROM catalog_projects WHERE id = ?", (row["id"],))
    return {"deleted": f"project {row['name']}", "detached": deps}


def set_channel_default(conn: sqlite3.Connection, channel: str, project: str | None) -> None:
    with transaction(conn):
        if project is None:
            conn.execute("DELETE FROM catalog_channel_projects WHERE channel = ?", (channel,))
            return
        pid = lookup.row(conn, KIND, project)["id"]
        conn.execute("INSERT INTO catalog_channel_projects (channel, project_id) VALUES (?, ?) "
                     "ON CONFLICT(channel) DO UPDATE SET project_id = excluded.project_id",
                     (channel, pid))


def channel_default(conn: sqlite3.Connection, channel: str | None) -> str | None:
    if not channel:
        return None
    row = conn.execute("SELECT p.name FROM catalog_channel_projects c JOIN catalog_projects p "
                       "ON p.id = c.project_id WHERE c.channel = ?", (channel,)).fetchone()
    return row["name"] if row else None


def add_job(conn: sqlite3.Connection, project: str, job_id: str) -> None:
    with transaction(conn):
        conn.execute("INSERT OR IGNORE INTO catalog_project_jobs VALUES (?, ?)",
                     (lookup.row(conn, KIND, project)["id"], job_id))
