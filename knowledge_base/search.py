"""Ranked symbol search over the KB.

A query is tried, in order of confidence, as:

1. a name: exact (``tf.nn.softmax``), with ``tensorflow.``/``keras.`` spellings, legacy TF1
   names through the upgrade tables (``tf.Session`` -> ``tf.compat.v1.Session``), a trailing
   part (``nn.softmax``), a short name (``softmax``, ``EarlyStopping``);
2. a misspelt name: each dotted part matched against the children of the part before it
   (``tf.nn.softmx``), or the short name against all short names (rapidfuzz);
3. words: SQLite FTS5 (BM25) over the name's words, summaries and docstrings.

Every candidate also gets a prior that prefers what people mean: present in the newest release,
not ``tf.compat.v1``/``tf.raw_ops``/``experimental`` unless asked for, shallow, not a member.
"""
from __future__ import annotations

import functools
import re
import sqlite3
from dataclasses import dataclass
from functools import cached_property

import snowballstemmer
from rapidfuzz import fuzz, process

from knowledge_base import concepts, popularity, semantic
from knowledge_base.errors import KBError

MAX_QUERY = 300
_WORD = re.compile(r"[A-Za-z0-9]+")
_NAMEISH = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*\.?(\(\))?$")
STOPWORDS = frozenset("""a an the to of in on for with without by from and or is are be how do does
i my me we you your can what which when where why it its this that as at into using use via
want need make get tf tensorflow keras please""".split())
# Blend of the question signals (tuned on kb_queries.yaml, not on kb_questions.yaml).
SEM_K, SEM_WEIGHT, SEM_FLOOR = 120, 1.2, 0.3
CONCEPT_BONUS = 0.8
TWIN_NAMESPACES = (("tf.keras.ops.", "keras"), ("tf.keras.backend.", "keras"),
                   ("tf.keras.activations.", "keras"), ("tf.ragged.", "ragged"),
                   ("tf.sparse.", "sparse"))
KERAS_TWIN_PENALTY = 0.4
NAMED_WORD_MAX_DF = 0.01
MEMBER_PENALTY, CONSTANT_PENALTY = 0.25, 0.3
SPECIFIC_WORD_MAX_DF = 0.005
NAMED_FIRST_BONUS = 0.38


@dataclass
class Hit:
    id: int
    name: str
    score: float
    how: str          # exact, alias, legacy, suffix, short, fuzzy, text
    note: str = ""    # e.g. the legacy name it came from


