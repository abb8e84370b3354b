"""Private copies catalog entries point at (``TFDESK_HOME/catalog/files/<copy>/``): the file
gate makes one when a member registers a file in place (``datasets add``, ``models add
--in-place``). A copy is kept while an entry points into it and removed with the last one,
so deleting entries leaves no orphaned copies and never pulls a copy from under another entry.
"""
from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path
from typing import Iterable

# (table, column) of every kind of entry that may point at a kept copy
POINTERS = (("catalog_models", "artifact_uri"), ("catalog_datasets", "uri"))


def copy_folder(kept: Path, uri: str | None) -> Path | None:
    """The kept copy ``uri`` points into (a folder directly below ``kept``), or None when it
    points anywhere else (a remote URI, the operator's own data, the model store)."""
    if not uri or "://" in uri:
        return None
    try:
        rel = Path(uri).relative_to(kept)
    except ValueError:
        return None
    if not rel.parts or rel.parts[0] in ("..", "."):
        return None
    return kept / rel.parts[0]


def still_used(conn: sqlite3.Connection, folder: Path) -> bool:
    """Does any entry still point at or into ``folder``?"""
    whole, prefix = str(folder), str(folder) + os.sep
    for table, column in POINTERS:
        # substr, not LIKE: '_' and '%' are ordinary characters in a path
        if conn.execute(f"SELECT 1 FROM {table} WHERE {column} = ? OR "
                        f"substr({column}, 1, ?) = ? LIMIT 1",
                        (whole, len(prefix), prefix)).fetchone():
            return True
    return False


def release(conn: sqlite3.Connection, kept: Path | None, uris: Iterable[str | None]
            ) -> list[str]:
    """After entries that pointed at ``uris`` were deleted (committed): remove the kept copies
    among them that no entry points at any more. Returns the folders removed."""
    if kept is None:
        return []
    kept = Path(kept)
    removed = []
    for folder in sorted({f for f in (copy_folder(kept, u) for u in uris) if f is not None}):
        if folder.is_dir() and not folder.is_symlink() and not still_used(conn, folder):
            shutil.rmtree(folder)
            removed.append(str(folder))
    return removed
