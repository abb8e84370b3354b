"""The semantic index: all-MiniLM-L6-v2 on NumPy, vectors shipped beside the extract and reused
only where a symbol's text is unchanged, and the question ranker's weights as data."""
import dataclasses
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from knowledge_base.qa import minilm, question_sets, questions, semantic
from knowledge_base.qa.semantic import Vectors
from knowledge_base.builder import build_kb
from knowledge_base.pipeline import SHIPPED_EXTRACT, load_shipped
from tests.kbdata import history_releases

ROOT = Path(__file__).resolve().parents[2]
# Five texts of ours and their vectors as sentence-transformers 6.2 (torch) computed them
# for sentence-transformers/all-MiniLM-L6-v2 on 2026-12-01.
REFERENCE = Path(__file__).resolve().parents[1] / "data" / "minilm_reference.npz"


def test_numpy_encoder_matches_sentence_transformers():
    ref = np.load(REFERENCE)
    got = minilm.model().embed([str(t) for t in ref["texts"]])
    assert got.shape == ref["vecs"].shape
    # Same direction to within the tanh-GELU and float16 token-table differences.
    assert np.min(np.sum(got * ref["vecs"], axis=1)) > 0.9999
    assert np.abs(got - ref["vecs"]).max() < 2e-3


def test_similar_questions_are_nearer_than_unrelated_ones():
    v = minilm.model().embed(["stop tensorflow taking all the gpu memory",
                              "Attempt to allocate only as much GPU memory as needed.",
                              "Reads a CSV file into a dataset."])
    assert v[0] @ v[1] > v[0] @ v[2] + 0.2


def test_other_model_files_are_refused(tmp_path):
    real = minilm.model_dir()
    (tmp_path / "model.safetensors").symlink_to(real / "model.safetensors")
    (tmp_path / "tokenizer.json").write_text((real / "tokenizer.json").read_text() + " ")
    with pytest.raises(minilm.ModelUnavailable, match="not all-MiniLM-L6-v2's"):
        minilm.MiniLM(tmp_path)
    with pytest.raises(minilm.ModelUnavailable, match="lacks"):
        minilm.MiniLM(tmp_path / "nowhere")


def test_vectors_are_reused_only_for_unchanged_texts(tmp_path):
    first = build_kb(history_releases(), tmp_path / "a.sqlite", indexes=[Vectors(None)])
    # Two views of each symbol (doc, name), each embedded.
    assert first["vectors"] > 0 and first["vectors_embedded"] == 2 * first["vectors"]
    shipped = tmp_path / "x.vectors.npz"
    with sqlite3.connect(tmp_path / "a.sqlite") as db:
        assert semantic.export(db, shipped) == first["vectors"]
    again = build_kb(history_releases(), tmp_path / "b.sqlite", indexes=[Vectors(shipped)])
    assert again["vectors_embedded"] == 0
    # One symbol's docstring changes (its summary too): only its two vectors are computed anew.
    rels = history_releases()
    last = rels[-1]
    syms = [dataclasses.replace(s, doc="Pads a tensor with a constant.\n\nNew words.")
            if s.name == "tf.pad" else s for s in last.symbols]
    rels[-1] = dataclasses.replace(last, symbols=syms)
    changed = build_kb(rels, tmp_path / "c.sqlite", indexes=[Vectors(shipped)])
    assert changed["vectors_embedded"] == 2
    # The same vectors as embedding everything from scratch (up to rounding: batches of
    # other lengths round differently).
    fresh = tmp_path / "d.sqlite"
    build_kb(rels, fresh, indexes=[Vectors(None)])

    def vectors(path):
        with sqlite3.connect(path) as db:
            ids, m = db.execute("SELECT ids, doc_matrix FROM vectors").fetchone()
        m = np.frombuffer(m, np.int8).reshape(-1, 384).astype(np.float32)
        return ids, m / np.linalg.norm(m, axis=1, keepdims=True)
    (ids_c, c), (ids_d, d) = vectors(tmp_path / "c.sqlite"), vectors(fresh)
    assert ids_c == ids_d
    assert np.min(np.sum(c * d, axis=1)) > 0.999


def test_a_damaged_vectors_file_is_recomputed_not_trusted(tmp_path):
    bad = tmp_path / "x.vectors.npz"
    bad.write_bytes(b"not a zip")
    stats = build_kb(history_releases(), tmp_path / "kb.sqlite", indexes=[Vectors(bad)])
    assert stats["vectors_embedded"] == 2 * stats["vectors"] > 0


@pytest.mark.skipif(not SHIPPED_EXTRACT.is_file(), reason="no shipped extract")
def test_shipped_vectors_cover_every_indexed_symbol(tmp_path):
    """kb load embeds nothing: the shipped vectors match the texts the builder embeds (a
    change to what is embedded must come with a new kb-extract.vectors.npz)."""
    stats = load_shipped(tmp_path / "kb.sqlite", indexes=[Vectors()])
    assert stats["vectors"] > 5000
    assert stats["vectors_embedded"] == 0


