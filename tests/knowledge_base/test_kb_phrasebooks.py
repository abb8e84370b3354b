"""Phrasebooks (knowledge_base/qa/phrasebook.py): known questions and guide sentences, as
vectors, pointing at symbols. The shipped "asked before" book must be the one its training
files give (re-run tools/asked_book.py after editing them), and never hold a held-out question."""
from pathlib import Path

import numpy as np
import pytest
import yaml

from knowledge_base.qa import phrasebook, question_sets, semantic
from knowledge_base.pipeline import SHIPPED_EXTRACT
from knowledge_base.names import clean_query, is_name

HELD_OUT = question_sets.held_out().path
ASKED = phrasebook.BOOKS["asked"]


def _questions(path: Path) -> list[str]:
    out = []
    for item in yaml.safe_load(path.read_text()) or []:
        q = clean_query(item["q"])
        if q and not is_name(q):
            out.append(q)
    return out


def _unit(rows) -> np.ndarray:
    m = np.array(rows, np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


@pytest.fixture
def book(tmp_path):
    path = tmp_path / "b.npz"
    vectors = _unit([[1, 0, 0], [0.9, 0.1, 0], [0, 1, 0], [0, 0, 1]])
    phrasebook.write(path, "m", vectors,
                     [[("tf.a", 1.0)], [("tf.b", 1.0), ("tf.gone", 1.0)], [("tf.a", 0.5)],
                      [("tf.c", 1.0)]],
                     keys=[phrasebook.key("Q one"), 2, 3, 4], origin=[0, 1, 1, 0],
                     files=["f0.yaml", "f1.yaml"])
    return phrasebook.Book.load(path, "m", {"tf.a": 10, "tf.b": 11, "tf.c": 12})


def test_evidence_is_the_nearest_sentences_targets(book):
    ev = book.evidence(_unit([[1, 0.05, 0]])[0], k=3)
    assert set(ev) == {10, 11}                   # tf.gone is not in the KB: skipped
    cos, rank, weight, votes = ev[10]
    assert rank == 0 and weight == 1.0 and votes == 2 and cos > 0.99
    assert ev[11][1] == 1


def test_leave_out_hides_a_file_and_a_text(book):
    v = _unit([[1, 0.05, 0]])[0]
    assert 10 in book.evidence(v, k=1)
    # Its own file left out, the nearest is f1's sentence.
    assert set(book.evidence(v, k=1, leave_out=(("f0.yaml",), 0))) == {11}
    # Its own text left out (keys are case and space blind), the same.
    assert set(book.evidence(v, k=1, leave_out=((), phrasebook.key("q  ONE")))) == {11}


def test_a_book_from_another_model_is_not_used(tmp_path, book):
    path = tmp_path / "b.npz"
    phrasebook.write(path, "other model", _unit([[1, 0, 0]]), [[("tf.a", 1.0)]])
    assert phrasebook.Book.load(path, "m", {"tf.a": 1}) is None
    assert phrasebook.Book.load(tmp_path / "missing.npz", "m", {}) is None


def test_shipped_asked_book_matches_its_training_files():
    with np.load(ASKED, allow_pickle=False) as f:
        assert str(f["model"]) == semantic.MODEL
        files = [str(x) for x in f["files"]]
        keys, origin = f["keys"], f["origin"]
        assert len(f["matrix"]) == len(keys) == len(origin) == len(f["offsets"]) - 1
    expected = [s.file for s in question_sets.sets(*question_sets.IN_BOOK)]
    assert files == expected, "re-run tools/asked_book.py: the book's sets changed"
    held = {phrasebook.key(q) for q in _questions(HELD_OUT)}
    for i, name in enumerate(files):
        want = [k for k in map(phrasebook.key, _questions(question_sets.get(name).path))
                if k not in held]
        assert keys[origin == i].tolist() == want, \
            f"re-run tools/asked_book.py: {name} changed since asked.npz was written"


def test_no_held_out_question_is_in_the_asked_book():
    held = {phrasebook.key(q) for q in _questions(HELD_OUT)}
    with np.load(ASKED, allow_pickle=False) as f:
        assert not held & set(f["keys"].tolist())


@pytest.mark.skipif(not SHIPPED_EXTRACT.is_file(), reason="no shipped extract")
def test_shipped_books_name_only_kb_symbols(shipped_kb):
    for path in phrasebook.BOOKS.values():
        if not path.is_file():
            continue
        with np.load(path, allow_pickle=False) as f:
            names = set(str(t) for t in f["targets"])
        missing = sorted(n for n in names if shipped_kb.kb.symbol(n) is None)
        assert not missing, (path.name, missing[:10])