class Searcher:
    def __init__(self, db: sqlite3.Connection, newest_ord: int):
        self.db = db
        self.newest = newest_ord
        rows = db.execute("SELECT id, name, short, depth, last_ord, kind, canonical, object "
                          "FROM symbols")
        self.objects: dict[int, str] = {}
        self.kinds: dict[int, str] = {}
        self.name_to_id: dict[str, int] = {}
        self.lower: dict[str, list[int]] = {}
        self.short: dict[str, list[int]] = {}
        self.children: dict[str, dict[str, int]] = {}
        self.names: dict[int, str] = {}
        self.prior: dict[int, float] = {}
        for sid, name, short, depth, last, kind, canonical, obj in rows:
            self.names[sid] = name
            self.kinds[sid] = kind
            if obj:
                self.objects[sid] = obj
            self.name_to_id[name] = sid
            self.lower.setdefault(name.lower(), []).append(sid)
            self.short.setdefault(short.lower(), []).append(sid)
            parent, _, leaf = name.rpartition(".")
            self.children.setdefault(parent, {})[leaf] = sid
            self.prior[sid] = _prior(name, depth, last, newest_ord, kind, canonical)
        self.short_keys = list(self.short)
        self._kid_lists: dict[str, list[str]] = {}
        self.renames = {old: (new, note) for old, new, note in
                        db.execute("SELECT old, new, note FROM renames")}
        # Document count per (porter-stemmed) term, to leave out words too common to matter.
        self.df = dict(db.execute("SELECT term, doc FROM symbols_fts_vocab"))
        self.n_docs = max(1, len(self.names))
        self.stem = stem
        self._vocab = [t for t, d in self.df.items() if d >= 3 and t.isalpha()]
        self.semantic_error = ""
        refs = popularity.load(db)
        for sid, n in refs.items():
            if sid in self.prior:
                self.prior[sid] += popularity.prior(n)

    # -- public ---------------------------------------------------------------------------
    def search(self, query: str, limit: int = 5) -> list[Hit]:
        q = clean_query(query)
        if not q:
            return []
        wants_compat = "compat" in q or "v1" in q.split(".")
        hits: dict[int, Hit] = {}

        def add(sid: int, score: float, how: str, note: str = "", prior_weight: float = 0.25):
            prior = self.prior[sid]
            if wants_compat and ".compat." in self.names[sid]:
                prior += 0.5
            total = score + prior_weight * prior
            if sid not in hits or hits[sid].score < total:
                hits[sid] = Hit(sid, self.names[sid], total, how, note)

        name = q.rstrip(".").removesuffix("()")
        nameish = bool(_NAMEISH.match(q))
        if nameish:
            self._names(name, add)
        # Words only when the name gave nothing convincing; for a name-like query they are
        # a weak fallback (its words are the name's own parts).
        if not nameish or not any(h.score >= 0.6 for h in hits.values()):
            self._text(q, add, limit * 4, weight=0.8 if not nameish else 0.5)
        ranked = sorted(hits.values(), key=lambda h: (-h.score, h.name))
        # One line per object: aliases of a better-ranked hit add nothing.
        out, seen = [], set()
        for h in ranked:
            obj = self.objects.get(h.id)
            if obj and obj in seen and h.how != "exact":
                continue
            seen.add(obj)
            out.append(h)
            if len(out) == limit:
                break
        return out

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

    def resolve(self, name: str) -> Hit | None:
        """The one symbol a name means (for history): exact, spellings, legacy names, then
        the best name-like match."""
        hits = self.search(name, limit=1)
        if hits and hits[0].how != "text":
            return hits[0]
        return None

    # -- name matching ----------------------------------------------------------------------
    def _names(self, q: str, add) -> None:
        spellings = _spellings(q)
        # A name that is still public is not "TF1 API" just because tf.compat.v1 has it too.
        literal = any(c in self.name_to_id for c, n in spellings if not n.endswith("tf.compat.v1"))
        for cand, note in spellings:
            sid = self.name_to_id.get(cand)
            if sid is not None:
                if literal and note.endswith("tf.compat.v1"):
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
            for sid in self.lower.get(cand.lower(), ()):
                add(sid, 0.95, "exact")
        self._renamed_prefix(q, add)
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

    # -- words ------------------------------------------------------------------------------
    @cached_property
    def semantic(self):
        """The semantic index, or None (with ``semantic_error`` saying why)."""
        try:
            return semantic.Index.load(self.db)
        except KBError as exc:
            self.semantic_error = str(exc)
            return None

    def _correct(self, word: str) -> str:
        """A question word the KB has never seen, replaced by the nearest word it has
        ("tensr" -> "tensor"); the stemmer already folds "embeding" into "embed"."""
        if len(word) < 4 or self.df.get(self.stem(word)) or not word.isalpha():
            return word
        m = process.extractOne(word, self._vocab, scorer=fuzz.ratio, score_cutoff=80)
        return m[0] if m else word

    def _text(self, q: str, add, limit: int, weight: float) -> None:
        raw = [w.lower() for w in _WORD.findall(q.replace("_", " "))]
        words = [w for w in raw if w not in STOPWORDS] or raw
        words = [self._correct(w) for w in dict.fromkeys(w for w in words if len(w) > 1)][:12]
        if not words:
            return
        words = self._misspelt_names(words)
        named = self._named_by_words(words)
        # Words in more than 12% of the KB ("tensor", "dataset") barely change BM25's order
        # but make the query slow; keep them only if nothing rarer is there.
        dfs = {w: self.df.get(self.stem(w), 0) for w in words}
        rare = [w for w in words if dfs[w] <= 0.12 * self.n_docs]
        terms = rare or sorted(words, key=dfs.get)[:2]
        terms += [v for w in terms for v in _variants(w) if v not in terms]
        match = " OR ".join(f'"{w}"' for w in terms)
        rows = self.db.execute(
            "SELECT rowid, bm25(symbols_fts, 10.0, 1.5, 4.0, 1.0) AS r FROM symbols_fts "
            "WHERE symbols_fts MATCH ? ORDER BY r LIMIT ?", (match, max(limit, 40))).fetchall()
        # BM25 favours short texts that repeat one word; how many of the question's words a
        # symbol's name, summary and opening lines cover is the better half of the score.
        wanted = {self.stem(w) for w in words}
        for v in (v for w in words for v in _variants(w)):
            wanted.add(self.stem(v))
        ids = [r[0] for r in rows] + [sid for sid in named if sid not in {r[0] for r in rows}]
        cover = self._coverage(ids, wanted, len(words))
        best = (-rows[0][1] or 1.0) if rows else 1.0
        scores: dict[int, float] = {}
        for sid, r in rows:
            scores[sid] = weight * (0.45 * (-r / best) + 0.55 * cover.get(sid, 0.0)) \
                + named.pop(sid, 0.0)
        for sid, bonus in named.items():
            scores[sid] = weight * (0.2 + 0.55 * cover.get(sid, 0.0)) + bonus
        # Meaning: nearest symbols by embedding, added to whatever the words gave.
        if self.semantic is not None:
            for sid, cos in self.semantic.query(" ".join(words), k=SEM_K):
                scores[sid] = scores.get(sid, 0.0) + SEM_WEIGHT * max(0.0, cos - SEM_FLOOR)
        # Concepts see one-letter words too ("largest k").
        said_stems = wanted | {self.stem(w) for w in raw if len(w) == 1 and w not in STOPWORDS}
        for name, rank in concepts.meant(said_stems, self.stem):
            sid = self.name_to_id.get(name)
            if sid is not None:
                scores[sid] = scores.get(sid, 0.0) + CONCEPT_BONUS - 0.05 * rank
        self._specific_over_generic(scores, wanted)
        said = set(raw)
        for sid, score in scores.items():
            name = self.names[sid]
            kind = self.kinds[sid]
            if kind in ("method", "property") and not self._words_of(
                    name.rsplit(".", 2)[-2]) <= wanted:
                score -= MEMBER_PENALTY  # LinearOperator.inverse is not "inverse of a matrix"
            elif kind == "constant":
                score -= CONSTANT_PENALTY  # tag constants (tf.saved_model.GPU) answer no how-to
            # Twins of core ops in other namespaces (tf.keras.ops.concatenate, tf.ragged.
            # boolean_mask) come after the core op unless the question names the namespace.
            for prefix, word in TWIN_NAMESPACES:
                if name.startswith(prefix) and word not in said:
                    score -= KERAS_TWIN_PENALTY
                    break
            add(sid, score, "text", prior_weight=1.0)

    def _words_of(self, part: str) -> set[str]:
        """Stems of a name part's words: 'LinearOperator' -> {'linear', 'oper'}."""
        return {self.stem(w.lower()) for w in re.split(r"_|(?<=[a-z0-9])(?=[A-Z])", part) if w}

    def _specific_over_generic(self, scores: dict[int, float], wanted: set[str]) -> None:
        """A member the question names outranks its class ("repeat a dataset" is
        Dataset.repeat, not Dataset, whose long docstring mentions everything)."""
        for sid in list(scores):
            parent, _, leaf = self.names[sid].rpartition(".")
            pid = self.name_to_id.get(parent)
            if pid is None or pid not in scores or self.kinds[pid] == "module":
                continue
            leaf_words = self._words_of(leaf) - self._words_of(parent.rpartition(".")[2])
            # Only for a specific word (Dataset.repeat), not a generic one (Layer.output);
            # compared with the priors that add() will put on top.
            specific = all(self.df.get(w, 0) <= SPECIFIC_WORD_MAX_DF * self.n_docs
                           for w in leaf_words)
            if leaf_words and specific and leaf_words <= wanted and \
                    scores[pid] + self.prior[pid] >= scores[sid] + self.prior[sid]:
                scores[pid] = scores[sid] + self.prior[sid] - self.prior[pid] - 0.05

    def _coverage(self, ids: list[int], wanted: set[str], n_words: int) -> dict[int, float]:
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        return {sid: len(wanted.intersection(terms.split())) / max(1, n_words)
                for sid, terms in self.db.execute(
                    f"SELECT id, terms FROM symbols WHERE id IN ({marks})", ids)}

    def _misspelt_names(self, words: list[str]) -> list[str]:
        """Question words with the short name they misspell ("embeding" -> "embedding")
        put in their place."""
        out = []
        for w in words:
            if len(w) >= 6 and w not in self.short and not self.df.get(w):
                m = process.extractOne(w, self.short_keys, scorer=fuzz.ratio, score_cutoff=88)
                w = m[0] if m else w
            out.append(w)
        return out

    def _named_by_words(self, words: list[str]) -> dict[int, float]:
        """Symbols whose own name is a word of the question or two adjacent words joined
        ("sort a tensor" -> tf.sort, "one hot encoding" -> tf.one_hot, "early stopping" ->
        EarlyStopping): the user named the op without knowing it."""
        keys = set(words)
        for a, b in zip(words, words[1:]):
            keys |= {f"{a}_{b}", f"{a}{b}"}
        # One word between ("save model weights" -> save_weights).
        for a, b in zip(words, words[2:]):
            keys.add(f"{a}_{b}")
        out: dict[int, float] = {}
        first = words[0] if words else ""
        for key in keys:
            # A single common word ("tensor", "shape", "model") names a symbol by accident.
            if key in words and self.df.get(self.stem(key), 0) > NAMED_WORD_MAX_DF * self.n_docs:
                continue
            # How-to questions start with the operation: "pad a tensor with zeros" is tf.pad
            # more than tf.zeros.
            bonus = NAMED_FIRST_BONUS if key == first or key.startswith(first + "_") else 0.3
            for sid in self.short.get(key, ()):
                if self.kinds[sid] != "module":
                    out[sid] = max(out.get(sid, 0.0), bonus)
        return out


