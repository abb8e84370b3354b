"""Datasets: a name for data that lives somewhere (local path, PVC, S3, GCS)."""
from __future__ import annotations

import os
import re
import sqlite3
from pathlib import Path
from typing import Any

from catalog import entries, lookup
from catalog.kept import release
from catalog.errors import Duplicate, HasDependants, InvalidInput
from catalog.names import check_name
from catalog.store import now, transaction
from core import filegate

KIND = "dataset"
SCHEMES = filegate.REMOTE_SCHEMES
FORMATS = ("tfrecord", "csv", "npz", "npy", "parquet", "json", "jsonl", "images", "text",
           "saved-data", "other")
# File suffix -> format, for when --format is not given.
SUFFIX_FORMATS = {".tfrecord": "tfrecord", ".tfrecords": "tfrecord", ".csv": "csv",
                  ".npz": "npz", ".npy": "npy", ".parquet": "parquet", ".json": "json",
                  ".jsonl": "jsonl", ".txt": "text"}
REMOTE_RE = {
    "pvc": re.compile(r"pvc://(?P<claim>[a-z0-9]([-a-z0-9]*[a-z0-9])?)(?P<path>/.*)?"),
    "s3": re.compile(r"s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](/.*)?"),
    "gs": re.compile(r"gs://[a-z0-9][a-z0-9._-]{1,220}[a-z0-9](/.*)?"),
}


def normalise_uri(uri: str) -> tuple[str, Path | None]:
    """-> (stored URI, local path or None). A remote URI's scheme is one of the gate's
    allow-list (any case, stored lower-case) and is never turned into a local path: file://
    and unknown schemes are refused. Local paths (the operator's; a member's arrive as the
    file gate's private copy) must exist and become absolute."""
    if not uri or not uri.strip():
        raise InvalidInput("dataset URI must not be empty")
    uri = uri.strip()
    if "://" in uri:
        scheme = filegate.uri_scheme(uri)
        if scheme not in SCHEMES:
            raise InvalidInput(f"unsupported URI scheme {scheme[:40]!r} in {uri[:200]!r}: use a "
                               "local path, pvc://, s3:// or gs:// (a file:// URI is never a "
                               "local path)")
        try:
            uri = filegate.remote_uri(uri)
        except filegate.GateRefused as exc:
            raise InvalidInput(str(exc)) from None
        scheme = uri.split("://", 1)[0]
        if not REMOTE_RE[scheme].fullmatch(uri):
            examples = {"pvc": "pvc://claim-name/path/in/volume", "s3": "s3://bucket/key",
                        "gs": "gs://bucket/object"}
            raise InvalidInput(f"{uri!r} is not a valid {scheme}:// URI (expected "
                               f"{examples[scheme]})")
        return uri, None
    path = Path(uri).expanduser().resolve()
    if not path.exists():
        raise InvalidInput(f"local dataset path {str(path)!r} does not exist")
    return str(path), path


def local_size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    total = 0
    for root, _dirs, files in os.walk(path):
        for f in files:
            try:
                total += os.stat(os.path.join(root, f)).st_size
            except OSError:
                pass
    return total


def guess_format(uri: str, path: Path | None) -> str:
    suffix = Path(uri).suffix.lower()
    if suffix in SUFFIX_FORMATS:
        return SUFFIX_FORMATS[suffix]
    if path is not None and path.is_dir():
        return "images" if any(p.suffix.lower() in {".png", ".jpg", ".jpeg"}
                               for p in list(path.iterdir())[:50]) else "other"
    return "other"


def add(conn: sqlite3.Connection, name: str, uri: str, owner: str, format: str | None = None,
        description: str = "", size_bytes: int | None = None, project: str | None = None,
        tags=None) -> dict[str, Any]:
    check_name(name, "dataset name")
    stored, local = normalise_uri(uri)
    fmt = (format or guess_format(stored, local)).lower()
    if fmt not in FORMATS:
        raise InvalidInput(f"unknown dataset format {fmt!r}; one of: {', '.join(FORMATS)}")
    if size_bytes is not None and size_bytes < 0:
        raise InvalidInput("size must not be negative")
    if local is not None:
        size_bytes = local_size(local)
    with transaction(conn):
        if conn.execute("SELECT 1 FROM catalog_datasets WHERE name = ?", (name,)).fetchone():
            raise Duplicate(f"a dataset named {name!r} already exists "
                            f"(see 'datasets show {name}')")
        pid = entries.project_id(conn, project)
        cur = conn.execute(
            "INSERT INTO catalog_datasets (name, uri, format, description, owner, size_bytes, "
            "project_id, created) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (name, stored, fmt, description or "", owner, size_bytes, pid, now()))
        entries.set_tags(conn, KIND, cur.lastrowid, tags or [])
    return get(conn, name)


def get(conn: sqlite3.Connection, name: str) -> dict[str, Any]:
    row = lookup.row(conn, KIND, name)
    d = entries.to_dicts(conn, KIND, [row])[0]
    d["used_by"] = dependants(conn, row)
    d["models"] = [f"{r['name']}:{r['version']}" for r in conn.execute(
        "SELECT name, version FROM catalog_models WHERE dataset_id = ? ORDER BY id", (row["id"],))]
    if d["uri"].startswith("pvc://"):
        m = REMOTE_RE["pvc"].fullmatch(d["uri"])
        d["mount"] = {"claim": m.group("claim"), "path": m.group("path") or "/"}
    return d


def list_(conn: sqlite3.Connection, project=None, tag=None, owner=None, search=None,
          limit=50, offset=0) -> list[dict[str, Any]]:
    rows = entries.list_rows(conn, "catalog_datasets", KIND, project=project, tag=tag,
                             owner=owner, search=search, limit=limit, offset=offset)
    return entries.to_dicts(conn, KIND, rows)


def dependants(conn, row) -> list[str]:
    return entries.dependants(conn, KIND, row)


def delete(conn: sqlite3.Connection, name: str, force: bool = False,
           kept_dir: Path | None = None) -> dict[str, Any]:
    """The data itself is never touched: a dataset entry only points at it. Only a file gate
    copy under ``kept_dir`` that no other entry points at goes with it (catalog/kept.py)."""
    with transaction(conn):
        row = lookup.row(conn, KIND, name)
        deps = dependants(conn, row)
        if deps and not force:
            raise HasDependants(f"dataset {row['name']!r}", deps)
        entries.drop_tags(conn, KIND, row["id"])
        conn.execute("DELETE FROM catalog_uses WHERE kind = ? AND item_id = ?", (KIND, row["id"]))
        conn.execute("DELETE FROM catalog_datasets WHERE id = ?", (row["id"],))
    # the copy goes only after the row is gone for good (a failed commit keeps both)
    removed = release(conn, kept_dir, [row["uri"]])
    return {"deleted": f"dataset {row['name']}", "dependants": deps, "copies_removed": removed}
