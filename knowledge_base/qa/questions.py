"""Answering a question written in words: which symbols could answer it, and how well.

Candidates come from seven sources: BM25 over names, summaries and docstrings (SQLite FTS5);
the semantic index (nearest in meaning, ``semantic.py``); symbols the question names without
knowing it ("sort a tensor" -> tf.sort); names it quotes as code (``nn.moments``,
``np.roll``); concept words kept as data ("dtype" -> tf.cast); and the phrasebooks
(``phrasebook.py``): questions asked before, and guide sentences, near it in meaning.
Each candidate is described by the features below and scored by a learned ranker (gradient
boosted trees, ``data/ranker.txt``), fitted by ``tools/train_ranking.py`` on the training
question sets only, so the held-out sets measure what a new user gets.
"""
from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from knowledge_base.errors import KBError
from knowledge_base.qa import arguments, concepts, minilm, trees
from knowledge_base.names import TRAITS
from knowledge_base.words import STOPWORDS, stem

if TYPE_CHECKING:  # only for the annotations: index.py imports this module
    from knowledge_base.qa.index import QuestionIndex

RANKER = Path(__file__).parent / "data" / "ranker.txt"       # tools/train_ranking.py writes
RANKING = Path(__file__).parent / "data" / "ranking.yaml"    # ... and says how it was fitted
_WORD = re.compile(r"[A-Za-z0-9]+")
# Framing around a question, as chat and issue trackers write it; never what is asked. Only
# these words: "[TF2.0]" or "in Keras" say which release or library, and stay. A label ends
# with a colon, or a dash before a space: "Q-learning" and "Bug-free" are words.
_GREETINGS = ("hi", "hello", "hey", "dear all", "hi all", "hello all", "hi everyone",
              "hello everyone", "hi guys", "hello guys", "hi there", "hello there", "please",
              "pls", "plz")
_LABELS = ("question", "help", "q", "bug", "feature request", "request", "discussion", "urgent",
           "solved", "resolved", "closed", "please", "pls", "plz")
_SIGN_OFFS = ("please help", "please help me", "please", "pls", "plz", "any help", "any ideas",
              "any idea", "any suggestions", "any hints", "any help appreciated",
              "help appreciated", "thanks", "thank you", "thanks in advance", "thanks a lot",
              "many thanks", "thank you in advance", "thx")


def _alternatives(words: tuple[str, ...]) -> str:
    longest_first = sorted(words, key=len, reverse=True)
    return "|".join(re.escape(w).replace(r"\ ", r"\s+") for w in longest_first)


_FRAMING = re.compile(
    rf"^(?:\s*(?:\[(?:{_alternatives(_LABELS)})\]|(?:{_alternatives(_LABELS)})\s*(?::|-(?=\s))"
    rf"|(?:{_alternatives(_GREETINGS)})\b[,!.]?))+\s*"
    rf"|[\s,.;:-]*\b(?:{_alternatives(_SIGN_OFFS)})[\s?!.]*$", re.I)
_END = re.compile(r"[\s?!.,;:\u2026\uff1f\uff01\u3002]+$")  # ? ! . , ; : and full-width ones
# A token written as code: dotted, snake_case, CamelCase with two humps or more, or called.
CODE = re.compile(r"(?<![\w.])(?:[A-Za-z_]\w*\.)+[A-Za-z_]\w*|\b[a-z]\w*_\w+|"
                   r"\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+\b|\b[A-Za-z_]\w*(?=\(\))")
# Names from NumPy, PyTorch and friends often mirror TensorFlow's (np.roll, np.linalg.inv).
FOREIGN = ("np.", "numpy.", "torch.", "jnp.", "jax.numpy.", "scipy.", "pd.")
BM25_K, SEM_K = 40, 120
# Sentences of the phrasebooks read per question, and how many of the nearest add candidates.
ASK_K, ASK_NEW, GUIDE_K, GUIDE_NEW = 20, 8, 40, 15
NAMED_WORD_MAX_DF = 0.01
SPECIFIC_WORD_MAX_DF = 0.005
TWIN_NAMESPACES = (("tf.keras.ops.", "keras"), ("tf.keras.backend.", "keras"),
                   ("tf.keras.activations.", "keras"), ("tf.ragged.", "ragged"),
                   ("tf.sparse.", "sparse"), ("tf.experimental.numpy.", "numpy"))

