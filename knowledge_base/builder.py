"""Merge per-release extracts into the KB: spans, derived history, search index.

Two inputs give the same KB:

- per-release extracts (:class:`~knowledge_base.records.ReleaseExtract`, from the wheels), and
- the compact merged extract shipped in the repo (``knowledge_base/data/kb-extract.jsonl.xz``),
  which is exactly the :class:`Merged` state below, written by :func:`write_merged`.

The SQLite file is written to a temporary path and swapped in with ``os.replace``, so a failed
build leaves the old KB untouched.
"""
from __future__ import annotations

import functools
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

from knowledge_base import popularity
from knowledge_base import inheritance
from knowledge_base.errors import KBError
from knowledge_base.names import canonical_rank, name_words, part_words
from knowledge_base.words import terms_of
from knowledge_base.signatures import (describe_signature_change, parse_params,  # noqa: F401
                                       signature_change)
from knowledge_base.records import RAISES, METHOD, MODULE, PROPERTY, ReleaseExtract, ReleaseInfo, Rename
from knowledge_base.store import FORMAT_VERSION, SCHEMA

MERGED_FORMAT = 2  # 2: a TF2 class's span carries its public bases (see inheritance)
READABLE_FORMATS = (1, 2)
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
            if s.line:
                self.lines[s.name] = s.line
        for r in extract.renames:
            self.renames[r.old] = r  # newer tables win


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
    with lzma.open(tmp, "wt", encoding="utf-8", preset=6) as f:
        f.write(json.dumps({"type": "meta", "format": MERGED_FORMAT,
                            "releases": [asdict(r) for r in merged.releases]}) + "\n")
        for name in sorted(merged.spans):
            doc = merged.docs.get(name)
            if doc is not None and doc not in doc_ids:
                doc_ids[doc] = len(doc_ids)
                f.write(json.dumps({"type": "doc", "id": doc_ids[doc], "text": doc},
                                   ensure_ascii=False) + "\n")
            rec = {"type": "symbol", "name": name,
                   "spans": [[s.first, s.last, s.kind, s.sig, s.obj, s.dep]
                             + ([list(s.bases)] if s.bases else [])
                             for s in merged.spans[name]]}
            if doc is not None:
                rec["doc"] = doc_ids[doc]
            if name in merged.lines:
                rec["line"] = merged.lines[name]
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
_MEMBER_KINDS = (METHOD, PROPERTY, "constant")
COVER_HEAD = 300


def summary_of(doc: str) -> str:
    """The docstring's first sentence-ish line, as tensorflow.org shows it."""
    for para in doc.strip().split("\n\n"):
        text = " ".join(para.split())
        if text and not text.startswith(("Warning:", "Deprecated:", "DEPRECATED")):
            text = re.sub(r"\s*\(deprecated[^)]*\)\s*", " ", text).strip()
            return text[:300]
    return ""


