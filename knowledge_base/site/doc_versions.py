"""A symbol's description as each release had it, for the release selector.

The page shows the newest release's docstring (and, for a class, its ``__init__``'s Args).
Where an older release said something else, that text, rendered, goes into the page's
releases file (``api/tfd-releases/<hash>.json``, named by its content: alias pages share
one) with the releases it belongs to; when a release is chosen, tfdesk.js fetches the file
named by the page's ``data-tfd-releases`` once and shows that release's text. Most
docstrings never change, and a class page would triple in size if it carried its members'
older texts (tf.keras.Model: 0.5 -> 1.5 MB), so the page itself carries none.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from knowledge_base.site.data import SiteData
from knowledge_base.site.markup import esc, rel

RELEASES_DIR = "api/tfd-releases/"


def content_key(value) -> str:
    """A short name for JSON-able ``value`` that only the same content gets."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


@dataclass
class Variant:
    doc: str                     # the docstring in those releases
    init_doc: str | None         # a class's __init__ docstring there
    signature: str | None        # the signature at the first of them (its Args table)
    runs: list[list[int]] = field(default_factory=list)  # [[first ord, last ord]]

    @property
    def releases(self) -> str:
        return ",".join(f"{a}-{b}" for a, b in self.runs)


def _at(runs: list[list] | None, ord_: int):
    for a, b, value in runs or ():
        if a <= ord_ <= b:
            return value
    return None


def newest_init(data: SiteData, s: dict) -> str | None:
    """The ``__init__`` docstring of the newest release that has ``s``."""
    return _at(data.init_runs.get(s["id"]), s["last_ord"])


def variants(data: SiteData, s: dict) -> list[Variant]:
    """The descriptions ``s`` had that differ from the newest one (docstring or __init__
    docstring), each with the runs of releases that had it, oldest first."""
    sid = s["id"]
    docs, inits = data.doc_runs.get(sid), data.init_runs.get(sid)
    if not docs and len(inits or ()) < 2:
        return []
    newest = (s["doc"] or "", newest_init(data, s))
    found: dict[tuple, Variant] = {}
    for a, b in data.runs.get(sid) or [[s["first_ord"], s["last_ord"]]]:
        for i in range(a, b + 1):
            key = (_at(docs, i) or s["doc"] or "", _at(inits, i))
            if key == newest:
                continue
            v = found.get(key)
            if v is None:
                v = found[key] = Variant(key[0], key[1], _at(data.sig_runs.get(sid), i))
            if v.runs and v.runs[-1][1] == i - 1:
                v.runs[-1][1] = i
            else:
                v.runs.append([i, i])
    return list(found.values())


def releases_block(data: SiteData, docs_dir: Path, page: str) -> str:
    """Write ``page``'s releases file if it has older texts (once for every page with the
    same ones); returns the block naming it for tfdesk.js, or ""."""
    groups = data.page_variants.pop(page, None)
    if not groups:
        return ""
    name = f"{RELEASES_DIR}{content_key(groups)}.json"
    out = Path(docs_dir) / name
    if not out.is_file():
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(groups, ensure_ascii=False, separators=(",", ":")),
                       encoding="utf-8")
    return f'<div hidden data-tfd-releases="{esc(rel(page, name))}"></div>'