# What the ranker sees of a candidate. Word evidence, meaning, data, then what the symbol is.
FEATURES = (
    "bm25",            # BM25 score relative to the best one for this question
    "cover",           # share of the question's words in the name, summary and opening lines
    "named",           # the symbol's own short name is a word of the question (or two joined)
    "named_first",     # ... and it is the question's first word: the operation asked for
    "mentioned",       # the question quotes its name as code (nn.moments, fit_generator(),
                       # EarlyStopping): what the user is asking about, or starting from
    "cos",             # cosine similarity of question and symbol text (MiniLM)
    "sem_top",         # 1 / (1 + rank) among the semantic neighbours
    "cos_name",        # cosine similarity of question and "full name: summary"
    "sem_name_top",    # 1 / (1 + rank) among that view's neighbours
    "asked",           # cosine of the nearest known question answered by it (phrasebook.py)
    "asked_top",       # 1 / (1 + rank) of that question among the known ones
    "asked_close",     # how far that cosine is above 0.8 (a rewording, not a neighbour)
    "asked_votes",     # share of the nearest known questions answered by it
    "guide",           # cosine of the nearest guide sentence whose code uses it
    "guide_top",       # 1 / (1 + rank) of that sentence
    "guide_votes",     # share of the nearest guide sentences that point at it
    "guide_weight",    # that sentence's link to it: 1 named in the text, 1/k one of k in code
    "concept",         # concept data points at it
    "concept_first",   # ... as the concept's first name
    "concept_words",   # words of the longest phrase that fired (1-3, more is more specific)
    "member_unnamed",  # a method/property whose class the question does not name
    "member_said",     # a member whose name's words the question says (from_saved_model)
    "specific_member", # a member whose specific name the question says (Dataset.repeat)
    "generic_parent",  # the class of such a member
    "constant",
    "module",
    "twin",            # a Keras/ragged/sparse/NumPy-API twin of a core op, namespace not said
    "removed",         # not in the newest release
    "compat",          # tf.compat.*
    "compat_asked",    # tf.compat.* and the question says compat/v1
    "experimental",
    "keras_copy",      # tf.keras.ops/backend/src: Keras' own copies of core ops
    "member",          # method or property
    "dunder",          # operator methods (__getitem__)
    "alias",           # not the canonical name
    "depth",           # dots in the name
    "refs",            # log(1 + docstrings that name it)
    "files",           # log(1 + guides/examples that use it)
    "param_said",      # the question says one of its keywords (mask zero -> mask_zero): 1 for
                       # several words in order or as code, 0.5 for one long word (arguments.py)
    "param_unique",    # 1 / candidates taking a keyword said as clearly
)
_F = {f: i for i, f in enumerate(FEATURES)}
_TRAITS = [_F[t] for t in TRAITS]  # what a symbol is (names.traits), as features


@functools.lru_cache(maxsize=2)
def ranking(path: Path = RANKING) -> dict:
    """What the ranker was fitted on, when, and how well it carried to unseen question sets."""
    from knowledge_base import yaml_data  # PyYAML: not for a question (QuestionIndex.prepared)
    return yaml_data.load(path.read_text()) or {}


class RankerUnavailable(KBError):
    pass


@functools.lru_cache(maxsize=2)
def ranker(path: Path = RANKER) -> trees.Forest:
    """The fitted ranker (a LightGBM LambdaRank model: trees, because what a feature is worth
    depends on the others: a high cosine means more when the words agree), checked to be
    fitted on the features this code computes. Evaluated by ``trees.py`` with NumPy, exactly
    as LightGBM would: LightGBM is for fitting it (tools/train_ranking.py), not for asking."""
    if not path.is_file():
        raise RankerUnavailable(f"the question ranker {path} is missing; run "
                                "tools/train_ranking.py --write")
    try:
        forest = trees.Forest.read(path)
    except trees.ModelFormatError as exc:
        raise RankerUnavailable(f"{path}: {exc}") from None
    if forest.feature_name() != list(FEATURES):
        extra = sorted(set(forest.feature_name()) ^ set(FEATURES))
        raise RankerUnavailable(f"{path} was fitted on other features than this tfdesk "
                                f"computes (differing: {extra}); re-run tools/train_ranking.py")
    return forest


