"""The paraphrased real-users training sets are well formed, names only symbols the KB has,
repeats no question of another question set, and is trained on (never measured on).

Deliberately checks no search results: this file only guards the data's shape.
"""
import re
from pathlib import Path

import pytest
import yaml

from knowledge_base.pipeline import SHIPPED_EXTRACT

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "benchmarks"
PARAPHRASED = [BENCH / f"kb_questions_paraphrased{n}.yaml" for n in ("", "2", "3")]
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
    others = [p for p in sorted(BENCH.glob("kb_questions*.yaml")) if p != path]
    others.append(BENCH / "kb_queries.yaml")
    assert BENCH / "kb_questions_heldout.yaml" in others
    seen = {_norm(item["q"]) for p in others for item in _items(p)}
    repeated = [item["q"] for item in _items(path) if _norm(item["q"]) in seen]
    assert not repeated


@each
def test_paraphrased_set_is_trained_on(path):
    text = (ROOT / "tools" / "train_ranking.py").read_text(encoding="utf-8")
    tuned = re.search(r"TUNED = .*?\]\)?\n", text, re.S).group(0)
    assert path.name in tuned
    assert "heldout" not in tuned
