"""A popularity prior derived offline from the API's own documentation: how often each
object is named (``tf.x.y``) across all docstrings in the KB. Ops that the docs keep
reaching for (tf.cast, tf.concat, tf.reduce_sum) rank above rarely mentioned look-alikes."""
from __future__ import annotations

import math
import re
from collections import Counter

_MENTION = re.compile(r"\btf\.[A-Za-z_][\w.]*[A-Za-z0-9_]")


def build(db) -> dict:
    """Fill ``popularity(id, refs)``: references to the symbol's object under any of its
    public names."""
    names = {n: (sid, obj) for sid, n, obj in db.execute("SELECT id, name, object FROM symbols")}
    counts: Counter[str] = Counter()
    for (doc,) in db.execute("SELECT doc FROM symbols WHERE doc IS NOT NULL AND doc != ''"):
        for m in set(_MENTION.findall(doc)):
            counts[m.rstrip(".")] += 1
    by_obj: Counter[str] = Counter()
    for name, c in counts.items():
        hit = names.get(name)
        if hit:
            by_obj[hit[1] or name] += c
    rows = [(sid, by_obj[obj or n]) for n, (sid, obj) in names.items() if by_obj[obj or n]]
    db.execute("CREATE TABLE IF NOT EXISTS popularity (id INTEGER PRIMARY KEY, refs INTEGER)")
    db.executemany("INSERT OR REPLACE INTO popularity VALUES (?, ?)", rows)
    return {"popular": len(rows)}


def prior(refs: int) -> float:
    """A small bonus that grows with the log of the reference count (0 for none)."""
    return min(0.3, 0.06 * math.log1p(refs))


def load(db) -> dict[int, int]:
    try:
        return dict(db.execute("SELECT id, refs FROM popularity"))
    except Exception:  # noqa: BLE001 - an older KB file has no popularity table
        return {}