@functools.lru_cache(maxsize=2)
def stop_stems(stem) -> frozenset[str]:
    return frozenset(stem(w) for w in STOPWORDS)


def words_of(part: str) -> set[str]:
    """Stems of a name part's words: 'LinearOperator' -> {'linear', 'oper'}."""
    return {stem(w.lower()) for w in re.split(r"_|(?<=[a-z0-9])(?=[A-Z])", part) if w}


def variants(word: str) -> list[str]:
    """Irregular plurals the stemmer keeps apart: matrices/matrix, indices/index."""
    if word.endswith("ices") and len(word) > 5:
        return [word[:-4] + "ix", word[:-4] + "ex"]
    return []


@dataclass
class Evidence:
    """What each source says of a question's candidates (symbol id -> its signal)."""
    words: list[str]                  # the question's words, corrected
    wanted: set[str]                  # their stems (and irregular plurals')
    said_words: set[str]              # the words as written
    bm25: dict[int, float]
    named: dict[int, bool]
    sem: dict[str, dict[int, int]]    # view -> rank among the semantic neighbours
    cos: dict[str, dict[int, float]]  # view -> cosine
    asked: dict[int, tuple]
    guide: dict[int, tuple]
    concept: dict[int, tuple[int, int]]
    mentioned: set[int]
    ids: list[int] = field(default_factory=list)
    question: str = ""                # as asked (keywords are read from it)


def candidates(ix: QuestionIndex, q: str, wants_compat: bool, meaning: bool = True,
               leave_out: tuple[tuple[str, ...], int] = ((), 0)) -> tuple[list[int], np.ndarray]:
    """The symbols that could answer question ``q`` and their features (one row each).
    ``meaning=False`` leaves the sentence model out (a misspelt name is not a sentence, and
    names must stay instant). ``leave_out`` is for training only (see Book.evidence)."""
    ev = evidence(ix, q, meaning, leave_out)
    if ev is None:
        return [], np.zeros((0, len(FEATURES)))
    return ev.ids, features(ix, ev, wants_compat)


def evidence(ix: QuestionIndex, q: str, meaning: bool,
             leave_out: tuple[tuple[str, ...], int]) -> Evidence | None:
    """Every source's candidates for ``q`` (None when it has no word to search by)."""
    q = unframed(q)
    raw = [w.lower() for w in _WORD.findall(q.replace("_", " "))]
    said = [w for w in raw if w not in STOPWORDS] or raw
    asked = list(dict.fromkeys(w for w in said if len(w) > 1))[:12]
    words = misspelt_names(ix, [correct(ix, w) for w in asked])
    if not words:
        return None
    fixed = dict(zip(asked, words))
    wanted = {stem(w) for w in words} | {stem(v) for w in words for v in variants(w)}
    sem: dict[str, dict[int, int]] = {"doc": {}, "name": {}}
    cos: dict[str, dict[int, float]] = {"doc": {}, "name": {}}
    index = ix.semantic if meaning else None
    said_as = sentence(q)
    if index is not None:
        # The whole question: the sentence model reads "not", "only", "per" and word order.
        for view in sem:
            for rank, (sid, c) in enumerate(index.query(said_as, k=SEM_K, view=view)):
                sem[view][sid], cos[view][sid] = rank, c
    asked_ev, guide = phrases(ix, said_as, leave_out) if index is not None else ({}, {})
    # Concepts see one-letter words too ("largest k").
    said_stems = wanted | {stem(w) for w in raw if len(w) == 1 and w not in STOPWORDS}
    order = [stem(fixed.get(w, w)) for w in said]
    ev = Evidence(words, wanted, set(raw), bm25_of(ix, words), named_by_words(ix, words),
                  sem, cos, asked_ev, guide, concepts_meant(ix, said_stems, order),
                  mentioned_names(ix, q), question=q)
    ev.ids = list(dict.fromkeys([
        *ev.bm25, *ev.named, *sem["doc"], *sem["name"], *ev.concept, *ev.mentioned,
        *(i for i, e in asked_ev.items() if e[1] < ASK_NEW),
        *(i for i, e in guide.items() if e[1] < GUIDE_NEW)]))
    if index is not None:
        for view, found in cos.items():
            missing = [i for i in ev.ids if i not in found]
            found.update(zip(missing, index.similarity(said_as, missing, view)))
    return ev


