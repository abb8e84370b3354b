"""Catalog entries as a job's read-only inputs (runners/inputs.py): the local paths of the
registered datasets and models, which every member may read (catalog entries are shared), and
a name -> path lookup for the faces. Remote URIs (pvc://, s3://, gs://) are never local paths."""
from __future__ import annotations

import sqlite3
from pathlib import Path

from catalog import lookup
from catalog.errors import InvalidInput, NotFound


def local_path(uri: str | None) -> Path | None:
    return Path(uri) if uri and "://" not in uri and Path(uri).is_absolute() else None


def readable_paths(conn: sqlite3.Connection) -> tuple[Path, ...]:
    """Every catalog dataset's and model's local path: what any asker may give a job."""
    rows = conn.execute("SELECT uri FROM catalog_datasets UNION ALL "
                        "SELECT artifact_uri FROM catalog_models").fetchall()
    return tuple(dict.fromkeys(p for (uri,) in rows if (p := local_path(uri)) is not None))


def entry_path(conn: sqlite3.Connection, ref: str) -> str:
    """A catalog dataset ``NAME`` or model ``NAME[:VERSION]`` -> its local path; NotFound
    when neither names one, or the entry's data is not on this machine."""
    for kind, column in (("dataset", "uri"), ("model", "artifact_uri")):
        try:
            found = lookup.row(conn, kind, ref)
        except (NotFound, InvalidInput):  # not a name of this kind
            continue
        path = local_path(found[column])
        if path is None:
            raise NotFound(f"{kind} {ref!r} is at {found[column]!r}, not on this machine; "
                           "a local job cannot read it")
        return str(path)
    raise NotFound(f"no dataset or model named {ref!r} in the catalog; see 'datasets list' "
                   "and 'models list'")