def test_the_ranker_is_data_fitted_on_every_feature():
    import yaml
    doc = yaml.safe_load(questions.RANKING.read_text())
    assert "kb_questions_heldout.yaml" not in " ".join(doc["trained_on"])
    # How well it carries to files it was not fitted on: by leaving each file out
    # (tools/train_ranking.py) or, for a fit from cached features, each half of them.
    estimate = doc.get("leave_one_file_out") or doc["two_fold_by_file"]
    assert estimate["all"]["top1"] > 0.5
    booster = questions.ranker()
    assert booster.feature_name() == list(questions.FEATURES)
    # Every feature family is used by some tree.
    used = dict(zip(booster.feature_name(), booster.feature_importance("split")))
    for f in ("bm25", "cos", "asked", "guide", "concept_words", "removed"):
        assert used[f] > 0, f


def test_a_ranker_fitted_on_other_features_is_refused(tmp_path):
    import lightgbm
    rng = np.random.default_rng(0)
    x, y = rng.random((40, 2)), (rng.random(40) > 0.7).astype(int)
    data = lightgbm.Dataset(x, label=y, group=[10] * 4, feature_name=["bm25", "popularity_magic"])
    booster = lightgbm.train({"objective": "lambdarank", "min_data_in_leaf": 1, "verbose": -1},
                             data, num_boost_round=2)
    booster.save_model(str(tmp_path / "ranker.txt"))
    with pytest.raises(questions.RankerUnavailable, match="popularity_magic"):
        questions.ranker(tmp_path / "ranker.txt")
    with pytest.raises(questions.RankerUnavailable, match="missing"):
        questions.ranker(tmp_path / "none.txt")


def test_training_refuses_held_out_sets():
    r = subprocess.run([sys.executable, "-m", "tools.train_ranking", "--extra",
                        str(question_sets.held_out().path)],
                       capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert r.returncode == 2
    assert "held-out sets must never be trained on" in r.stderr


def test_training_refuses_a_paraphrase_file_that_does_not_exist(tmp_path):
    extra = tmp_path / "real-train.yaml"
    extra.write_text("- {q: how do I join two tensors, accept: [tf.concat]}\n")
    r = subprocess.run([sys.executable, "-m", "tools.train_ranking", "--extra",
                        f"{extra}:kb_questions_paraphrased2.yaml,kb_questions_paraphrasd3.yaml"],
                       capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert r.returncode == 2
    assert "no such paraphrase file among the question sets" in r.stderr
    assert r.stderr.rstrip().endswith(": kb_questions_paraphrasd3.yaml")


@pytest.mark.skipif(not SHIPPED_EXTRACT.is_file(), reason="no shipped extract")
def test_a_question_quoting_code_finds_what_it_quotes(shipped_kb):
    hits = shipped_kb.questions.search("unable to use nn.moments when an axis is None", limit=3)
    assert "tf.nn.moments" in [h.name for h in hits]


@pytest.mark.skipif(not SHIPPED_EXTRACT.is_file(), reason="no shipped extract")
def test_a_concept_said_in_order_beats_its_words_said_loosely(shipped_kb):
    hits = shipped_kb.questions.search("batch normalization layer", limit=1)
    assert hits[0].name == "tf.keras.layers.BatchNormalization"


def test_question_search_without_its_model_says_so(tmp_path):
    """A KB without vectors (or a machine without the model) still answers by words, and the
    answer says that it did."""
    from bot.config import load_config
    from bot.context import Context
    from bot.dispatch import run_line
    home = tmp_path / "home"
    build_kb(history_releases(), home / "kb.sqlite", indexes=[Vectors(None)])
    with sqlite3.connect(home / "kb.sqlite") as db:
        db.execute("DELETE FROM vectors")
    ctx = Context(load_config({"TFDESK_HOME": str(home)}))
    _, reply = run_line(ctx, "ask pad a tensor with zeros")
    assert reply.ok
    assert "question search by meaning is off" in reply.text
    assert "tf.pad" in reply.text
    # A name needs no sentence model: no warning.
    _, reply = run_line(ctx, "ask tf.pad")
    assert "meaning is off" not in reply.text


def test_kb_status_says_how_questions_are_searched(tmp_path):
    from bot.config import load_config
    from bot.context import Context
    from bot.dispatch import run_line
    home = tmp_path / "home"
    build_kb(history_releases(), home / "kb.sqlite", indexes=[Vectors(None)])
    ctx = Context(load_config({"TFDESK_HOME": str(home)}))
    _, reply = run_line(ctx, "kb status")
    assert reply.data["search"]["meaning"] is True
    assert "question search: all-MiniLM-L6-v2 int8 over" in reply.text
    # The shipped "asked before" book is read (its names that this small KB lacks are skipped).
    assert reply.data["search"]["phrasebooks"]["asked"] > 1000
    assert "phrasebooks: questions asked before" in reply.text
    with sqlite3.connect(home / "kb.sqlite") as db:
        db.execute("DELETE FROM vectors")
    _, reply = run_line(Context(load_config({"TFDESK_HOME": str(home)})), "kb status")
    assert reply.data["search"]["meaning"] is False
    assert "question search by meaning is off: this KB has no semantic index" in reply.text
