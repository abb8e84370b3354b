"""Merge per-release extracts into the KB: spans, derived history, search index.

Two inputs give the same KB:

- per-release extracts (:class:`~knowledge_base.records.ReleaseExtract`, from the wheels), and
- the compact merged extract shipped in the repo (``knowledge_base/data/kb-extract.jsonl.xz``),
  which is exactly the :class:`Merged` state below, written by :func:`write_merged`.

The SQLite file is written to a temporary path and swapped in with ``os.replace``, so a failed
build leaves the old KB untouched.
"""
from __future__ import annotations

import json
import lzma
import os
import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Iterable, NamedTuple, Protocol, Sequence

import sqlite_utils
from packaging.version import Version

from knowledge_base import inheritance, popularity
from knowledge_base.errors import KBError
from knowledge_base.deprecation_refs import NameTable, replacement as notice_replacement
from knowledge_base.events import MEMBER_KINDS, History, Releases
from knowledge_base.names import name_words, part_words
from knowledge_base.records import MODULE, RAISES, ReleaseExtract, ReleaseInfo, Rename
from knowledge_base.signatures import parse_params, signature_change  # noqa: F401 - tests
from knowledge_base.store import FORMAT_VERSION, SCHEMA
from knowledge_base.words import terms_of

# 2: a TF2 class's span carries its public bases (see inheritance); 3: docstrings per release
# where they differ from the newest, and classes' __init__ docstrings
MERGED_FORMAT = 3
READABLE_FORMATS = (1, 2, 3)
Progress = Callable[[str, int | None, int | None], None]


@dataclass
class Span:
    first: int
    last: int
    kind: str
    sig: str | None
    obj: str
    dep: str | None  # JSON of the Deprecation, or None
    bases: tuple[str, ...] | None = None  # a TF2 class: its public bases' objects, MRO order

    def key(self) -> tuple:
        return (self.kind, self.sig, self.obj, self.dep, self.bases)


@dataclass
class Merged:
    releases: list[ReleaseInfo] = field(default_factory=list)
    spans: dict[str, list[Span]] = field(default_factory=dict)
    docs: dict[str, str] = field(default_factory=dict)      # newest docstring per name
    lines: dict[str, int] = field(default_factory=dict)
    renames: dict[str, Rename] = field(default_factory=dict)
    # name -> [[first, last, text]]: runs of releases with a non-empty docstring. Read from the
    # shipped file it holds only the runs whose text differs from ``docs`` (all it keeps).
    doc_runs: dict[str, list[list]] = field(default_factory=dict)
    # class name -> [[first, last, text]]: its __init__'s docstring (constructor Args)
    init_runs: dict[str, list[list]] = field(default_factory=dict)

    def doc_variants(self, name: str) -> list[list]:
        """The runs of releases whose docstring differs from the newest one, oldest first."""
        newest = self.docs.get(name)
        return [r for r in self.doc_runs.get(name, ()) if r[2] != newest]

    def add(self, extract: ReleaseExtract) -> None:
        """Add the next (newer) release."""
        i = len(self.releases)
        if self.releases and Version(extract.info.version) <= Version(self.releases[-1].version):
            raise KBError(f"releases must be merged oldest first ({extract.info.version} after "
                          f"{self.releases[-1].version})")
        self.releases.append(extract.info)
        intern = _Interner()
        for s in extract.symbols:
            dep = json.dumps(asdict(s.deprecation), sort_keys=True) if s.deprecation else None
            span = Span(i, i, s.kind, intern(s.signature), intern(s.object), intern(dep),
                        tuple(s.bases) if s.bases else None)
            runs = self.spans.setdefault(s.name, [])
            if runs and runs[-1].last == i:
                continue  # duplicate path within one release: first one wins
            if runs and runs[-1].last == i - 1 and runs[-1].key() == span.key():
                runs[-1].last = i
            else:
                runs.append(span)
            if s.doc:
                self.docs[s.name] = s.doc
                _extend_run(self.doc_runs, s.name, i, s.doc)
            if s.init_doc:
                _extend_run(self.init_runs, s.name, i, s.init_doc)
            if s.line:
                self.lines[s.name] = s.line
        for r in extract.renames:
            self.renames[r.old] = r  # newer tables win


