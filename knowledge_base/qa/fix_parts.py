"""What the fixes for pasted errors share (fixes.py, keyword_fixes.py, tf1_fixes.py): the fix
itself, how a fact about a Keras name says which Keras it is from, and the names under a class
or module spelt like one the error names."""
from __future__ import annotations

from dataclasses import dataclass, field

from knowledge_base.store import KB

MAX_NAMES = 5


@dataclass
class Fix:
    family: str
    text: str                                     # what to do, in words, with the release
    names: list[str] = field(default_factory=list)  # KB symbols that carry the fix, best first
    asked: str = ""                               # the name or keyword the error is about


def keras_note(kb: KB, sym: dict, release: str | None) -> str:
    if not release or not sym["name"].startswith("tf.keras"):
        return ""
    o = kb.ord_of(release)
    switch = kb.keras_switch(o - 1, o) if o > 0 else None
    return f" ({switch['to'].split(' (')[0]})" if switch else ""


def popularity(kb: KB) -> dict[str, int]:
    """name -> how many guide files use it (0 when the KB has no such table)."""
    try:
        return dict(kb.db.execute("SELECT s.name, p.refs FROM popularity p JOIN symbols s "
                                  "ON s.id = p.id"))
    except Exception:  # noqa: BLE001 - an older KB without the table
        return {}


def near_children(kb: KB, parent: str, query: str,
                  present_only: bool = False) -> list[tuple[str, float]]:
    """The (at most three) names directly under ``parent`` whose last part is spelt most like
    ``query`` (rapidfuzz ratio >= 75), with their scores; ``present_only``: in the newest
    release."""
    from rapidfuzz import fuzz, process
    rows = kb.db.execute("SELECT name FROM symbols WHERE parent = ?"
                         + (" AND removed_in IS NULL" if present_only else ""), (parent,))
    shorts = {n.rpartition(".")[2]: n for (n,) in rows}
    return [(shorts[s], score) for s, score, _ in process.extract(
        query, list(shorts), scorer=fuzz.ratio, limit=3, score_cutoff=75)]
