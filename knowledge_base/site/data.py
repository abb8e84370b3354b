"""Everything the site generator needs from the KB, read in a few bulk queries.

One query per table instead of one per symbol: the full KB has tens of thousands of symbols
and the build target is minutes, not tens of minutes.
"""
from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from knowledge_base.extract.api_files import module_doc
from knowledge_base.extract.companions import provider_of
from knowledge_base.popularity import read_usage
from knowledge_base.store import KB

_SYMBOL_COLUMNS = ("id, name, module, parent, short, kind, object, canonical, signature, "
                   "summary, doc, first, last, first_ord, last_ord, removed_in, deprecated_in, "
                   "deprecation, replacement, depth")




VARIANT_CACHE = 5000


@dataclass
class SiteData:
    versions: list[str]
    releases: list[dict]
    symbols: list[dict]                       # every symbol that ever existed, by name
    by_name: dict[str, dict] = field(default_factory=dict)
    by_module: dict[str, list[dict]] = field(default_factory=dict)
    history: dict[int, list[dict]] = field(default_factory=dict)   # symbol id -> events
    availability: dict[int, str] = field(default_factory=dict)     # symbol id -> "2.4–2.21"
    runs: dict[int, list[list[int]]] = field(default_factory=dict)  # symbol id -> [[first, last] ord]
    children: dict[str, list[dict]] = field(default_factory=dict)  # class name -> its members
    aliases: dict[int, list[str]] = field(default_factory=dict)    # other names, same object
    providers: dict[int, str] = field(default_factory=dict)  # "tf_keras (2.16–2.21)", companions
    renames: list[dict] = field(default_factory=list)
    modules_under: dict[str, list[dict]] = field(default_factory=dict)  # module -> submodules
    # symbol id -> [[first ord, last ord, signature]]: the signature each run of releases had
    sig_runs: dict[int, list[list]] = field(default_factory=dict)
    popularity: dict[int, tuple[int, int]] = field(default_factory=dict)  # id -> (refs, files)
    usage: dict[str, int] = field(default_factory=dict)  # name -> guides that use it
    # (doc, summary, signature) -> symbols still to render it; renderings kept meanwhile
    doc_uses: dict[tuple, int] = field(default_factory=dict)
    rendered: dict[tuple, str] = field(default_factory=dict)
    # (text, signature, __init__ text, page depth) -> an older release's rendered docstring:
    # aliases share them (emptied when it grows past VARIANT_CACHE)
    variant_rendered: dict[tuple, str] = field(default_factory=dict)
    # page -> group key -> [[release runs, html]]: what its releases file holds (doc_versions)
    page_variants: dict[str, dict[str, list[list[str]]]] = field(default_factory=dict)
    # symbol id -> [[first ord, last ord, text]]: docstrings that differ from the newest
    doc_runs: dict[int, list[list]] = field(default_factory=dict)
    # class id -> [[first ord, last ord, text]]: its __init__'s docstring per run
    init_runs: dict[int, list[list]] = field(default_factory=dict)

    @property
    def signatures(self) -> dict[int, list[str]]:
        """symbol id -> its distinct signatures, oldest first."""
        return {sid: list(dict.fromkeys(r[2] for r in runs if r[2] is not None))
                for sid, runs in self.sig_runs.items()}

    @property
    def newest_ord(self) -> int:
        return len(self.versions) - 1

    @property
    def newest(self) -> str:
        return self.versions[-1]

    def present(self, sym: dict) -> bool:
        return sym["last_ord"] == self.newest_ord