_NAME_IN_TEXT = re.compile(r"`?(tf\.[A-Za-z_][\w.]*[A-Za-z0-9_])`?")


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
    versions = [r.version for r in m.releases]
    newest = len(versions) - 1
    db = sqlite_utils.Database(path)
    db.conn.executescript("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;" + SCHEMA)
    names = sorted(m.spans)
    ids = {n: i + 1 for i, n in enumerate(names)}
    kinds = {n: m.spans[n][-1].kind for n in names}

    # object -> [(name, first, last)] to find aliases and moves per release.
    by_obj: dict[str, list[tuple[str, int, int]]] = {}
    for n in names:
        for s in m.spans[n]:
            if s.obj:
                by_obj.setdefault(s.obj, []).append((n, s.first, s.last))

    def elsewhere(n: str, obj: str, ord_: int) -> bool:
        """Is member ``n`` inherited, i.e. not defined by the class it hangs off? A member's
        canonical name is under the class that defines it (Layer.get_weights, not
        Model.get_weights), whatever canonical_rank says of the two names."""
        parent, _, leaf = n.rpartition(".")
        span = next((s for s in m.spans.get(parent, ()) if s.first <= ord_ <= s.last), None)
        return span is None or span.kind != "class" or obj != f"{span.obj}.{leaf}"

    @functools.lru_cache(maxsize=None)
    def names_of(obj: str, ord_: int) -> list[str]:
        found = [n for n, a, b in by_obj.get(obj, ()) if a <= ord_ <= b]
        if len(found) < 2:
            return found
        return sorted(found, key=lambda n: (kinds[n] in _MEMBER_KINDS and elsewhere(n, obj, ord_),
                                            canonical_rank(n)))

    # release -> names whose (new) run starts there, for moves whose defining object changed too.
    added_at: dict[tuple[int, str], list[tuple[str, Span]]] = {}
    for n in names:
        for s in m.spans[n]:
            added_at.setdefault((s.first, n.rsplit(".", 1)[-1]), []).append((n, s))
    present_sets: dict[int, set[str]] = {}

    def names_at(ord_: int) -> set[str]:
        if ord_ not in present_sets:
            present_sets[ord_] = {n for n in names
                                  if any(s.first <= ord_ <= s.last for s in m.spans[n])}
        return present_sets[ord_]

    present_in = [0] * len(versions)
    events: list[tuple] = []
    symbol_rows: list[tuple] = []
    span_rows: list[tuple] = []
    fts_rows: list[tuple] = []
    moved_to: dict[str, tuple[str, int]] = {}  # old name -> (new name, release ord)
    for count, n in enumerate(names):
        if progress and count % 5000 == 0:
            progress("building KB: symbols", count, len(names))
        sid = ids[n]
        runs = m.spans[n]
        prev: Span | None = None
        for s in runs:
            span_rows.append((sid, s.first, s.last, s.kind, s.sig, s.obj, s.dep))
            for o in range(s.first, s.last + 1):
                present_in[o] += 1
            if prev is None or prev.last < s.first - 1:
                if prev is not None:  # it had gone and came back
                    events.append(_removed(sid, prev, versions, n, names_of, names_at, added_at, moved_to))
                detail = ("in the oldest release in the KB" if s.first == 0 else "added")
                events.append((sid, s.first, versions[s.first], "added", detail, None))
            else:
                if prev.sig != s.sig and (prev.sig or s.sig):
                    c = signature_change(prev.sig, s.sig)
                    events.append((sid, s.first, versions[s.first], "signature_changed",
                                   describe_signature_change(c), json.dumps(c)))
                if s.dep is not None and (prev.dep is None or _dep_args(prev.dep) != _dep_args(s.dep)):
                    events.append(_deprecated(sid, s, versions))
                elif prev.dep is not None and s.dep is None:
                    events.append((sid, s.first, versions[s.first], "undeprecated",
                                   "no longer marked deprecated", None))
                # A member's definition moving (keras.engine -> keras.src.engine, thousands
                # of them per Keras reshuffle) is its class's news, not its own.
                if prev.obj != s.obj and prev.obj and s.obj and s.kind not in _MEMBER_KINDS:
                    events.append((sid, s.first, versions[s.first], "definition_moved",
                                   f"now defined in `{s.obj}` (was `{prev.obj}`)",
                                   json.dumps({"from": prev.obj, "to": s.obj})))
            if s.dep is not None and (prev is None or prev.last < s.first - 1):
                events.append(_deprecated(sid, s, versions))
            prev = s
        if runs[-1].last < newest:
            events.append(_removed(sid, runs[-1], versions, n, names_of, names_at, added_at, moved_to))

    # "moved from" on the receiving side, once all removals are known.
    for old, (new, o) in moved_to.items():
        if new in ids:
            events.append((ids[new], o, versions[o], "moved",
                           f"`{old}` moved here", json.dumps({"from": old})))

    deps_by_sid: dict[int, tuple[str, str]] = {}
    for e in events:
        if e[3] == "deprecated":
            deps_by_sid[e[0]] = (e[2], e[4])
        elif e[3] in ("undeprecated", "added"):
            deps_by_sid.pop(e[0], None)

    for n in names:
        sid = ids[n]
        runs = m.spans[n]
        last = runs[-1]
        kind = last.kind
        module, parent = module_of(n, kind, kinds)
        doc = m.docs.get(n, "")
        canon = names_of(last.obj, last.last)[0] if last.obj and names_of(last.obj, last.last) else n
        if last.dep and json.loads(last.dep).get("how") == RAISES:
            canon = n  # one stub object behind many names is no alias of them

        removed_in = versions[last.last + 1] if last.last < newest else None
        dep_in, dep_text = deps_by_sid.get(sid, (None, None)) if last.dep else (None, None)
        replacement = moved_to[n][0] if n in moved_to and runs[-1].last < newest else None
        if replacement is None and dep_text:
            replacement = _mentioned_name(dep_text, n, ids)
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
                ".compat." in n and kind in _MEMBER_KINDS):
            continue
        fts_rows.append((sid, part_words(leaf), name_words(parent_part), summary_of(doc),
                         doc[:DOC_HEAD]))

    def insert(table: str, rows, columns: list[str] | None = None, replace: bool = False):
        cols = columns or [c.name for c in db[table].columns]
        db[table].insert_all((dict(zip(cols, r)) for r in rows), batch_size=2000,
                             replace=replace)

    with db.conn:
        insert("symbols", symbol_rows)
        insert("spans", span_rows)
        insert("events", events)
        insert("symbols_fts", fts_rows, ["rowid", "words", "path", "summary", "doc"])
        insert("renames", [(r.old, r.new, r.note) for r in m.renames.values()], replace=True)
        insert("releases", [(r.version, i, r.tf_version, r.tf_wheel, r.keras_version,
                             r.keras_source, r.estimator_version, r.python_tag, present_in[i])
                            for i, r in enumerate(m.releases)])
        insert("meta", [("format", FORMAT_VERSION),
                        ("built_at", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())),
                        ("newest", versions[-1]), ("oldest", versions[0]), *meta.items()])
        db.execute("INSERT INTO symbols_fts(symbols_fts) VALUES ('optimize')")
        extra = popularity.build(db.conn)
        # Derived indexes cover what the words index covers (see above).
        texts = [IndexText(sid, names[sid - 1], *row) for sid, *row in fts_rows]
        for index in indexes:
            extra |= index.build(db.conn, texts, progress)
    db.close()
    return {"releases": len(versions), "symbols": len(names), "events": len(events),
            "renames": len(m.renames), "bytes": path.stat().st_size, **extra}


