"""Concept words (knowledge_base/qa/data/concepts.yaml) against the shipped KB: every meant name
exists, and every phrase is specific enough not to fire on unrelated questions."""
import re

import pytest
import yaml

from knowledge_base.qa import concepts
from knowledge_base.pipeline import SHIPPED_EXTRACT
from knowledge_base.words import STOPWORDS, stem

pytestmark = pytest.mark.skipif(not SHIPPED_EXTRACT.is_file(), reason="no shipped extract")

ITEMS = yaml.safe_load(concepts.DATA.read_text())
# Names meant although the newest release lacks them, and why.
NOT_IN_NEWEST = {
    "tf.estimator.Estimator": "removed in 2.16; TF1 users still ask for it by name",
}
# Words that on their own say nothing about which API is meant.
GENERIC = set("""model tensor layer data dataset train training value shape image loss batch gpu
function variable input output file graph keras tensorflow number element array list type
size error run time step""".split())
# Single words found in more than 1 % of the KB's texts that still name one thing in a question.
COMMON_BUT_SPECIFIC = {"dtype"}


def _stems(phrase: str) -> set[str]:
    return {stem(w) for w in re.findall(r"[a-z0-9]+", str(phrase).lower()) if w not in STOPWORDS}


def test_concepts_well_formed():
    assert len(ITEMS) >= 200
    for item in ITEMS:
        assert set(item) == {"say", "mean"}, item
        assert item["say"] and item["mean"], item
        assert all(isinstance(p, str) for p in item["say"]), item  # YAML turns `no` into False


def test_every_meant_name_in_shipped_kb(shipped_kb):
    db = shipped_kb.kb.db
    newest = db.execute("SELECT max(last_ord) FROM symbols").fetchone()[0]
    last = dict(db.execute("SELECT name, last_ord FROM symbols"))
    missing = [n for item in ITEMS for n in item["mean"] if n not in last]
    assert not missing, f"not in the KB: {missing}"
    old = {n for item in ITEMS for n in item["mean"] if last[n] != newest}
    unexplained = sorted(old - set(NOT_IN_NEWEST))
    assert not unexplained, f"not in the newest release: {unexplained}"


def test_phrases_are_specific(shipped_kb):
    s = shipped_kb.questions
    bad = []
    for item in ITEMS:
        for phrase in item["say"]:
            words = re.findall(r"[a-z0-9]+", phrase.lower())
            stems = _stems(phrase)
            if not stems:
                bad.append((phrase, "only stop words"))
            elif len(words) > 1 and len(stems) < 2:
                # "get weights" is just "weights" once stop words go.
                bad.append((phrase, f"stop words leave one word: {stems}"))
            elif len(stems) == 1:
                (w,) = stems
                if w in {stem(g) for g in GENERIC}:
                    bad.append((phrase, "a generic word alone"))
                elif s.df.get(w, 0) > 0.01 * s.n_docs and w not in COMMON_BUT_SPECIFIC:
                    bad.append((phrase, f"in {s.df[w]} of {s.n_docs} KB texts"))
    assert not bad, bad


def test_unrelated_questions_fire_no_concept():
    for q in ("how do I train my model", "what is a tensor", "load the data into a layer",
              "which gpu version of tensorflow"):
        stems = {stem(w) for w in re.findall(r"[a-z0-9]+", q.lower()) if w not in STOPWORDS}
        assert not concepts.meant(stems, stem), (q, concepts.meant(stems, stem))


def test_concept_words_listed():
    ws = concepts.words(stem)
    assert {"unsqueez", "detach", "arang"} <= ws
