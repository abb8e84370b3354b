"""The name lookup's tables, kept beside the KB file so that a shell's ``tfdesk ask NAME`` does
not rebuild them from 60,000 rows on every start (0.3 s of CPU; reading them back: 0.08 s).

The one rule: a cache is used only for the very file it was made from. Its header holds that
file's stamp (inode, size, modification time in ns, and SQLite's own change counter, which
every committed write to the file moves on), this layout's version and the Python that wrote
it (marshal's format is Python's own); any difference, or any error reading it, and
the tables are built from SQL as before. The stamp is taken *before* the rows are read, so a
KB rewritten meanwhile never matches it. A cache is written to a temporary name and renamed
(readers never see half of one); a folder that cannot be written to just goes without.
"""
from __future__ import annotations

import marshal
import os
import sqlite3
import sys
from pathlib import Path
from typing import Any

LAYOUT = 1  # bump when the tables' shape changes (knowledge_base.search.build_tables)
SUFFIX = ".names"

Stamp = tuple


def kb_file(db: sqlite3.Connection) -> Path | None:
    """The file behind ``db`` (None for an in-memory or temporary database)."""
    for row in db.execute("PRAGMA database_list"):
        if row[1] == "main" and row[2]:
            return Path(row[2])
    return None


def stamp(kb: Path | None) -> Stamp | None:
    if kb is None:
        return None
    try:
        st = kb.stat()
        with kb.open("rb") as f:
            header = f.read(28)  # bytes 24-27: the file change counter (SQLite file format)
    except OSError:
        return None
    return (LAYOUT, sys.implementation.cache_tag, st.st_ino, st.st_size, st.st_mtime_ns,
            header[24:28])


def path_for(kb: Path) -> Path:
    return kb.with_name(kb.name + SUFFIX)


def load(kb: Path | None, expected: Stamp | None) -> Any | None:
    """The tables cached for ``kb`` when they were made from the file as ``expected`` says
    it is now; otherwise None."""
    if kb is None or expected is None:
        return None
    try:
        got, tables = marshal.loads(path_for(kb).read_bytes())
    except (OSError, ValueError, EOFError, TypeError):
        return None
    return tables if tuple(got) == expected else None


def save(kb: Path | None, made_from: Stamp | None, tables: Any) -> None:
    """Keep ``tables`` (built from ``kb`` as it was at ``made_from``) for the next process."""
    if kb is None or made_from is None:
        return
    target = path_for(kb)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        tmp.write_bytes(marshal.dumps((made_from, tables)))
        os.replace(tmp, target)
    except (OSError, ValueError):
        try:
            tmp.unlink()
        except OSError:
            pass