def unframed(q: str) -> str:
    """The question without the framing that asks nothing: a greeting or a tracker's label
    before it ("Hi,", "Question:", "[Bug]"), thanks or a plea for help after it. A release it
    names stays: "in TensorFlow 2.0" says TF 2 names, not their tf.compat.v1 copies."""
    out = " ".join(_FRAMING.sub("", q).split()).lstrip(":;,- ")
    return out if _WORD.search(out) else q


def sentence(q: str) -> str:
    """The question as the sentence model reads it: without the punctuation that ends it. The
    model reads "?" as a token, and one added or dropped changed the first answer for 14 of
    115 real titles, though it asks nothing."""
    return _END.sub("", q) or q


def bm25_of(ix: QuestionIndex, words: list[str]) -> dict[int, float]:
    """BM25 over names, summaries and docstrings, relative to the best hit."""
    # Words in more than 12% of the KB ("tensor", "dataset") barely change BM25's order
    # but make the query slow; keep them only if nothing rarer is there.
    dfs = {w: ix.df.get(stem(w), 0) for w in words}
    rare = [w for w in words if dfs[w] <= 0.12 * ix.n_docs]
    terms = rare or sorted(words, key=dfs.get)[:2]
    terms += [v for w in terms for v in variants(w) if v not in terms]
    rows = ix.lookup.db.execute(
        "SELECT rowid, bm25(symbols_fts, 10.0, 1.5, 4.0, 1.0) AS r FROM symbols_fts "
        "WHERE symbols_fts MATCH ? ORDER BY r LIMIT ?",
        (" OR ".join(f'"{w}"' for w in terms), BM25_K)).fetchall()
    best = (-rows[0][1] or 1.0) if rows else 1.0
    return {sid: -r / best for sid, r in rows}


def concepts_meant(ix: QuestionIndex, said_stems: set[str],
                   order: list[str]) -> dict[int, tuple[int, int]]:
    """Symbol -> (its place among the concept's names, words of the phrase that fired)."""
    concept: dict[int, tuple[int, int]] = {}
    for name, rank, n_words in concepts.meant(said_stems, stem, order, ix.concepts):
        sid = ix.lookup.name_to_id.get(name)
        if sid is not None:
            # Rank and phrase length from the same concept: the one with the longest phrase,
            # then the name's best place in it.
            old = concept.get(sid)
            if old is None or (n_words, -rank) > (old[1], -old[0]):
                concept[sid] = (rank, n_words)
    return concept


def features(ix: QuestionIndex, ev: Evidence, wants_compat: bool) -> np.ndarray:
    """One row of FEATURES per candidate."""
    ids, wanted, look = ev.ids, ev.wanted, ix.lookup
    cover = coverage(ix, ids, wanted, len(ev.words))
    specific, parents = specific_members(ix, ids, wanted)
    said_members = {i for i in ids if look.kinds[i] in ("method", "property") and
                    (w := words_of(look.names[i].rpartition(".")[2]) - stop_stems(stem))
                    and w <= wanted}
    x = np.zeros((len(ids), len(FEATURES)))
    said = arguments.features(ix, ids, ev.question)
    for row, sid in enumerate(ids):
        f = x[row]
        name, kind = look.names[sid], look.kinds[sid]
        f[_F["bm25"]] = ev.bm25.get(sid, 0.0)
        f[_F["cover"]] = cover.get(sid, 0.0)
        if sid in ev.named:
            f[_F["named"]] = 1.0
            f[_F["named_first"]] = float(ev.named[sid])
        f[_F["mentioned"]] = float(sid in ev.mentioned)
        _meaning(f, sid, ev)
        if kind in ("method", "property") and not words_of(name.rsplit(".", 2)[-2]) <= wanted:
            f[_F["member_unnamed"]] = 1.0
        f[_F["member_said"]] = float(sid in said_members)
        f[_F["specific_member"]] = float(sid in specific)
        f[_F["generic_parent"]] = float(sid in parents)
        f[_F["constant"]] = float(kind == "constant")
        f[_F["module"]] = float(kind == "module")
        f[_F["twin"]] = float(any(name.startswith(p) and w not in ev.said_words
                                  for p, w in TWIN_NAMESPACES))
        f[_TRAITS] = look.traits[sid]
        f[_F["compat_asked"]] = f[_F["compat"]] * wants_compat
        if sid in said:
            f[_F["param_said"]], f[_F["param_unique"]] = said[sid]
        e = look.evidence.get(sid)
        if e is not None:
            f[_F["refs"]] = math.log1p(e.refs)
            f[_F["files"]] = math.log1p(e.files)
    return x


