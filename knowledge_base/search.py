"""Name lookup over the KB: which symbols a query names, ranked.

A query is tried, in order of confidence, as a name: exact (``tf.nn.softmax``), with
``tensorflow.``/``keras.`` spellings, legacy TF1 names through the upgrade tables
(``tf.Session`` -> ``tf.compat.v1.Session``), a member a TF2 class inherits
(``tf.keras.Model.set_weights`` -> ``tf.keras.layers.Layer.set_weights``, see
:mod:`knowledge_base.inherited`), a trailing part (``nn.softmax``), a short name (``softmax``,
``EarlyStopping``); then as a misspelt name: each dotted part matched against the children of
the part before it (``tf.nn.softmx``), or the short name against all short names (rapidfuzz).
Questions in words are the question wing's (:mod:`knowledge_base.qa.index`), which adds its
hits to the same :class:`Hits`.

Every candidate also gets a prior that prefers what people mean: present in the newest release,
not ``tf.compat.v1``/``tf.raw_ops``/``experimental`` unless asked for, shallow, not a member.
"""
from __future__ import annotations

import functools
import re
import sqlite3
from dataclasses import dataclass

from rapidfuzz import fuzz, process

from knowledge_base import name_cache, popularity
from knowledge_base.inherited import Inherited, resolve as resolve_inherited
from knowledge_base.names import (clean_query, is_name, name_prior, spellings, traits,
                                  wants_compat)


@dataclass
class Hit:
    id: int
    name: str
    score: float
    how: str          # exact, alias, legacy, inherited, defined, parent, suffix, short, fuzzy, text
    note: str = ""    # e.g. the legacy name it came from


class Hits(dict):
    """The candidates of one query (id -> best Hit), each scored with the name prior."""

    def __init__(self, searcher: "Searcher", compat: bool):
        super().__init__()
        self.searcher = searcher
        self.compat = compat

    def add(self, sid: int, score: float, how: str, note: str = "", prior_weight: float = 0.25):
        s = self.searcher
        prior = s.prior[sid]
        if self.compat and ".compat." in s.names[sid]:
            prior += 0.5
        total = score + prior_weight * prior
        if sid not in self or self[sid].score < total:
            self[sid] = Hit(sid, s.names[sid], total, how, note)

    def convincing(self) -> bool:
        return any(h.score >= 0.6 for h in self.values())

    def ranked(self, limit: int) -> list[Hit]:
        """Best first, one line per object: aliases of a better-ranked hit add nothing."""
        out, seen = [], set()
        for h in sorted(self.values(), key=lambda h: (-h.score, h.name)):
            obj = self.searcher.objects.get(h.id)
            if obj and obj in seen and h.how != "exact":
                continue
            seen.add(obj)
            out.append(h)
            if len(out) == limit:
                break
        return out


class _PerSymbol(dict):
    """symbol id -> a value computed on first use (a name lookup touches a few symbols; the
    question ranker a few hundred; none needs all 39,000 at start)."""

    def __init__(self, compute):
        super().__init__()
        self.compute = compute

    def __missing__(self, sid: int):
        value = self[sid] = self.compute(sid)
        return value

    def get(self, sid: int, default=None):
        value = self[sid]
        return default if value is None else value


def build_tables(db: sqlite3.Connection) -> tuple[dict, ...]:
    """names, kinds, facts (depth, last release, alias), name_to_id, short (lower-case short
    name -> ids) and children (parent -> leaf -> id), in table order."""
    names: dict[int, str] = {}
    kinds: dict[int, str] = {}
    facts: dict[int, tuple] = {}
    name_to_id: dict[str, int] = {}
    short: dict[str, list[int]] = {}
    children: dict[str, dict[str, int]] = {}
    pool: dict[str, str] = {}  # one string per kind, not one per row
    # alias: the symbol is another public name of its canonical one (names.traits).
    for sid, name, leaf, depth, last, kind, alias in db.execute(
            "SELECT id, name, short, depth, last_ord, kind, "
            "(coalesce(canonical, '') NOT IN ('', name)) FROM symbols ORDER BY id"):
        names[sid] = name
        kinds[sid] = pool.setdefault(kind, kind)
        facts[sid] = (depth, last, alias)
        name_to_id[name] = sid
        short.setdefault(leaf.lower(), []).append(sid)
        # short is the name's last part (the builder's rule), so it serves as the leaf.
        parent = name[:-len(leaf) - 1] if len(name) > len(leaf) else ""
        children.setdefault(parent, {})[leaf] = sid
    return names, kinds, facts, name_to_id, short, children