stem = functools.lru_cache(maxsize=65536)(snowballstemmer.stemmer("porter").stemWord)


def _variants(word: str) -> list[str]:
    """Irregular plurals the stemmer keeps apart: matrices/matrix, indices/index."""
    if word.endswith("ices") and len(word) > 5:
        return [word[:-4] + "ix", word[:-4] + "ex"]
    return []


def clean_query(query: str) -> str:
    """Any input becomes a short, valid str: bad UTF-8 replaced, whitespace collapsed."""
    if isinstance(query, bytes):
        query = query.decode("utf-8", "replace")
    query = query.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    query = " ".join(query.split())[:MAX_QUERY]
    return query.strip("`'\" ")


def _spellings(q: str) -> list[tuple[str, str]]:
    """The ways people write a TF name, each with a note when it is not literal."""
    out = [(q, "")]
    if q.startswith("tensorflow."):
        out.append(("tf." + q[len("tensorflow."):], ""))
    elif q.startswith("keras."):
        out.append(("tf." + q, ""))
    elif not q.startswith("tf.") and "." in q:
        out.append(("tf." + q, ""))
    if q.startswith("tf.contrib."):
        # tf.contrib left in TF 2.0; most of tf.contrib.X.Y lived on as tf.X.Y (or its
        # compat.v1 copy), so try that name when the upgrade tables do not know it.
        rest = q[len("tf.contrib."):]
        out.append(("tf." + rest, f"tf.contrib was removed in TF 2.0; closest: tf.{rest}"))
    for cand, _ in list(out):
        if cand.startswith("tf.compat.v2."):
            out.append(("tf." + cand[len("tf.compat.v2."):], "tf.compat.v2 mirrors tf"))
        if cand.startswith("tf.") and not cand.startswith("tf.compat."):
            out.append(("tf.compat.v1." + cand[3:], f"{cand} is TF1 API, kept as tf.compat.v1"))
    return out


def _prior(name: str, depth: int, last: int, newest: int, kind: str, canonical: str | None) -> float:
    parts = name.split(".")
    p = 0.0
    if last < newest:
        p -= 0.4
    if "compat" in parts:
        p -= 0.6
    if "raw_ops" in parts:
        p -= 0.9
    if "experimental" in parts:
        p -= 0.25
    if name.startswith(("tf.keras.ops.", "tf.keras.backend.", "tf.keras.src.")):
        p -= 0.1  # Keras' own copies of core ops: people mostly mean the tf.* op
    if kind in ("method", "property"):
        p -= 0.15
    if parts[-1].startswith("__"):
        p -= 0.35  # operator methods (__getitem__): listed, but below ordinary members
    if canonical and canonical != name:
        p -= 0.15
    p -= 0.04 * depth
    return p
