"""What every kind of catalog entry shares: tags, projects, owner filters, rows as dicts."""
from __future__ import annotations

import json
import sqlite3
from datetime import datetime, timezone
from typing import Any, Iterable

from catalog.errors import NotFound
from catalog.names import check_name, check_tags
from catalog.store import SEARCHABLE, fts_table

DEFAULT_LIMIT = 50
MAX_LIMIT = 1000


def iso(ts: float | None) -> str | None:
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, timezone.utc).isoformat(timespec="seconds")


def project_id(conn: sqlite3.Connection, name: str | None) -> int | None:
    if not name:
        return None
    check_name(name, "project name")
    row = conn.execute("SELECT id FROM catalog_projects WHERE name = ?", (name,)).fetchone()
    if row is None:
        raise NotFound(f"no project named {name!r}; create it with "
                       f"'projects add {name}' or see 'projects list'")
    return row["id"]


def set_tags(conn: sqlite3.Connection, kind: str, item_id: int, tags: Iterable[str]) -> None:
    conn.execute("DELETE FROM catalog_tags WHERE kind = ? AND item_id = ?", (kind, item_id))
    conn.executemany("INSERT INTO catalog_tags (kind, tag, item_id) VALUES (?, ?, ?)",
                     [(kind, t, item_id) for t in check_tags(list(tags))])


def drop_tags(conn: sqlite3.Connection, kind: str, item_id: int) -> None:
    conn.execute("DELETE FROM catalog_tags WHERE kind = ? AND item_id = ?", (kind, item_id))


def tags_of(conn: sqlite3.Connection, kind: str, ids: list[int]) -> dict[int, list[str]]:
    out: dict[int, list[str]] = {i: [] for i in ids}
    if not ids:
        return out
    marks = ",".join("?" * len(ids))
    for row in conn.execute(f"SELECT item_id, tag FROM catalog_tags WHERE kind = ? AND "
                            f"item_id IN ({marks}) ORDER BY tag", (kind, *ids)):
        out[row["item_id"]].append(row["tag"])
    return out


def project_names(conn: sqlite3.Connection, ids: Iterable[int | None]) -> dict[int, str]:
    ids = sorted({i for i in ids if i is not None})
    if not ids:
        return {}
    marks = ",".join("?" * len(ids))
    return {r["id"]: r["name"] for r in
            conn.execute(f"SELECT id, name FROM catalog_projects WHERE id IN ({marks})", ids)}


def to_dicts(conn: sqlite3.Connection, kind: str, rows: list[sqlite3.Row],
             json_fields: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """Rows -> plain dicts with tags, project name and ISO timestamps (what --json prints)."""
    ids = [r["id"] for r in rows]
    tags = tags_of(conn, kind, ids)
    keys = rows[0].keys() if rows else []
    projects = project_names(conn, (r["project_id"] for r in rows)) if "project_id" in keys else {}
    out = []
    for r in rows:
        d = dict(r)
        for f in json_fields:
            if d.get(f) is not None:
                d[f] = json.loads(d[f])
        if "project_id" in d:
            d["project"] = projects.get(d.pop("project_id"))
        for f in ("created", "finished", "started"):
            if f in d:
                d[f] = iso(d[f])
        d["tags"] = tags[r["id"]]
        out.append(d)
    return out


def list_rows(conn: sqlite3.Connection, table: str, kind: str, *, project: str | None = None,
              tag: str | None = None, owner: str | None = None, search: str | None = None,
              where: list[str] | None = None, params: list[Any] | None = None,
              limit: int = DEFAULT_LIMIT, offset: int = 0) -> list[sqlite3.Row]:
    """Newest first. Every filter is indexed (project, owner, tag) so a page of 50 stays fast."""
    where = list(where or [])
    params = list(params or [])
    source, order = f"{table} x", "x.id"
    narrowed = bool(tag or project or owner)
    if tag:
        tag = check_tags(tag)[0] if check_tags(tag) else tag
        if narrowed and (project or owner):
            # The project or owner index leads (newest first, no sort); each row's tag is one
            # primary-key probe. (A join here makes SQLite probe the secondary tag index,
            # several times slower.)
            where.insert(0, "EXISTS (SELECT 1 FROM catalog_tags t WHERE t.kind = ? AND "
                            "t.tag = ? AND t.item_id = x.id)")
        else:
            # A tag alone: walk the tag index backwards (item_id = x.id), no sort step.
            source += " JOIN catalog_tags t ON t.kind = ? AND t.tag = ? AND t.item_id = x.id"
            order = "t.item_id"
        params = [kind, tag, *params]
    if project:
        where.append("x.project_id = ?")
        params.append(project_id(conn, project))
    if owner:
        where.append("x.owner = ?")
        params.append(owner)
    if search and len(search) >= 3 and table in SEARCHABLE and not narrowed:
        # The trigram index finds substrings of 3+ characters (a quoted phrase is one), any
        # case. Walking its matches newest first stops at the page's last row, so common
        # and rare words both cost little.
        fts = fts_table(table)
        source = f"{fts} f JOIN {table} x ON x.id = f.rowid"
        order = "f.rowid"
        where.append(f"{fts} MATCH ?")
        params.append('"' + search.replace('"', '""') + '"')
    elif search:
        # Under a project, owner or tag filter the rows are already few: matching text on
        # them beats intersecting with every index match. (Also 1-2 characters: too short
        # for the trigram index.)
        where.append("(x.name LIKE ? ESCAPE '\\' OR x.description LIKE ? ESCAPE '\\')")
        pattern = "%" + search.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        params += [pattern, pattern]
    limit = max(1, min(int(limit), MAX_LIMIT))
    sql = (f"SELECT x.* FROM {source}"
           + (" WHERE " + " AND ".join(where) if where else "")
           + f" ORDER BY {order} DESC LIMIT ? OFFSET ?")
    return conn.execute(sql, (*params, limit, max(0, int(offset)))).fetchall()


def uses_of(conn: sqlite3.Connection, kind: str, item_id: int) -> list[str]:
    return [r["user"] for r in conn.execute(
        "SELECT user FROM catalog_uses WHERE kind = ? AND item_id = ? ORDER BY user",
        (kind, item_id))]


def dependants(conn: sqlite3.Connection, kind: str, row) -> list[str]:
    """Who relies on an entry: pipelines that name it, then recorded uses (jobs, runs)."""
    return pipelines_naming(conn, kind, row["name"]) + uses_of(conn, kind, row["id"])


def pipelines_naming(conn: sqlite3.Connection, kind: str, name: str) -> list[str]:
    return [f"pipeline {r['name']}" for r in conn.execute(
        "SELECT p.name FROM catalog_pipeline_refs r JOIN catalog_pipelines p "
        "ON p.id = r.pipeline_id WHERE r.kind = ? AND r.name = ? ORDER BY p.name",
        (kind, name))]


def mark_use(conn: sqlite3.Connection, kind: str, item_id: int, user: str) -> None:
    """Record that running work (``job J``, ``run R``) reads an entry; deletes wait for it."""
    conn.execute("INSERT OR IGNORE INTO catalog_uses (kind, item_id, user) VALUES (?, ?, ?)",
                 (kind, item_id, user))


def release_uses(conn: sqlite3.Connection, user: str) -> None:
    conn.execute("DELETE FROM catalog_uses WHERE user = ?", (user,))


def job_users(conn: sqlite3.Connection) -> list[str]:
    """Every ``job J`` holding an entry in use (to free those whose job ended)."""
    return [r["user"] for r in conn.execute(
        "SELECT DISTINCT user FROM catalog_uses WHERE user LIKE 'job %'")]