class Searcher:
    def __init__(self, db: sqlite3.Connection, versions: list[str]):
        """``versions``: the KB's releases, oldest first (``KB.versions``).

        The name tables hold what every lookup reads, and no more: each symbol's name, kind,
        short name and place under its parent, plus three small facts for the prior. What
        only some hits need (the defining object, for ``Hits.ranked``) is read from SQLite
        when asked for; the case-folded names are the short-name table filtered. With the
        inherited members (60,000 symbols) that keeps a shell's name lookup and a server's
        memory near what 39,000 symbols took. The tables are kept beside the KB file for the
        next process (:mod:`knowledge_base.name_cache`)."""
        self.db = db
        self.versions = versions
        self.objects: dict[int, str | None] = _PerSymbol(self._object)
        kb = name_cache.kb_file(db)
        before = name_cache.stamp(kb)  # taken before the rows are read (see name_cache)
        tables = name_cache.load(kb, before)
        if tables is None:
            tables = build_tables(db)
            name_cache.save(kb, before, tables)
        self.names: dict[int, str]
        self.kinds: dict[int, str]
        self._facts: dict[int, tuple]
        self.name_to_id: dict[str, int]
        self.short: dict[str, list[int]]
        self.children: dict[str, dict[str, int]]
        self.names, self.kinds, self._facts, self.name_to_id, self.short, self.children = tables
        self.short_keys = list(self.short)
        self._kid_lists: dict[str, list[str]] = {}
        self.renames = {old: (new, note) for old, new, note in
                        db.execute("SELECT old, new, note FROM renames")}
        # Per searcher (the answers depend on this KB): a name asked again is not resolved again.
        self.inherited = functools.lru_cache(maxsize=1024)(self._inherited)
        self.evidence = popularity.load(db)
        # What a symbol is (names.traits), and the prior that prefers what people mean.
        self.traits: dict[int, tuple[float, ...]] = _PerSymbol(self._traits)
        self.prior: dict[int, float] = _PerSymbol(self._prior)

    def _object(self, sid: int) -> str | None:
        row = self.db.execute("SELECT object FROM symbols WHERE id = ?", (sid,)).fetchone()
        return row[0] or None if row else None

    def same_lower(self, name: str) -> list[int]:
        """The symbols whose name is ``name`` in any case, in table order."""
        key = name.lower()
        return [sid for sid in self.short.get(key.rpartition(".")[2], ())
                if self.names[sid].lower() == key]

    def _traits(self, sid: int) -> tuple[float, ...]:
        depth, last, alias = self._facts[sid]
        return traits(self.names[sid], depth, last, len(self.versions) - 1, self.kinds[sid],
                      bool(alias))

    def _prior(self, sid: int) -> float:
        p = name_prior(self.names[sid], self.traits[sid])
        e = self.evidence.get(sid)
        return p if e is None else p + popularity.prior(e)

    # -- public ---------------------------------------------------------------------------
    def hits(self, q: str) -> Hits:
        """The name hits of a cleaned query (none unless it is written as a name)."""
        found = Hits(self, wants_compat(q))
        if is_name(q):
            self._names(q.rstrip(".").removesuffix("()"), found.add)
        return found

    def search(self, query: str, limit: int = 5) -> list[Hit]:
        """The symbols a name means, best first (questions in words: the question wing)."""
        q = clean_query(query)
        return self.hits(q).ranked(limit) if q else []

    def nearest_names(self, query: str, limit: int = 5) -> list[str]:
        """Closest names by spelling alone, for 'did you mean'."""
        q = clean_query(query).rsplit(".", 1)[-1].lower()
        if not q:
            return []
        found = process.extract(q, self.short_keys, scorer=fuzz.ratio, limit=limit)
        out: list[str] = []
        for key, _, _ in found:
            best = max(self.short[key], key=lambda s: self.prior[s])
            out.append(self.names[best])
        return out

    # -- name matching ----------------------------------------------------------------------
    def match_name(self, q: str, add) -> None:
        """Every way ``q`` may name a symbol, reported as ``add(id, score, how, note)``."""
        self._names(q, add)

    def _names(self, q: str, add) -> None:
        spelled = spellings(q)
        # A name that is still public is not "TF1 API" just because tf.compat.v1 has it too.
        literal = any(c in self.name_to_id for c, n in spelled if not n.endswith("tf.compat.v1"))
        # Nor is a member that a TF2 class inherits from another public class, which the KB
        # lists only where it is defined (tf.keras.Model.set_weights is Layer's).
        inh = None if literal else self.inherited(q)
        if inh is not None:
            self._add_inherited(inh, add)
        for cand, note in spelled:
            sid = self.name_to_id.get(cand)
            if sid is not None:
                if (literal or inh is not None and inh.shown) and note.endswith("tf.compat.v1"):
                    note = ""
                add(sid, 1.0 if cand == q else 0.97, "exact" if cand == q else "alias", note)
            legacy = self.renames.get(cand)
            if legacy:
                new, rnote = legacy
                # The user wrote the TF1 name, so its compat.v1 home is what they mean: the
                # prior's compat/removed penalties must not let a look-alike outrank it.
                if new and new in self.name_to_id:
                    add(self.name_to_id[new], 0.98, "legacy", rnote or f"{cand} is now {new}",
                        prior_weight=0.1)
                elif rnote:
                    for sid2 in self._mentioned(rnote):
                        add(sid2, 0.96, "legacy", rnote, prior_weight=0.1)
            for sid in self.same_lower(cand):
                add(sid, 0.95, "exact")
        self._renamed_prefix(q, add)
        self._listed_parent(q, spelled, add, inh)
        parts = q.split(".")
        leaf = parts[-1].lower()
        if len(parts) > 1:
            # Trailing-part match: "nn.softmax", "layers.Dense".
            tail = "." + ".".join(parts).lower()
            for sid in self.short.get(leaf, ()):
                if self.names[sid].lower().endswith(tail):
                    add(sid, 0.9, "suffix")
        for sid in self.short.get(leaf, ()):
            exact_case = self.names[sid].endswith("." + parts[-1])
            add(sid, (0.85 if len(parts) == 1 else 0.7) + (0.03 if exact_case else 0), "short")
        found_path = len(parts) > 1 and self._fuzzy_path(q, add)
        if not self.short.get(leaf) and not found_path:
            cutoff = 75 if len(leaf) > 4 else 85
            for key, score, _ in process.extract(leaf, self.short_keys, scorer=fuzz.ratio,
                                                 limit=8, score_cutoff=cutoff):
                for sid in self.short[key]:
                    add(sid, 0.8 * score / 100, "fuzzy")

    def _listed_parent(self, q: str, spelled, add, inh: Inherited | None = None) -> None:
        """A dotted name the KB does not list, under one it does: the deepest listed part is
        what the user is after (after where an inherited member is defined, when known)."""
        literal = [c for c, note in spelled if not note.endswith("tf.compat.v1")]
        if any(c in self.name_to_id for c in literal) or q.count(".") < 3:
            return
        for cand in literal:
            parent = cand.rpartition(".")[0]
            while parent.count(".") >= 2:
                sid = self.name_to_id.get(parent)
                if sid is not None and self.kinds[sid] != "module":
                    # Below a misspelt member's fuzzy match (tf.keras.Model.fitt is fit).
                    shown = inh is not None and inh.shown and inh.parent == parent
                    add(sid, 0.66, "parent", "" if shown else f"{q} is not listed; {parent} is")
                    return
                parent = parent.rpartition(".")[0]

    def _inherited(self, q: str) -> Inherited | None:
        """Where the member ``q`` (P.m, not in the KB) of a TF2 class P comes from, when P
        inherits it from another public class: see :mod:`knowledge_base.inherited`. Called
        as ``self.inherited`` (cached)."""
        q = q.rstrip(".").removesuffix("()")
        for cand, note in spellings(q):
            parent, _, member = cand.rpartition(".")
            sid = self.name_to_id.get(parent)
            if (note.endswith("tf.compat.v1") or note.startswith("tf.contrib")
                    or cand in self.name_to_id or sid is None or self.kinds[sid] != "class"):
                continue
            found = resolve_inherited(self.db, parent, member)
            if found is not None:
                return found
        return None

    def _add_inherited(self, inh: Inherited, add) -> None:
        """The defining members, first; candidates (not shown to be inherited) lower."""
        note = inh.note(self.versions)
        for i, name in enumerate(inh.names()):
            sid = self.name_to_id.get(name)
            if sid is None:
                continue
            if inh.shown:
                add(sid, 0.985 - 0.005 * i, "inherited", note, prior_weight=0.1)
            else:
                add(sid, 0.8 - 0.01 * i, "defined", note, prior_weight=0.1)

    def _renamed_prefix(self, q: str, add) -> None:
        """A member of a renamed TF1 name (tf.app.flags.DEFINE_string,
        tf.train.AdamOptimizer.minimize): carry the rest over to the new name, or answer with
        the renamed parent when the KB does not list that member."""
        if not q.startswith("tf.") or q in self.renames:
            return
        parts = q.split(".")
        for cut in range(len(parts) - 1, 1, -1):
            prefix = ".".join(parts[:cut])
            new = self.renames.get(prefix, (None, ""))[0]
            if not new or prefix in self.name_to_id:
                continue
            rest = ".".join(parts[cut:])
            full = f"{new}.{rest}"
            note = f"{prefix} is now {new}"
            if full in self.name_to_id:
                add(self.name_to_id[full], 0.97, "legacy", note, prior_weight=0.1)
            else:
                # The deepest part of the new name the KB lists (tf.app.flags -> tf.compat.v1.app).
                home = new
                while home not in self.name_to_id and "." in home:
                    home = home.rpartition(".")[0]
                if home.count(".") >= 2 and home in self.name_to_id:
                    add(self.name_to_id[home], 0.9, "legacy",
                        f"{note}; {rest} is not listed in it", prior_weight=0.1)
            return

    def renamed_prefix(self, q: str) -> tuple[str, str | None, str] | None:
        """(old prefix, new name, note) of the longest renamed TF1 name that q starts with."""
        parts = q.split(".")
        for cut in range(len(parts) - 1, 1, -1):
            prefix = ".".join(parts[:cut])
            if prefix in self.renames and prefix not in self.name_to_id:
                return (prefix, *self.renames[prefix])
        return None

    def _fuzzy_path(self, q: str, add) -> bool:
        """Walk the dotted name, matching each part among the children of the part before.
        True when it led to a symbol."""
        parts = q.split(".")
        if parts[0] in ("tensorflow", "tf"):
            parts = parts[1:]
        elif parts[0] == "keras":
            parts = ["keras"] + parts[1:]
        cur, total = "tf", 1.0
        for i, part in enumerate(parts):
            kids = self.children.get(cur)
            if not kids:
                return False
            if part in kids:
                nxt, score = part, 100.0
            else:
                m = process.extractOne(part, self._kid_list(cur), scorer=fuzz.ratio,
                                       score_cutoff=70)
                if m is None:
                    lower = {k.lower(): k for k in kids}
                    if part.lower() not in lower:
                        return False
                    nxt, score = lower[part.lower()], 95.0
                else:
                    nxt, score = m[0], m[1]
            cur = f"{cur}.{nxt}"
            total *= score / 100
        sid = self.name_to_id.get(cur)
        if sid is not None and total < 1.0:
            add(sid, 0.88 * total, "fuzzy")
        return sid is not None

    def _kid_list(self, parent: str) -> list[str]:
        if parent not in self._kid_lists:
            self._kid_lists[parent] = list(self.children[parent])
        return self._kid_lists[parent]

    def _mentioned(self, text: str) -> list[int]:
        return [self.name_to_id[m] for m in re.findall(r"tf\.[\w.]*\w", text)
                if m in self.name_to_id][:2]