def _extend_run(runs: dict[str, list[list]], name: str, i: int, text: str) -> None:
    """Release ``i`` has ``text``: lengthen the last run when it is the same text just before."""
    got = runs.setdefault(name, [])
    if got and got[-1][1] == i - 1 and got[-1][2] == text:
        got[-1][1] = i
    else:
        got.append([i, i, text])


class _Interner(dict):
    def __call__(self, v):
        return self.setdefault(v, v) if v is not None else None


def merge(extracts: Iterable[ReleaseExtract]) -> Merged:
    merged = Merged()
    for e in sorted(extracts, key=lambda e: Version(e.info.version)):
        merged.add(e)
    return merged


# -- the compact shipped form ----------------------------------------------------------------

def write_merged(merged: Merged, path: Path) -> None:
    """Write the merged state as xz-compressed JSON lines (docstrings deduplicated)."""
    path = Path(path)
    tmp = path.with_suffix(path.suffix + ".tmp")
    doc_ids: dict[str, int] = {}

    def doc_id(text: str) -> int:
        # Each text once, just before its first use: an older variant lands next to the
        # newest text it differs from a little, where xz finds the shared part.
        if text not in doc_ids:
            doc_ids[text] = len(doc_ids)
            f.write(json.dumps({"type": "doc", "id": doc_ids[text], "text": text},
                               ensure_ascii=False) + "\n")
        return doc_ids[text]

    # xz -9e: a 64 MiB window holds the whole file, so an older docstring costs only what
    # differs from its newer text (1.72 MB shipped; preset 6: 2.05 MB).
    with lzma.open(tmp, "wt", encoding="utf-8", preset=9 | lzma.PRESET_EXTREME) as f:
        f.write(json.dumps({"type": "meta", "format": MERGED_FORMAT,
                            "releases": [asdict(r) for r in merged.releases]}) + "\n")
        for name in sorted(merged.spans):
            doc = merged.docs.get(name)
            if doc is not None:
                doc_id(doc)
            variants = [[a, b, doc_id(t)] for a, b, t in merged.doc_variants(name)]
            inits = [[a, b, doc_id(t)] for a, b, t in merged.init_runs.get(name, ())]
            rec = {"type": "symbol", "name": name,
                   "spans": [[s.first, s.last, s.kind, s.sig, s.obj, s.dep]
                             + ([list(s.bases)] if s.bases else [])
                             for s in merged.spans[name]]}
            if doc is not None:
                rec["doc"] = doc_ids[doc]
            if name in merged.lines:
                rec["line"] = merged.lines[name]
            if variants:
                rec["docs"] = variants
            if inits:
                rec["init"] = inits
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")
        for r in merged.renames.values():
            f.write(json.dumps({"type": "rename", **asdict(r)}) + "\n")
    tmp.replace(path)


def read_merged(path: Path) -> Merged:
    merged = Merged()
    docs: dict[int, str] = {}
    try:
        with lzma.open(path, "rt", encoding="utf-8") as f:
            for line in f:
                d = json.loads(line)
                t = d["type"]
                if t == "symbol":
                    merged.spans[d["name"]] = [Span(*s[:6], tuple(s[6]) if len(s) > 6 else None)
                                               for s in d["spans"]]
                    if "doc" in d:
                        merged.docs[d["name"]] = docs[d["doc"]]
                    if "line" in d:
                        merged.lines[d["name"]] = d["line"]
                    if "docs" in d:
                        merged.doc_runs[d["name"]] = [[a, b, docs[i]] for a, b, i in d["docs"]]
                    if "init" in d:
                        merged.init_runs[d["name"]] = [[a, b, docs[i]] for a, b, i in d["init"]]
                elif t == "doc":
                    docs[d["id"]] = d["text"]
                elif t == "rename":
                    merged.renames[d["old"]] = Rename(d["old"], d.get("new"), d.get("note", ""))
                elif t == "meta":
                    if d.get("format") not in READABLE_FORMATS:
                        raise KBError(f"{path}: extract format {d.get('format')}, expected "
                                      f"one of {READABLE_FORMATS}")
                    merged.releases = [ReleaseInfo(**r) for r in d["releases"]]
    except (OSError, lzma.LZMAError, json.JSONDecodeError, KeyError, TypeError) as exc:
        raise KBError(f"{path}: not a readable KB extract ({exc})") from None
    return merged


