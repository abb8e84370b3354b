"""The KB's SQLite file: schema and read access.

The KB is read-only once built (see :mod:`knowledge_base.builder`). Schema:

``meta(key PRIMARY KEY, value)``
    format version, build time, newest release.
``releases(version PRIMARY KEY, ord, tf_version, tf_wheel, keras_version, keras_source,
estimator_version, python_tag, symbols)``
    one row per minor release, ``ord`` 0 for the oldest.
``symbols(id PRIMARY KEY, name UNIQUE, module, parent, short, kind, object, canonical,
signature, summary, doc, line, first, last, first_ord, last_ord, removed_in, deprecated_in,
deprecation, replacement, depth)``
    one row per public path that ever existed. ``module`` is the public module whose page
    documents it (for a class member, the class's module); ``parent`` the name it hangs off;
    ``object`` the defining object in the newest release that has the symbol; ``canonical`` the
    preferred public name of that object there; ``signature``/``doc`` from that release;
    ``first``/``last`` the first and last release it is in (it may be absent in between:
    see spans); ``removed_in`` the release after ``last`` when it is gone from the newest.
    ``terms``: the porter stems of its name's words, summary and the docstring's opening,
    which the searcher compares with a question's words without stemming at query time.
``spans(symbol_id, first_ord, last_ord, kind, signature, object, deprecation)``
    runs of consecutive releases in which the symbol's facts did not change; ``deprecation``
    is JSON (how, instructions, date, args) or NULL.
``events(symbol_id, ord, release, kind, detail, data)``
    derived history: added, removed, signature_changed, deprecated, undeprecated, moved
    (``data.to``/``data.from``), in release order.
``renames(old PRIMARY KEY, new, note)``
    TF1 -> TF2 upgrade tables from the wheels.
``doc_runs(symbol_id, first_ord, last_ord, role, doc_id)``, ``doc_texts(id, text)``
    role ``doc``: runs of releases whose docstring differs from ``symbols.doc`` (the newest);
    role ``init``: a class's ``__init__`` docstring per run (its constructor's Args). Each
    text is stored once. The docs site reads them; questions use ``symbols.doc`` only.
``symbols_fts`` (FTS5: words, path, summary, doc; rowid = symbols.id)
    ``words`` are the last part of the name split into words (``EarlyStopping`` -> ``early
    stopping earlystopping``), ``path`` the words of the parts before it, ``doc`` the head of
    the docstring (the full text is in ``symbols.doc``; indexing all of it made searches slow
    and noisy). ``symbols_fts_vocab`` (fts5vocab) gives each term's document count, which the
    searcher uses to leave out words so common they only cost time.
"""
from __future__ import annotations

import json
import sqlite3
from functools import cached_property
from pathlib import Path

from knowledge_base import links
from knowledge_base.errors import KBError
from knowledge_base.records import RAISES

FORMAT_VERSION = "7"  # 3: popularity and vectors; 4: MiniLM vectors; 5: two vector views;
# 6: replacements read from deprecation notices in every spelling (deprecation_refs.py);
# 7: a removed module moved where most of its contents went (events.History._module_moves)

SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE releases (
    version TEXT PRIMARY KEY, ord INTEGER NOT NULL, tf_version TEXT, tf_wheel TEXT,
    keras_version TEXT, keras_source TEXT, estimator_version TEXT, python_tag TEXT,
    symbols INTEGER);
CREATE TABLE symbols (
    id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, module TEXT NOT NULL, parent TEXT,
    short TEXT NOT NULL, kind TEXT NOT NULL, object TEXT, canonical TEXT, signature TEXT,
    summary TEXT, doc TEXT, line INTEGER, first TEXT NOT NULL, last TEXT NOT NULL,
    first_ord INTEGER NOT NULL, last_ord INTEGER NOT NULL, removed_in TEXT,
    deprecated_in TEXT, deprecation TEXT, replacement TEXT, depth INTEGER NOT NULL,
    terms TEXT);
CREATE INDEX symbols_module ON symbols(module);
CREATE INDEX symbols_object ON symbols(object);
CREATE INDEX symbols_short ON symbols(short COLLATE NOCASE);
CREATE TABLE spans (
    symbol_id INTEGER NOT NULL REFERENCES symbols(id), first_ord INTEGER NOT NULL,
    last_ord INTEGER NOT NULL, kind TEXT, signature TEXT, object TEXT, deprecation TEXT);
CREATE INDEX spans_symbol ON spans(symbol_id);
CREATE TABLE events (
    symbol_id INTEGER NOT NULL REFERENCES symbols(id), ord INTEGER NOT NULL,
    release TEXT NOT NULL, kind TEXT NOT NULL, detail TEXT, data TEXT);