def _meaning(f: np.ndarray, sid: int, ev: Evidence) -> None:
    """The features from meaning: sentence-model neighbours, phrasebooks, concepts."""
    f[_F["cos"]] = ev.cos["doc"].get(sid, 0.0)
    f[_F["sem_top"]] = 1.0 / (1 + ev.sem["doc"][sid]) if sid in ev.sem["doc"] else 0.0
    f[_F["cos_name"]] = ev.cos["name"].get(sid, 0.0)
    f[_F["sem_name_top"]] = 1.0 / (1 + ev.sem["name"][sid]) if sid in ev.sem["name"] else 0.0
    if sid in ev.asked:
        c, r, _, n = ev.asked[sid]
        f[_F["asked"]], f[_F["asked_top"]] = c, 1.0 / (1 + r)
        f[_F["asked_close"]] = max(0.0, c - 0.8) / 0.2
        f[_F["asked_votes"]] = n / ASK_K
    if sid in ev.guide:
        c, r, w, n = ev.guide[sid]
        f[_F["guide"]], f[_F["guide_top"]] = c, 1.0 / (1 + r)
        f[_F["guide_votes"]] = n / GUIDE_K
        f[_F["guide_weight"]] = w
    if sid in ev.concept:
        c_rank, c_words = ev.concept[sid]
        f[_F["concept"]] = 1.0
        f[_F["concept_first"]] = float(c_rank == 0)
        f[_F["concept_words"]] = min(c_words, 3) / 3


def phrases(ix: QuestionIndex, q: str,
            leave_out: tuple[tuple[str, ...], int]) -> tuple[dict, dict]:
    """What the phrasebooks say of ``q``: evidence per symbol from known questions, and from
    guide sentences."""
    books = ix.phrasebooks
    if not books:
        return {}, {}
    v = ix.semantic.vector(q)
    asked = books["asked"].evidence(v, ASK_K, leave_out) if "asked" in books else {}
    guide = books["guide"].evidence(v, GUIDE_K) if "guide" in books else {}
    return asked, guide


def rank(ix: QuestionIndex, q: str, wants_compat: bool,
         meaning: bool = True) -> list[tuple[int, float]]:
    """(symbol id, ranker score) for every candidate."""
    with minilm.one_thread():
        ids, x = candidates(ix, q, wants_compat, meaning)
    if not ids:
        return []
    return list(zip(ids, ix.ranker.predict(x).tolist()))


def correct(ix: QuestionIndex, word: str) -> str:
    """A question word the KB has never seen, replaced by the nearest word it has
    ("tensr" -> "tensor"); the stemmer already folds "embeding" into "embed". Words the
    concept phrases use ("unsqueeze") are left alone."""
    from rapidfuzz import fuzz, process
    if len(word) < 4 or ix.df.get(stem(word)) or not word.isalpha() \
            or stem(word) in ix.concept_words:
        return word
    m = process.extractOne(word, ix.vocab, scorer=fuzz.ratio, score_cutoff=80)
    return m[0] if m else word