# -- derived facts -----------------------------------------------------------------------------

DOC_HEAD = 800
COVER_HEAD = 300


def summary_of(doc: str) -> str:
    """The docstring's first sentence-ish line, as tensorflow.org shows it."""
    for para in doc.strip().split("\n\n"):
        text = " ".join(para.split())
        if text and not text.startswith(("Warning:", "Deprecated:", "DEPRECATED")):
            text = re.sub(r"\s*\(deprecated[^)]*\)\s*", " ", text).strip()
            return text[:300]
    return ""


def module_of(name: str, kind: str, kinds: dict[str, str]) -> tuple[str, str | None]:
    """(page module, parent) for a name: modules are their own page; members of a class go
    on the class's module page."""
    if kind == MODULE:
        return name, name.rsplit(".", 1)[0] if "." in name else None
    parent = name.rsplit(".", 1)[0] if "." in name else name
    page = parent
    while kinds.get(page, MODULE) != MODULE and "." in page:
        page = page.rsplit(".", 1)[0]
    return page, parent


# -- the SQLite file ---------------------------------------------------------------------------

class IndexText(NamedTuple):
    """A symbol's row of the words index, as a derived index reads it."""
    id: int
    name: str
    words: str       # the leaf's words
    path: str        # the parent's words
    summary: str
    doc: str


class DerivedIndex(Protocol):
    """A table built from the words index's rows in the same transaction, by a layer above
    the core (the question wing's semantic vectors): the core builds it without knowing it."""

    def inputs(self) -> list[Path]:
        """Files it reads: their checksums go into the KB's source stamp."""

    def build(self, conn, rows: list[IndexText], progress: Progress | None) -> dict:
        """Write its tables; return statistics."""

    def export(self, conn, extract: Path) -> None:
        """Write what ships beside an exported extract."""


def build_kb(source: Iterable[ReleaseExtract] | Merged, out_path: Path,
             progress: Progress | None = None, meta: dict[str, str] | None = None,
             indexes: Sequence[DerivedIndex] = ()) -> dict:
    """Write the KB for ``source`` to ``out_path`` atomically; return build statistics.
    ``indexes``: derived tables to build too (see DerivedIndex)."""
    t0 = time.perf_counter()
    merged = source if isinstance(source, Merged) else merge(source)
    merged = inheritance.expand(merged)
    if not merged.releases:
        raise KBError("nothing to build: no releases given")
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_path.with_name(out_path.name + f".{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    try:
        stats = _write(merged, tmp, progress, meta or {}, indexes)
        os.replace(tmp, out_path)
    finally:
        tmp.unlink(missing_ok=True)
    stats["seconds"] = round(time.perf_counter() - t0, 2)
    return stats


def _write(m: Merged, path: Path, progress: Progress | None, meta: dict[str, str],
           indexes: Sequence[DerivedIndex]) -> dict:
    db = sqlite_utils.Database(path)
    db.conn.executescript("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;" + SCHEMA)
    r = Releases(m)
    h = History(r, progress)
    symbol_rows, fts_rows = _symbol_rows(r, h)
    versions = r.versions

    def insert(table: str, rows, columns: list[str] | None = None, replace: bool = False):
        cols = columns or [c.name for c in db[table].columns]
        db[table].insert_all((dict(zip(cols, r)) for r in rows), batch_size=2000,
                             replace=replace)

    with db.conn:
        insert("symbols", symbol_rows)
        insert("spans", h.span_rows)
        insert("events", h.events)
        insert("symbols_fts", fts_rows, ["rowid", "words", "path", "summary", "doc"])
        insert("renames", [(r.old, r.new, r.note) for r in m.renames.values()], replace=True)
        doc_texts, doc_runs = _doc_rows(m, r.ids)
        insert("doc_texts", doc_texts)
        insert("doc_runs", doc_runs)
        insert("releases", [(r.version, i, r.tf_version, r.tf_wheel, r.keras_version,
                             r.keras_source, r.estimator_version, r.python_tag, h.present_in[i])
                            for i, r in enumerate(m.releases)])
        insert("meta", [("format", FORMAT_VERSION),
                        ("built_at", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())),
                        ("newest", versions[-1]), ("oldest", versions[0]), *meta.items()])
        db.execute("INSERT INTO symbols_fts(symbols_fts) VALUES ('optimize')")
        extra = popularity.build(db.conn)
        # Derived indexes cover what the words index covers (see _symbol_rows).
        texts = [IndexText(sid, r.names[sid - 1], *row) for sid, *row in fts_rows]
        for index in indexes:
            extra |= index.build(db.conn, texts, progress)
    db.close()
    return {"releases": len(versions), "symbols": len(r.names), "events": len(h.events),
            "renames": len(m.renames), "bytes": path.stat().st_size, **extra}


