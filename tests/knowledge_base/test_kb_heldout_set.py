"""The held-out question set is well formed and names only symbols the KB has.

Deliberately checks no search results: the set is for measuring the search, never for tuning it.
"""
import pytest
import yaml

from knowledge_base.pipeline import SHIPPED_EXTRACT
from knowledge_base.qa import question_sets

pytestmark = pytest.mark.skipif(not SHIPPED_EXTRACT.is_file(), reason="no shipped extract")

HELDOUT = question_sets.held_out().path


def _items() -> list:
    return yaml.safe_load(HELDOUT.read_text(encoding="utf-8"))


def test_heldout_set_is_well_formed():
    items = _items()
    assert isinstance(items, list) and len(items) >= 100
    questions = [item["q"] for item in items]
    assert len(set(questions)) == len(questions), "duplicate questions"
    for item in items:
        assert set(item) == {"q", "accept"}, item
        assert isinstance(item["q"], str) and item["q"].strip(), item
        assert isinstance(item["accept"], list) and 1 <= len(item["accept"]) <= 4, item


def test_every_accepted_name_is_in_the_kb(shipped_kb):
    missing = [(item["q"], name) for item in _items() for name in item["accept"]
               if shipped_kb.kb.symbol(name) is None]
    assert not missing
