"""The question index: what ranking a question in words needs besides name lookup (the
words index's document counts, the semantic index, the phrasebooks), and the search that joins
the two: a name query is answered by name lookup; words, or a name-like query that found
nothing convincing, go to the ranker (:mod:`knowledge_base.qa.questions`)."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from knowledge_base.errors import KBError
from knowledge_base.names import clean_query, is_name, wants_compat
from knowledge_base.search import Hit, Searcher

QUESTION_SUFFIX = ".question"  # prepared beside the KB (see QuestionIndex.prepared)
CODE = ("index", "phrasebook", "concepts", "questions", "trees")  # ... and what prepares it

if TYPE_CHECKING:  # imported where used: a name lookup needs neither NumPy nor LightGBM
    from knowledge_base.qa import phrasebook, semantic


@dataclass
class QuestionIndex:
    lookup: Searcher                   # names, kinds, short names, traits, prior, evidence
    semantic_error: str = field(default="", init=False)  # why meaning is off, when it is

    @classmethod
    def build(cls, lookup: Searcher) -> "QuestionIndex":
        return cls(lookup)

    # Read on the first question in words (a name lookup never needs them).
    @cached_property
    def prepared(self) -> dict:
        """What questions read from the KB and the shipped data (the words index's document
        counts, the concept table, the phrasebooks with their names resolved to this KB's
        ids), prepared once and kept beside the KB for later processes
        (knowledge_base/prepared.py): a shell's question maps it instead of decompressing
        and resolving again."""
        from knowledge_base import name_cache, prepared
        from knowledge_base.qa import concepts, phrasebook, questions
        db = self.lookup.db
        # The data, and the code that reads it: a change to either prepares it again.
        here = Path(__file__).parent
        inputs = [*phrasebook.BOOKS.values(), concepts.DATA, questions.RANKER,
                  questions.RANKING, *(here / f"{m}.py" for m in CODE),
                  *(here.parent / f"{m}.py" for m in ("words", "yaml_data"))]
        made_from = prepared.stamp("question", name_cache.stamp(name_cache.kb_file(db)),
                                   *(prepared.file_stamp(p) for p in inputs))
        return prepared.cached(prepared.beside(db, QUESTION_SUFFIX), made_from, self._prepare)

    def _prepare(self) -> dict:
        from knowledge_base.qa import concepts, phrasebook, questions, semantic
        from knowledge_base.words import stem
        try:
            ranker = questions.ranker().pack()
        except questions.RankerUnavailable as exc:
            ranker = {"ranker.error": str(exc)}  # said when a question needs it
        return {"df": dict(self.lookup.db.execute("SELECT term, doc FROM symbols_fts_vocab")),
                "concepts": concepts.load(stem),
                "confidence": questions.ranking().get("confidence") or {}, **ranker,
                **phrasebook.pack(phrasebook.load_all(semantic.MODEL, self.lookup.name_to_id))}

    @cached_property
    def ranker(self):
        """The question ranker (:func:`knowledge_base.qa.questions.ranker`)."""
        from knowledge_base.qa import questions, trees
        if "ranker.error" in self.prepared:
            raise questions.RankerUnavailable(self.prepared["ranker.error"])
        return trees.Forest.unpack(self.prepared)

    @cached_property
    def confidence(self) -> dict:
        """The ranker's confidence threshold and its hit rates (ranking.yaml)."""
        return self.prepared["confidence"]

    @cached_property
    def df(self) -> dict[str, int]:
        """Documents per (Porter-stemmed) term of the words index, to leave out words too
        common to matter."""
        return self.prepared["df"]

    @cached_property
    def concepts(self) -> list:
        """The concept table (:func:`knowledge_base.qa.concepts.load`)."""
        return self.prepared["concepts"]

    @cached_property
    def concept_words(self) -> frozenset[str]:
        """Every stem the concept phrases use (:func:`knowledge_base.qa.concepts.words`)."""
        return frozenset(w for phrases, _ in self.concepts for p in phrases for w in p)

    @cached_property
    def n_docs(self) -> int:
        return max(1, len(self.lookup.names))

    @cached_property
    def vocab(self) -> list[str]:
        """Terms a misspelt question word may be corrected to."""
        return [t for t, d in self.df.items() if d >= 3 and t.isalpha()]

    @cached_property
    def semantic(self) -> semantic.Index | None:
        """The semantic index, or None (with ``semantic_error`` saying why)."""
        from knowledge_base.qa import semantic
        try:
            return semantic.Index.load(self.lookup.db)
        except KBError as exc:
            self.semantic_error = str(exc)
            return None

    @cached_property
    def phrasebooks(self) -> dict[str, phrasebook.Book]:
        """Known questions and guide sentences, as vectors (empty without the model)."""
        from knowledge_base.qa import phrasebook
        if self.semantic is None:
            return {}
        return phrasebook.unpack(self.prepared)

    def warm(self) -> None:
        """Load (and prepare beside the KB, when not yet there) all a question needs: a
        server does it before its first request, ``kb load`` for the next shell's question."""
        _ = self.lookup.names, self.prepared, self.semantic, self.phrasebooks
        try:
            _ = self.ranker
        except KBError:
            pass  # said when a question needs it

    def search(self, query: str, limit: int = 5) -> list[Hit]:
        q = clean_query(query)
        if not q:
            return []
        hits = self.lookup.hits(q)
        nameish = is_name(q)
        # Words only when the name gave nothing convincing; for a name-like query they are
        # a weak fallback (its words are the name's own parts).
        if not nameish or not hits.convincing():
            from knowledge_base.qa import questions
            compat = wants_compat(q)
            for sid, z in questions.rank(self, q, compat, meaning=not nameish):
                # The ranker's score is unbounded: squashed into (0, 1) like the name scores,
                # which for a name-like query here are all weak ones.
                hits.add(sid if compat else self.tf2_name(sid), 1 / (1 + math.exp(-z)), "text",
                         prior_weight=0.0)
        ranked = hits.ranked(limit)
        if not nameish:
            from knowledge_base.qa import history_asked
            # "when was fit_generator removed": the symbol named answers, not its neighbours.
            first = history_asked.first(self, q)
            named = {h.id for h in first}
            ranked = (first + [h for h in ranked if h.id not in named])[:limit]
        return ranked

    def tf2_name(self, sid: int) -> int:
        """The name TF 2 code writes for a tf.compat name that is one object with it
        (tf.compat.v1.Variable.assign is tf.Variable.assign, tf.compat.v1.nn.swish is
        tf.nn.silu): an answer found under the compat name is that object's, said the TF 2
        way. TF1-only API (tf.compat.v1.Session) has no other name and stays."""
        if not self.lookup.names[sid].startswith("tf.compat."):
            return sid
        row = self.lookup.db.execute("SELECT canonical FROM symbols WHERE id = ?",
                                     (sid,)).fetchone()
        canonical = row[0] if row else None
        if canonical and not canonical.startswith("tf.compat.") and \
                canonical in self.lookup.name_to_id:
            return self.lookup.name_to_id[canonical]
        return sid

    def resolve(self, name: str) -> Hit | None:
        """The one symbol a name means (for history): exact, spellings, legacy names, then
        the best name-like match."""
        hits = self.search(name, limit=1)
        if hits and hits[0].how != "text":
            return hits[0]
        return None
