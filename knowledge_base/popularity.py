"""A popularity prior derived offline from two kinds of evidence:

- how often each object is named (``tf.x.y``) across all docstrings in the KB;
- how many public guides, tutorials and examples use it (``data/usage.tsv``, counted by
  ``tools/usage_counts.py`` from tensorflow/docs and keras-io; its header names the commits).

Ops that people keep reaching for (tf.cast, tf.concat, Model.fit) rank above rarely used
look-alikes (tf.keras.ops.concatenate, tf.compat.v1.*). Aliases share their object's counts."""
from __future__ import annotations

import hashlib
import math
import re
from collections import Counter
from pathlib import Path
from typing import NamedTuple

from knowledge_base.errors import KBError

USAGE = Path(__file__).parent / "data" / "usage.tsv"
_MENTION = re.compile(r"\btf\.[A-Za-z_][\w.]*[A-Za-z0-9_]")


class Evidence(NamedTuple):
    refs: int = 0   # docstrings that name the object
    files: int = 0  # guide/tutorial/example files that use it


def read_usage(path: Path = USAGE) -> dict[str, int]:
    """``name -> files`` from a usage file (``#`` comments, then ``name<TAB>count`` lines)."""
    out: dict[str, int] = {}
    for no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        name, sep, count = line.partition("\t")
        if not sep or not count.strip().isdigit() or not name.startswith("tf."):
            raise KBError(f"{path}:{no}: expected 'tf.name<TAB>count', got {line!r}")
        out[name] = int(count)
    return out


def usage_sha(path: Path = USAGE) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16] if path.is_file() else "none"


def build(db, usage: Path = USAGE) -> dict:
    """Fill ``popularity(id, refs, files)``: docstring references and guide usage of the
    symbol's object under any of its public names."""
    names = {n: (sid, obj or n)
             for sid, n, obj in db.execute("SELECT id, name, object FROM symbols")}
    counts: Counter[str] = Counter()
    for (doc,) in db.execute("SELECT doc FROM symbols WHERE doc IS NOT NULL AND doc != ''"):
        for m in set(_MENTION.findall(doc)):
            counts[m.rstrip(".")] += 1
    refs: Counter[str] = Counter()
    for name, c in counts.items():
        hit = names.get(name)
        if hit:
            refs[hit[1]] += c
    # One usage line per object already; max() keeps a repeated alias from double counting.
    files: dict[str, int] = {}
    for name, c in (read_usage(usage) if usage.is_file() else {}).items():
        hit = names.get(name)
        if hit:
            files[hit[1]] = max(files.get(hit[1], 0), c)
    rows = [(sid, refs[obj], files.get(obj, 0)) for sid, obj in names.values()
            if refs[obj] or files.get(obj)]
    db.execute("CREATE TABLE IF NOT EXISTS popularity "
               "(id INTEGER PRIMARY KEY, refs INTEGER, files INTEGER)")
    db.executemany("INSERT OR REPLACE INTO popularity VALUES (?, ?, ?)", rows)
    db.execute("INSERT OR REPLACE INTO meta VALUES ('usage', ?)", (usage_sha(usage),))
    return {"popular": len(rows), "used": sum(1 for r in rows if r[2])}


def prior(e: Evidence | int) -> float:
    """A small bonus growing with the log of each count (0 for none), each capped so that
    popularity orders close candidates but never outweighs a clearly better match. Both kinds
    of evidence weigh the same: moving half of the docstring weight onto guide usage gained on
    every question set benchmarks/kb_search.py measures and lost nothing on names."""
    if isinstance(e, int):
        e = Evidence(e)
    return min(0.15, 0.03 * math.log1p(e.refs)) + min(0.15, 0.03 * math.log1p(e.files))


def load(db) -> dict[int, Evidence]:
    try:
        return {sid: Evidence(r, f or 0)
                for sid, r, f in db.execute("SELECT id, refs, files FROM popularity")}
    except Exception:  # noqa: BLE001 - an older KB file: no files column, or no table at all
        try:
            return {sid: Evidence(r) for sid, r in db.execute("SELECT id, refs FROM popularity")}
        except Exception:  # noqa: BLE001
            return {}