def _dep_args(dep: str) -> list[str]:
    return json.loads(dep).get("args") or []


def _deprecated(sid: int, s: Span, versions: list[str]) -> tuple:
    d = json.loads(s.dep)
    text = d.get("instructions") or ""
    if d.get("how") == RAISES:  # a stub: the name resolves, using it raises
        return (sid, s.first, versions[s.first], "unusable",
                f"present but unusable: raises {text}".strip(), s.dep)
    if d.get("args"):  # only some arguments are deprecated, not the symbol
        text = f"arguments {', '.join(d['args'])} deprecated. {text}".strip()
        return (sid, s.first, versions[s.first], "arguments_deprecated", text, s.dep)
    return (sid, s.first, versions[s.first], "deprecated", text or "deprecated", s.dep)


def _removed(sid, span: Span, versions, name, names_of, names_at, added_at, moved_to) -> tuple:
    o = span.last + 1
    target = None
    if span.kind in (METHOD, PROPERTY):
        # A member moves only with its class; inherited members of a removed subclass are
        # still "the same object" as the base's, which is no move.
        parent, _, leaf = name.rpartition(".")
        moved_parent = moved_to.get(parent)
        if moved_parent and moved_parent[1] == o and f"{moved_parent[0]}.{leaf}" in names_at(o):
            target = f"{moved_parent[0]}.{leaf}"
    elif span.obj:
        # Same defining object still public under another name: it moved there. Or an alias it
        # had in its last release survives (even if the object itself was redefined).
        others = [x for x in names_of(span.obj, o) if x != name] or [
            x for x in names_of(span.obj, span.last) if x != name and x in names_at(o)]
        target = others[0] if others else None
    if target is None and span.kind not in (METHOD, PROPERTY):
        target = _same_short_name_added(name, span, o, added_at)
    if target:
        moved_to[name] = (target, o)
        return (sid, o, versions[o], "removed", f"removed; moved to `{target}`",
                json.dumps({"to": target}))
    return (sid, o, versions[o], "removed", "removed", None)


def _same_short_name_added(name: str, span: Span, o: int,
                           added_at: dict[tuple[int, str], list[tuple[str, Span]]]) -> str | None:
    """A name with the same last part and kind that appeared in the same release under the same
    top-level namespace: the usual shape of a move out of ``experimental``."""
    short = name.rsplit(".", 1)[-1]
    top = ".".join(name.split(".")[:2])
    best = None
    for cand, s in added_at.get((o, short), ()):
        if cand.startswith(top + ".") and s.kind == span.kind and cand != name:
            if best is None or canonical_rank(cand) < canonical_rank(best):
                best = cand
    return best


def _mentioned_name(text: str, own: str, ids: dict[str, int]) -> str | None:
    for cand in _NAME_IN_TEXT.findall(text):
        cand = cand.rstrip(".")
        if cand != own and cand in ids:
            return cand
    return None