CREATE INDEX events_symbol ON events(symbol_id);
CREATE INDEX events_ord ON events(ord);
CREATE TABLE renames (old TEXT PRIMARY KEY, new TEXT, note TEXT);
CREATE TABLE doc_texts (id INTEGER PRIMARY KEY, text TEXT NOT NULL);
CREATE TABLE doc_runs (
    symbol_id INTEGER NOT NULL REFERENCES symbols(id), first_ord INTEGER NOT NULL,
    last_ord INTEGER NOT NULL, role TEXT NOT NULL, doc_id INTEGER NOT NULL);
CREATE INDEX doc_runs_symbol ON doc_runs(symbol_id);
CREATE VIRTUAL TABLE symbols_fts USING fts5(words, path, summary, doc, tokenize='porter unicode61');
CREATE VIRTUAL TABLE symbols_fts_vocab USING fts5vocab(symbols_fts, row);
"""


class KBMissing(KBError):
    pass


class KB:
    """Read access to a built KB file."""

    def __init__(self, path: Path):
        self.path = Path(path)
        if not self.path.is_file():
            raise KBMissing(f"no knowledge base at {self.path}; run 'tfdesk kb load' "
                            "(from the shipped extract) or 'tfdesk kb build'")
        try:
            self.db = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True,
                                      check_same_thread=False)
            self.db.row_factory = sqlite3.Row
            fmt = self.db.execute("SELECT value FROM meta WHERE key='format'").fetchone()
        except sqlite3.DatabaseError as exc:
            raise KBError(f"{self.path} is not a tfdesk knowledge base: {exc}") from None
        if not fmt or fmt[0] != FORMAT_VERSION:
            raise KBError(f"{self.path} has KB format {fmt[0] if fmt else '?'}, this tfdesk "
                          f"reads {FORMAT_VERSION}; rebuild it with 'tfdesk kb load'")

    # -- releases -------------------------------------------------------------------------
    @cached_property
    def release_rows(self) -> list[dict]:
        return [dict(r) for r in self.db.execute("SELECT * FROM releases ORDER BY ord")]

    @cached_property
    def versions(self) -> list[str]:
        return [r["version"] for r in self.release_rows]

    @property
    def newest(self) -> str:
        return self.versions[-1]

    def ord_of(self, version: str) -> int:
        """Ordinal of a release; accepts '2.16', '2.16.1', 'v2.16'."""
        v = str(version).strip().lstrip("vV")
        parts = v.split(".")
        key = ".".join(parts[:2])
        if key in self.versions:
            return self.versions.index(key)
        raise KBError(f"unknown release {version!r}; the KB has {self.versions[0]} to "
                      f"{self.versions[-1]}")

    def keras_major(self, ord_: int) -> int | None:
        """2 or 3: the Keras that supplied tf.keras in release ``ord_`` (None: no tf.keras)."""
        v = self.release_rows[ord_].get("keras_version")
        return int(v.split(".")[0]) if v and v.split(".")[0].isdigit() else None

    def keras_label(self, ord_: int) -> str:
        """'Keras 3 (3.12.4)': which Keras a tf.keras fact of release ``ord_`` is from."""
        v = self.release_rows[ord_].get("keras_version")
        return f"Keras {self.keras_major(ord_)} ({v})" if v else "no tf.keras"

    def keras_switch(self, o1: int, o2: int) -> dict | None:
        """The first release after ``o1`` up to ``o2`` whose tf.keras is another Keras major
        (2.16: Keras 3), with both sides said; None when tf.keras keeps its major."""
        lo, hi = min(o1, o2), max(o1, o2)
        for o in range(lo + 1, hi + 1):
            was, now = self.keras_major(o - 1), self.keras_major(o)
            if was and now and was != now:
                return {"release": self.versions[o], "from": self.keras_label(o - 1),
                        "to": self.keras_label(o),
                        "text": (f"tf.keras is {self.keras_label(o)} from TensorFlow "
                                 f"{self.versions[o]} on ({self.keras_label(o - 1)} in "
                                 f"{self.versions[o - 1]}): a new implementation, so members "
                                 f"and arguments changed; Keras 2 stays available as the "
                                 f"tf_keras package (TF_USE_LEGACY_KERAS=1)")}
        return None

    def unusable(self, sym: dict, ord_: int | None = None) -> str | None:
        """'ImportError: ...' when ``sym`` resolves in release ``ord_`` (default: its newest)
        but raises on use (a stub); else None."""
        span = self.span_at(sym["id"], sym["last_ord"] if ord_ is None else ord_)
        dep = json.loads(span["deprecation"]) if span and span["deprecation"] else {}
        return (dep.get("instructions") or "raises on use") if dep.get("how") == RAISES else None

    def meta(self) -> dict:
        return {r[0]: r[1] for r in self.db.execute("SELECT key, value FROM meta")}

    # -- symbols --------------------------------------------------------------------------
    def symbol(self, name: str) -> dict | None:
        row = self.db.execute("SELECT * FROM symbols WHERE name = ?", (name,)).fetchone()
        return dict(row) if row else None

    def symbol_by_id(self, sid: int) -> dict:
        return dict(self.db.execute("SELECT * FROM symbols WHERE id = ?", (sid,)).fetchone())

    def spans(self, symbol_id: int) -> list[dict]:
        rows = self.db.execute("SELECT * FROM spans WHERE symbol_id = ? ORDER BY first_ord",
                               (symbol_id,))
        return [dict(r) for r in rows]

    def span_at(self, symbol_id: int, ord_: int) -> dict | None:
        row = self.db.execute("SELECT * FROM spans WHERE symbol_id = ? AND first_ord <= ? "
                              "AND last_ord >= ?", (symbol_id, ord_, ord_)).fetchone()
        return dict(row) if row else None

    def events(self, symbol_id: int) -> list[dict]:
        rows = self.db.execute("SELECT * FROM events WHERE symbol_id = ? ORDER BY ord, rowid",
                               (symbol_id,))
        return [_event(r) for r in rows]

    def aliases(self, sym: dict) -> list[str]:
        """Other public names of the same object in the newest release that has it."""
        if not sym.get("object"):
            return []
        rows = self.db.execute("SELECT name FROM symbols WHERE object = ? AND last_ord = ? "
                               "AND name != ? ORDER BY depth, name",
                               (sym["object"], sym["last_ord"], sym["name"]))
        return [r[0] for r in rows]

    def modules(self, ord_: int | None = None) -> list[str]:
        ord_ = len(self.versions) - 1 if ord_ is None else ord_
        rows = self.db.execute("SELECT DISTINCT module FROM symbols WHERE first_ord <= ? AND "
                               "last_ord >= ? ORDER BY module", (ord_, ord_))
        return [r[0] for r in rows]

    def module_symbols(self, module: str, ord_: int | None = None) -> list[dict]:
        """Symbols documented on ``module``'s page that are present in release ``ord_``."""
        ord_ = len(self.versions) - 1 if ord_ is None else ord_
        rows = self.db.execute(
            "SELECT s.* FROM symbols s JOIN spans p ON p.symbol_id = s.id WHERE s.module = ? "
            "AND p.first_ord <= ? AND p.last_ord >= ? ORDER BY s.name", (module, ord_, ord_))
        return [dict(r) for r in rows]

    def release_events(self, ord_: int, module: str | None = None) -> list[dict]:
        sql = ("SELECT e.*, s.name, s.module, s.kind AS symbol_kind FROM events e JOIN symbols s "
               "ON s.id = e.symbol_id WHERE e.ord = ?")
        params: list = [ord_]
        if module:
            sql += " AND (s.name = ? OR s.name LIKE ? ESCAPE '\\')"
            params += [module, like_prefix(module)]
        rows = self.db.execute(sql + " ORDER BY s.name", params)
        return [_event(r) for r in rows]

    def renames(self) -> list[dict]:
        return [dict(r) for r in self.db.execute("SELECT * FROM renames ORDER BY old")]

    def availability(self, sym: dict) -> str:
        """'2.4–2.21', or with gaps '2.2–2.5, 2.8–2.21'."""
        spans = self.spans(sym["id"])
        runs: list[list[int]] = []
        for s in spans:
            if runs and s["first_ord"] == runs[-1][1] + 1:
                runs[-1][1] = s["last_ord"]
            else:
                runs.append([s["first_ord"], s["last_ord"]])
        v = self.versions
        return ", ".join(v[a] if a == b else f"{v[a]}–{v[b]}" for a, b in runs)

    def providers(self, sym: dict) -> str:
        """'keras (2.6–2.15), tf_keras (2.16–2.21)': the companion packages that supply this
        name, with the releases; '' when TensorFlow itself does in every release."""
        from knowledge_base.extract.companions import provider_of
        runs: list[list] = []
        for s in self.spans(sym["id"]):
            pkg = provider_of(s["object"])
            if runs and runs[-1][0] == pkg and s["first_ord"] == runs[-1][2] + 1:
                runs[-1][2] = s["last_ord"]
            else:
                runs.append([pkg, s["first_ord"], s["last_ord"]])
        v = self.versions
        return ", ".join(f"{pkg} ({v[a]}{'' if a == b else '–' + v[b]})"
                         for pkg, a, b in runs if pkg)

    def site_path(self, sym: dict) -> str:
        return links.sym_path(sym)


def like_escape(text: str) -> str:
    """``text`` literally inside a LIKE pattern (``ESCAPE '\\'``)."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def like_prefix(module: str) -> str:
    """A LIKE pattern (``ESCAPE '\\'``) for every dotted name below ``module``."""
    return like_escape(module) + ".%"


def _event(row) -> dict:
    d = dict(row)
    d["data"] = json.loads(d["data"]) if d.get("data") else {}
    return d