def load(kb: KB) -> SiteData:
    db = kb.db
    versions = kb.versions
    symbols = [dict(r) for r in db.execute(f"SELECT {_SYMBOL_COLUMNS} FROM symbols ORDER BY name")]
    data = SiteData(versions=versions, releases=kb.release_rows, symbols=symbols,
                    renames=kb.renames())
    by_module: dict[str, list[dict]] = defaultdict(list)
    by_object: dict[tuple[str, int], list[str]] = defaultdict(list)
    for s in symbols:
        s["deprecation"] = _deprecation(s["deprecation"])
        if s["kind"] == "module":  # a KB from an older builder may hold the generator's header
            for key in ("summary", "doc"):
                if s[key] and not module_doc(s[key]):
                    s[key] = None
        data.by_name[s["name"]] = s
        by_module[s["module"]].append(s)
        if s["object"]:
            by_object[(s["object"], s["last_ord"])].append(s["name"])
    data.by_module = dict(by_module)
    data.doc_uses = dict(Counter((s["doc"], s["summary"], s["signature"]) for s in symbols))
    for s in symbols:
        if s["kind"] == "module" and s["parent"]:
            data.modules_under.setdefault(s["parent"], []).append(s)
        elif s["parent"] and s["parent"] != s["module"]:
            data.children.setdefault(s["parent"], []).append(s)
    for s in symbols:
        if s["object"]:
            others = [n for n in by_object[(s["object"], s["last_ord"])] if n != s["name"]]
            if others:
                data.aliases[s["id"]] = sorted(others, key=lambda n: (n.count("."), n))

    # Availability: runs of consecutive releases, as KB.availability renders them.
    runs: dict[int, list[list[int]]] = defaultdict(list)
    provided: dict[int, list[list]] = defaultdict(list)
    sig_runs: dict[int, list[list]] = defaultdict(list)
    for sid, first, last, obj, sig in db.execute(
            "SELECT symbol_id, first_ord, last_ord, object, signature FROM spans "
            "ORDER BY symbol_id, first_ord"):
        sr = sig_runs[sid]
        if sr and sr[-1][2] == sig and first == sr[-1][1] + 1:
            sr[-1][1] = last
        else:
            sr.append([first, last, sig])
        r = runs[sid]
        if r and first == r[-1][1] + 1:
            r[-1][1] = last
        else:
            r.append([first, last])
        pkg = provider_of(obj)
        p = provided[sid]
        if p and p[-1][0] == pkg and first == p[-1][2] + 1:
            p[-1][2] = last
        else:
            p.append([pkg, first, last])
    for sid, p in provided.items():
        text = ", ".join(f"{pkg} ({versions[a]}{'' if a == b else '–' + versions[b]})"
                         for pkg, a, b in p if pkg)
        if text:
            data.providers[sid] = text
    data.runs = dict(runs)
    data.sig_runs = dict(sig_runs)
    if db.execute("SELECT 1 FROM sqlite_master WHERE name = 'popularity'").fetchone():
        data.popularity = {i: (r or 0, f or 0) for i, r, f in
                           db.execute("SELECT id, refs, files FROM popularity")}
    data.usage = read_usage()
    data.doc_runs, data.init_runs = _doc_runs(db)
    for sid, r in runs.items():
        data.availability[sid] = ", ".join(
            versions[a] if a == b else f"{versions[a]}–{versions[b]}" for a, b in r)

    history: dict[int, list[dict]] = defaultdict(list)
    for row in db.execute("SELECT symbol_id, ord, release, kind, detail, data FROM events "
                          "ORDER BY symbol_id, ord, rowid"):
        history[row[0]].append({"ord": row[1], "release": row[2], "kind": row[3],
                                "detail": row[4], "data": _json(row[5]) or {}})
    data.history = dict(history)
    return data


def _doc_runs(db) -> tuple[dict[int, list[list]], dict[int, list[list]]]:
    """(older docstrings, __init__ docstrings) per symbol id; none from a KB built before
    the KB kept them."""
    out: dict[str, dict[int, list[list]]] = {"doc": defaultdict(list), "init": defaultdict(list)}
    if not db.execute("SELECT 1 FROM sqlite_master WHERE name = 'doc_runs'").fetchone():
        return {}, {}
    for sid, a, b, role, text in db.execute(
            "SELECT r.symbol_id, r.first_ord, r.last_ord, r.role, t.text FROM doc_runs r "
            "JOIN doc_texts t ON t.id = r.doc_id ORDER BY r.symbol_id, r.first_ord"):
        if role in out:
            out[role][sid].append([a, b, text])
    return dict(out["doc"]), dict(out["init"])


def _deprecation(text):
    """symbols.deprecation: the instructions text (or, from older builders, JSON)."""
    if not text:
        return None
    parsed = _json(text)
    return parsed if isinstance(parsed, dict) else {"instructions": str(text)}


def _json(text):
    if not text:
        return None
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return {"instructions": str(text)}
