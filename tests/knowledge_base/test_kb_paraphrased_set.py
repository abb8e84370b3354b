"""The paraphrased real-users training sets are well formed, names only symbols the KB has,
repeats no question of another question set, and is trained on (never measured on).

Deliberately checks no search results: this file only guards the data's shape.
"""
import re
from pathlib import Path

import pytest
import yaml

from knowledge_base.pipeline import SHIPPED_EXTRACT
from knowledge_base.qa import question_sets, questions

PARAPHRASED = [question_sets.get(f"kb_questions_paraphrased{n}.yaml").path
               for n in ("", "2", "3")]
each = pytest.mark.parametrize("path", PARAPHRASED, ids=lambda p: p.name)


def _items(path: Path) -> list:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def _norm(q: str) -> str:
    # case, punctuation and spacing differences do not make a question new
    return " ".join(re.findall(r"[a-z0-9_.]+", q.casefold()))


@each
def test_paraphrased_set_is_well_formed(path):
    items = _items(path)
    assert isinstance(items, list) and len(items) >= 200
    for item in items:
        assert set(item) == {"q", "accept"}, item
        assert isinstance(item["q"], str) and item["q"].strip(), item
        assert isinstance(item["accept"], list) and 1 <= len(item["accept"]) <= 4, item
        assert all(isinstance(n, str) and n.startswith("tf.") for n in item["accept"]), item
    questions = [_norm(item["q"]) for item in items]
    assert len(set(questions)) == len(questions), "duplicate questions"


@pytest.mark.skipif(not SHIPPED_EXTRACT.is_file(), reason="no shipped extract")
@each
def test_every_accepted_name_is_in_the_kb(shipped_kb, path):
    missing = [(item["q"], name) for item in _items(path) for name in item["accept"]
               if shipped_kb.kb.symbol(name) is None]
    assert not missing


@each
def test_no_question_repeats_one_of_another_set(path):
    """Compared with every other question set, the held-out one included (by program only)."""
    others = [s.path for s in question_sets.sets() if s.path != path]
    assert question_sets.held_out().path in others
    seen = {_norm(item["q"]) for p in others for item in _items(p)}
    repeated = [item["q"] for item in _items(path) if _norm(item["q"]) in seen]
    assert not repeated


@each
def test_paraphrased_set_is_trained_on(path):
    """Its role says the ranker is fitted on it, and the shipped ranker was (ranking.yaml
    records the files it was fitted on)."""
    assert question_sets.get(path.name).fitted
    trained = {Path(f).name for f in questions.ranking()["trained_on"]}
    assert path.name in trained
