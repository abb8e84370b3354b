"""The question sets written as training data are well formed, name only symbols the KB has,
repeat no question of another tuned set, and share no question with the held-out set.

Deliberately checks no search results: these files train the ranker, they do not measure it.
The held-out file is only compared by text here, so a training question that leaks into it
(or the other way round) fails the build instead of silently inflating the measurement.
"""
import re
from pathlib import Path

import numpy as np
import pytest

from knowledge_base.pipeline import SHIPPED_EXTRACT
from knowledge_base.qa import phrasebook, question_sets, questions

pytestmark = pytest.mark.skipif(not SHIPPED_EXTRACT.is_file(), reason="no shipped extract")

TRAINING = tuple(s.file for s in question_sets.sets("training"))
OTHER_TUNED = tuple(s.file for s in question_sets.sets("tuned"))
HELD_OUT = question_sets.held_out().file


def _load(name: str) -> list:
    return question_sets.get(name).items()


def _norm(q) -> str:
    # Case, punctuation and spacing differences do not make a question new.
    return re.sub(r"[^a-z0-9]+", " ", str(q).lower()).strip()


@pytest.mark.parametrize("name", TRAINING)
def test_training_set_is_well_formed(name):
    items = _load(name)
    assert isinstance(items, list) and len(items) >= 300
    for item in items:
        assert set(item) == {"q", "accept"}, item
        assert isinstance(item["q"], str) and item["q"].strip(), item
        assert isinstance(item["accept"], list) and 1 <= len(item["accept"]) <= 5, item
    questions = [_norm(item["q"]) for item in items]
    dups = sorted({q for q in questions if questions.count(q) > 1})
    assert not dups, dups


@pytest.mark.parametrize("name", TRAINING)
def test_every_accepted_training_name_is_in_the_kb(shipped_kb, name):
    missing = [(item["q"], n) for item in _load(name) for n in item["accept"]
               if shipped_kb.kb.symbol(n) is None]
    assert not missing


def test_no_question_repeats_across_tuned_sets():
    # Each later training file must add new questions, not reweight old ones.
    seen = {}
    for name in OTHER_TUNED + TRAINING[:1]:
        for item in _load(name):
            seen.setdefault(_norm(item["q"]), name)
    repeats = []
    for name in TRAINING[1:]:
        items = _load(name)
        repeats += [(name, item["q"], seen[_norm(item["q"])]) for item in items
                    if _norm(item["q"]) in seen]
        for item in items:
            seen.setdefault(_norm(item["q"]), name)
    assert not repeats


def test_no_training_question_is_in_the_heldout_set():
    heldout = {_norm(item["q"]) for item in _load(HELD_OUT)}
    leaked = [item["q"] for name in TRAINING for item in _load(name) if _norm(item["q"]) in heldout]
    assert not leaked, f"{len(leaked)} training questions also in the held-out set: {leaked}"


def test_the_shipped_ranker_was_fitted_on_the_fitted_sets_only():
    """ranking.yaml records what tools/train_ranking.py fitted on: every set whose role is
    training or tuned, and no other set of the manifest."""
    trained = {Path(f).name for f in questions.ranking()["trained_on"]}
    assert TRAINING and set(TRAINING) <= trained
    ours = {s.file for s in question_sets.sets()}
    assert trained & ours == {s.file for s in question_sets.sets(*question_sets.FITTED)}


# In the "asked before" book only: the ranker is not fitted on it (fitting on it lowered the
# leave-one-file-out estimate on real users' questions; in the book it raised it).
BOOK_ONLY = tuple(s.file for s in question_sets.sets("book-only"))


@pytest.mark.parametrize("name", BOOK_ONLY)
def test_book_only_set_is_well_formed_and_new(shipped_kb, name):
    items = _load(name)
    assert isinstance(items, list) and len(items) >= 1000
    seen = {_norm(item["q"]) for other in OTHER_TUNED + TRAINING + (HELD_OUT,)
            for item in _load(other)}
    repeats, missing, own = [], [], set()
    for item in items:
        assert set(item) == {"q", "accept"} and isinstance(item["q"], str), item
        assert isinstance(item["accept"], list) and 1 <= len(item["accept"]) <= 5, item
        key = _norm(item["q"])
        if key in seen or key in own:
            repeats.append(item["q"])
        own.add(key)
        missing += [n for n in item["accept"] if shipped_kb.kb.symbol(n) is None]
    assert not repeats, repeats[:5]
    assert not missing, missing[:5]


@pytest.mark.parametrize("name", BOOK_ONLY)
def test_book_only_set_is_in_the_book_but_not_fitted_on(name):
    trained = {Path(f).name for f in questions.ranking()["trained_on"]}
    assert name not in trained
    with np.load(phrasebook.BOOKS["asked"], allow_pickle=False) as f:
        assert name in [str(x) for x in f["files"]]