def _doc_rows(m: Merged, ids: dict[str, int]) -> tuple[list[tuple], list[tuple]]:
    """doc_texts and doc_runs rows: older docstrings and __init__ docstrings, each text once."""
    text_ids: dict[str, int] = {}
    runs: list[tuple] = []
    for role, by_name in (("doc", {n: m.doc_variants(n) for n in m.doc_runs}),
                          ("init", m.init_runs)):
        for name, got in by_name.items():
            if name not in ids:
                continue
            for a, b, text in got:
                tid = text_ids.setdefault(text, len(text_ids) + 1)
                runs.append((ids[name], a, b, role, tid))
    return [(i, t) for t, i in text_ids.items()], runs


def _symbol_rows(r: Releases, h: History) -> tuple[list[tuple], list[tuple]]:
    """The symbols table's rows, and the words index's (once per object)."""
    m, versions, ids = r.m, r.versions, r.ids
    symbol_rows: list[tuple] = []
    fts_rows: list[tuple] = []
    table = NameTable({n: m.spans[n][-1].last for n in r.names},
                      {n: m.spans[n][-1].obj for n in r.names}, r.kinds, r.newest)
    # One object, one notice: a member inherited from Layer carries Layer's notice under every
    # class that lists it, also where the extract saw the notice under only some of them.
    obj_notice = {}
    for n in r.names:
        text, obj = h.last_notice.get(ids[n]), m.spans[n][-1].obj
        if text and obj:
            obj_notice.setdefault(obj, text)
    for n in r.names:
        sid = ids[n]
        runs = m.spans[n]
        last = runs[-1]
        kind = last.kind
        module, parent = module_of(n, kind, r.kinds)
        doc = m.docs.get(n, "")
        aliases = r.names_of(last.obj, last.last) if last.obj else []
        canon = aliases[0] if aliases else n
        if last.dep and json.loads(last.dep).get("how") == RAISES:
            canon = n  # one stub object behind many names is no alias of them

        removed_in = versions[last.last + 1] if last.last < r.newest else None
        dep_in, dep_text = h.deprecated.get(sid, (None, None)) if last.dep else (None, None)
        replacement = h.moved_to[n][0] if n in h.moved_to and runs[-1].last < r.newest else None
        notice = dep_text or (h.last_notice.get(sid) or obj_notice.get(last.obj)
                              if removed_in else None)
        if replacement is None and notice:
            replacement = notice_replacement(notice, n, table)
        if replacement is None and n in m.renames and m.renames[n].new != n:
            replacement = m.renames[n].new
        symbol_rows.append((sid, n, module, parent, n.rsplit(".", 1)[-1], kind, last.obj or None,
                            canon, last.sig, summary_of(doc), doc, m.lines.get(n),
                            versions[runs[0].first], versions[last.last], runs[0].first,
                            last.last, removed_in, dep_in, dep_text, replacement,
                            n.count("."), terms_of(f"{part_words(n.rpartition('.')[2])} "
                                                   f"{summary_of(doc)} {doc[:COVER_HEAD]}")))
        parent_part, _, leaf = n.rpartition(".")
        # Words and meaning index what people describe, once per object (under the name
        # tensorflow.org shows): not the generated tf.raw_ops, not TF1 class members or
        # tf.compat.v1.keras (reached by name or through their class).
        if canon != n or ".raw_ops." in n or n.startswith("tf.compat.v1.keras.") or (
                ".compat." in n and kind in MEMBER_KINDS):
            continue
        fts_rows.append((sid, part_words(leaf), name_words(parent_part), summary_of(doc),
                         doc[:DOC_HEAD]))
    return symbol_rows, fts_rows