def misspelt_names(ix: QuestionIndex, words: list[str]) -> list[str]:
    """Question words with the short name they misspell ("embeding" -> "embedding") put in
    their place."""
    from rapidfuzz import fuzz, process
    out = []
    for w in words:
        if len(w) >= 6 and w not in ix.lookup.short and not ix.df.get(w) \
                and stem(w) not in ix.concept_words:
            m = process.extractOne(w, ix.lookup.short_keys, scorer=fuzz.ratio, score_cutoff=88)
            w = m[0] if m else w
        out.append(w)
    return out


def named_by_words(ix: QuestionIndex, words: list[str]) -> dict[int, bool]:
    """Symbols whose own name is a word of the question or two adjacent words joined
    ("sort a tensor" -> tf.sort, "one hot encoding" -> tf.one_hot, "early stopping" ->
    EarlyStopping): the user named the op without knowing it. True when it is the first word
    (how-to questions start with the operation: "pad a tensor with zeros" is tf.pad)."""
    keys = set(words)
    for a, b in zip(words, words[1:]):
        # Either number of the last word: "set the weight" -> set_weights.
        keys |= {f"{a}_{b}", f"{a}{b}", f"{a}_{b}s"}
        if b.endswith("s"):
            keys.add(f"{a}_{b[:-1]}")
    for a, b in zip(words, words[2:]):  # one word between: "save model weights"
        keys.add(f"{a}_{b}")
    for a, b, c in zip(words, words[1:], words[2:]):  # flow_from_directory, split as words
        keys.add(f"{a}_{b}_{c}")
    out: dict[int, bool] = {}
    first = words[0] if words else ""
    for key in keys:
        # A single common word ("tensor", "shape", "model") names a symbol by accident.
        if key in words and ix.df.get(stem(key), 0) > NAMED_WORD_MAX_DF * ix.n_docs:
            continue
        is_first = key == first or key.startswith(first + "_")
        for sid in ix.lookup.short.get(key, ()):
            if ix.lookup.kinds[sid] != "module":
                out[sid] = out.get(sid, False) or is_first
    return out


def mentioned_names(ix: QuestionIndex, q: str) -> set[int]:
    """Symbols whose name the question writes as code, resolved as a name query would be
    (exact, suffix, legacy TF1 names; not misspellings: a question's code is copied)."""
    out: set[int] = set()

    def add(sid: int, score: float, how: str, note: str = "", prior_weight: float = 0.0):
        if how != "fuzzy" and score >= 0.8:
            out.add(sid)
    for token in dict.fromkeys(CODE.findall(q)):
        token = token.rstrip(".")
        foreign = next((p for p in FOREIGN if token.startswith(p)), None)
        ix.lookup.match_name(token[len(foreign):] if foreign else token, add)
    return out


def coverage(ix: QuestionIndex, ids: list[int], wanted: set[str],
             n_words: int) -> dict[int, float]:
    if not ids:
        return {}
    marks = ",".join("?" * len(ids))
    return {sid: len(wanted.intersection(terms.split())) / max(1, n_words)
            for sid, terms in ix.lookup.db.execute(
                f"SELECT id, terms FROM symbols WHERE id IN ({marks})", ids)}


def specific_members(ix: QuestionIndex, ids: list[int],
                     wanted: set[str]) -> tuple[set[int], set[int]]:
    """Members whose specific name the question says, and their classes ("repeat a dataset"
    is Dataset.repeat, not Dataset, whose long docstring mentions everything). Only for a
    specific word (Dataset.repeat), not a generic one (Layer.output)."""
    members, parents = set(), set()
    present = set(ids)
    for sid in ids:
        parent, _, leaf = ix.lookup.names[sid].rpartition(".")
        pid = ix.lookup.name_to_id.get(parent)
        if pid is None or pid not in present or ix.lookup.kinds[pid] == "module":
            continue
        leaf_words = words_of(leaf) - words_of(parent.rpartition(".")[2])
        if leaf_words and leaf_words <= wanted and all(
                ix.df.get(w, 0) <= SPECIFIC_WORD_MAX_DF * ix.n_docs for w in leaf_words):
            members.add(sid)
            parents.add(pid)
    return members, parents
