"""Arrays prepared once and kept beside the KB file, memory-mapped by every later process.

A question from a shell is a fresh process: decompressing the phrasebooks, resolving their
names to symbol ids, transposing MiniLM's weights and hashing its 90 MB file cost more CPU
than answering. What depends only on files that rarely change is prepared once, written
beside the KB (``kb.sqlite.minilm``, ``kb.sqlite.question``), and mapped read-only later:
a process reads only the pages it touches (of the token table, the rows of a question's
words), and processes share them through the page cache.

The rule is name_cache's: a prepared file is used only for the very inputs it was made from.
Its header holds their stamp (for each input file, data or the code that reads it: inode,
size, modification and change times in ns; the KB's name-cache stamp with SQLite's own change
counter; this layout's version, the Python and NumPy that wrote it); any
difference, or any error reading it, and the arrays are prepared again from the inputs and
the file rewritten (to a temporary name, then renamed: readers never see half of one). A
folder that cannot be written to just goes without. Arrays come back read-only.

Layout: ``MAGIC``, the header's length (8 bytes, little-endian), the header (marshal: the
stamp, each array's dtype, shape and offset, and small plain values), then each array's bytes
at a 64-byte boundary.
"""
from __future__ import annotations

import marshal
import mmap
import os
import struct
import sys
from pathlib import Path
from typing import Any, Callable

import numpy as np

MAGIC = b"TFDPREP1"
LAYOUT = 1
ALIGN = 64

Prepared = dict[str, Any]  # name -> np.ndarray, or a plain value (marshal's types)


def beside(db, suffix: str) -> Path | None:
    """Where the prepared file ``suffix`` of the KB behind connection ``db`` lives (None for
    an in-memory or temporary database)."""
    from knowledge_base.name_cache import kb_file
    kb = kb_file(db)
    return kb.with_name(kb.name + suffix) if kb is not None else None


def file_stamp(path: Path) -> tuple | None:
    """What identifies a file's content without reading it (None when it is missing): its
    inode, size, and modification and change times (a write that puts the modification time
    back still moves the change time, which no call can set)."""
    try:
        st = path.stat()
    except OSError:
        return None
    return (str(path), st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def stamp(*parts: Any) -> tuple:
    return (LAYOUT, sys.implementation.cache_tag, np.__version__, *parts)


def load(path: Path, expected: tuple) -> Prepared | None:
    """The values prepared in ``path`` when they were made from inputs as ``expected`` says
    they are now; otherwise None (also for a file that is damaged: prepared again)."""
    try:
        with open(path, "rb") as f:
            if f.read(len(MAGIC)) != MAGIC:
                return None
            (size,) = struct.unpack("<Q", f.read(8))
            if size > os.fstat(f.fileno()).st_size - len(MAGIC) - 8:
                return None  # a damaged length: never read (allocate) more than the file holds
            header = marshal.loads(f.read(size))
            if tuple(header["stamp"]) != expected:
                return None
            mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if header[
                "arrays"] else b""
        out: Prepared = dict(header["values"])
        for name, (dtype, shape, offset) in header["arrays"].items():
            out[name] = np.ndarray(tuple(shape), np.dtype(dtype), buffer=mapped, offset=offset)
    except (OSError, ValueError, EOFError, TypeError, KeyError, AttributeError,
            OverflowError, struct.error):
        return None
    return out


def save(path: Path, made_from: tuple, prepared: Prepared) -> None:
    """Keep ``prepared`` (made from inputs as ``made_from`` says) for later processes."""
    arrays = {k: np.ascontiguousarray(v) for k, v in prepared.items()
              if isinstance(v, np.ndarray)}
    values = {k: v for k, v in prepared.items() if not isinstance(v, np.ndarray)}
    layout, offset = {}, 0
    for name, a in arrays.items():
        layout[name] = (a.dtype.str, a.shape, offset)
        offset += -(-a.nbytes // ALIGN) * ALIGN
    # The offsets count from the data's start, which the header's own length decides.
    relative, start = layout, 0
    while True:
        header = marshal.dumps({"stamp": made_from, "arrays": layout, "values": values})
        if len(MAGIC) + 8 + len(header) <= start:
            break
        start = -(-(len(MAGIC) + 8 + len(header) + 64) // ALIGN) * ALIGN
        layout = {k: (d, s, start + o) for k, (d, s, o) in relative.items()}
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(MAGIC + struct.pack("<Q", len(header)) + header)
            for name, a in arrays.items():
                f.seek(layout[name][2])
                f.write(a.tobytes())
            f.truncate(max([start, *(o + a.nbytes for (_, _, o), a in zip(
                layout.values(), arrays.values()))]))  # an empty array last is in the file too
        os.replace(tmp, path)
    except (OSError, ValueError):
        try:
            tmp.unlink()
        except OSError:
            pass


def cached(path: Path | None, made_from: tuple, prepare: Callable[[], Prepared]) -> Prepared:
    """What ``prepare`` returns, read from ``path`` when it holds it for these inputs,
    otherwise prepared now and kept there."""
    if path is not None:
        got = load(path, made_from)
        if got is not None:
            return got
    prepared = prepare()
    if path is not None:
        save(path, made_from, prepared)
    return prepared
