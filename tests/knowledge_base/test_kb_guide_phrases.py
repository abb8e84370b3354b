"""The shipped guide phrases (knowledge_base/qa/data/guide-phrases.npz) are well formed, name only
symbols the KB has, carry no text of their sources, and the pairing of task words with the code
that follows them works on a small notebook written for this test."""
import importlib.util
import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from knowledge_base.qa import minilm, semantic

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "knowledge_base" / "qa" / "data" / "guide-phrases.npz"


def _tool():
    if "guide_phrases" not in sys.modules:  # its dataclasses look their module up there
        spec = importlib.util.spec_from_file_location("guide_phrases",
                                                      ROOT / "tools" / "guide_phrases.py")
        mod = importlib.util.module_from_spec(spec)
        sys.modules["guide_phrases"] = mod
        spec.loader.exec_module(mod)
    return sys.modules["guide_phrases"]


def test_shipped_phrases_are_well_formed_and_hold_no_text():
    assert SHIPPED.stat().st_size <= 8_500_000
    with np.load(SHIPPED, allow_pickle=False) as f:
        assert set(f.files) == {"model", "matrix", "offsets", "targets", "weights", "kind",
                                "sources"}
        assert str(f["model"]) == semantic.MODEL
        matrix, offsets, kind = f["matrix"], f["offsets"], f["kind"]
        n = len(matrix)
        assert n > 1000 and matrix.dtype == np.int8 and matrix.shape == (n, minilm.DIM)
        assert offsets.dtype == np.int32 and offsets.shape == (n + 1,) and offsets[0] == 0
        assert (np.diff(offsets) >= 1).all()  # every phrase links to a symbol
        assert offsets[-1] == len(f["targets"]) == len(f["weights"])
        assert f["weights"].dtype == np.float16
        assert ((f["weights"] > 0) & (f["weights"] <= 1)).all()
        assert kind.dtype == np.int8 and kind.shape == (n,) and set(kind.tolist()) == {0, 1, 2}
        assert (np.abs(matrix).max(axis=1) == 127).all()  # quantized like semantic.quantize
        sources = [str(s) for s in f["sources"]]
    assert {s.split()[0] for s in sources} == {"tensorflow/docs", "keras-team/keras-io"}
    assert all(re.fullmatch(r"\S+ @ [0-9a-f]{40} \(\d{4}-\d\d-\d\d\)", s) for s in sources)


def test_shipped_targets_are_kb_symbols_not_modules(shipped_kb):
    with np.load(SHIPPED, allow_pickle=False) as f:
        targets = {str(t) for t in f["targets"]}
    kinds = dict(shipped_kb.kb.db.execute("SELECT name, kind FROM symbols"))
    assert [t for t in targets if t not in kinds] == []
    assert [t for t in targets if kinds[t] == "module"] == []
    assert {"tf.config.experimental.set_memory_growth", "tf.clip_by_norm"} <= targets


# A notebook written for this test: title, a boilerplate setup, a task heading whose section
# has two code cells, prose with a backtick mention, a link-only sentence, a commented line.
NOTEBOOK = {"cells": [
    {"cell_type": "markdown", "source": ["# Taming training\n"]},
    {"cell_type": "markdown", "source": ["## Setup\n"]},
    {"cell_type": "code", "source": ["import tensorflow as tf\n", "from tensorflow import keras"]},
    {"cell_type": "markdown", "source": [
        "## Keeping gradients small\n\n",
        "Huge updates wreck a run, so squash every gradient down to a fixed length first. ",
        "The helper `tf.clip_by_norm` rescales one tensor. Read [more](https://example.org/x) "
        "about it here."]},
    {"cell_type": "code", "source": ["g = tf.clip_by_norm(g, 1.0)\n", "print(g)"]},
    {"cell_type": "markdown", "source": ["Then check that nothing exploded along the way."]},
    {"cell_type": "code", "source": [
        "# stop at once when a value turns into infinity or nan\n",
        "tf.debugging.check_numerics(g, 'bad')\n", "\n",
        "model = keras.Sequential([keras.layers.Dense(2)])"]},
]}
KNOWN = {"tf.clip_by_norm", "tf.debugging.check_numerics", "tf.keras.Sequential",
         "tf.keras.layers.Dense", "tf.keras", "tf.debugging"}


def test_pairs_link_task_words_to_the_code_that_follows():
    tool = _tool()
    items = tool.file_items("guide/taming.ipynb", json.dumps(NOTEBOOK))
    phrases, segments = tool.pairs(items, KNOWN)
    by_text = {p.text: p for p in phrases}
    code = {p.text: set().union(*(segments[i] for i in p.segments), p.own)
            for p in phrases}
    heading = "Taming training: Keeping gradients small"
    assert by_text[heading].kind == tool.HEADING
    # A heading covers its section; a sentence only the code right after it.
    assert code[heading] == {"tf.clip_by_norm", "tf.debugging.check_numerics",
                             "tf.keras.Sequential", "tf.keras.layers.Dense"}
    squash = "Huge updates wreck a run, so squash every gradient down to a fixed length first."
    assert by_text[squash].kind == tool.SENTENCE and code[squash] == {"tf.clip_by_norm"}
    helper = "The helper tf.clip_by_norm rescales one tensor."
    assert by_text[helper].kind == tool.MENTION
    assert by_text[helper].mentions == {"tf.clip_by_norm"}
    comment = "stop at once when a value turns into infinity or nan"
    assert code[comment] == {"tf.debugging.check_numerics"}  # not the model below the blank
    assert not any("Setup" in t or "example.org" in t or "more about" in t for t in by_text)


def test_link_drops_modules_caps_targets_and_weighs_mentions():
    tool = _tool()
    items = tool.file_items("guide/taming.ipynb", json.dumps(NOTEBOOK))
    corpus = tool.Corpus(*tool.pairs(items, KNOWN), sources=[])
    obj_of = {n: n for n in KNOWN - {"tf.keras", "tf.debugging"}}
    linked = tool.link(corpus, obj_of, ubiquitous=1.0, max_targets=2)
    targets = dict(zip(linked.texts, linked.targets))
    helper = targets["The helper tf.clip_by_norm rescales one tensor."]
    assert helper == {"tf.clip_by_norm": 1.0}
    # Four symbols in the section: the two used in fewest segments are kept.
    assert targets["Taming training: Keeping gradients small"] == {
        "tf.clip_by_norm": 0.5, "tf.debugging.check_numerics": 0.5}


def test_python_examples_read_their_strings_as_markdown():
    tool = _tool()
    text = ('"""\nTitle: Tiny example\nAuthor: nobody\n"""\n\n"""\n## Squash the gradient\n'
            '"""\n\nimport tensorflow as tf\ng = tf.clip_by_norm(g, 1.0)\n')
    items = tool.file_items("examples/tiny.py", text)
    assert [i[0] for i in items] == ["h", "h", "code"]
    phrases, segments = tool.pairs(items, KNOWN)
    assert [(p.text, segments[p.segments[0]]) for p in phrases] == [
        ("Tiny example", {"tf.clip_by_norm"}),
        ("Tiny example: Squash the gradient", {"tf.clip_by_norm"})]


@pytest.mark.parametrize("sentence,ok", [
    ("Clip every gradient to a fixed norm.", True),
    ("Setup done.", False),
    ("Open this in Colab to run it yourself now.", False),
    ("The loss is $\\sum_i x_i$ over the batch here.", False),
])
def test_sentence_filter(sentence, ok):
    assert _tool().good_sentence(sentence) is ok


def test_mentions_without_module_resolve_only_when_unambiguous():
    tool = _tool()
    short = tool.short_names({"tf.data.Dataset.flat_map": "a",
                              "tf.compat.v1.data.Dataset.flat_map": "b",
                              "tf.one.Thing.go": "c", "tf.two.Thing.go": "d"})
    assert short == {"Dataset.flat_map": "tf.data.Dataset.flat_map"}  # compat names left out
    cells = [{"cell_type": "markdown", "source": [
        "Nested sets become one stream when you call `Dataset.flat_map()` on them. "
        "Calling `Thing.go` is a different story altogether."]},
        {"cell_type": "code", "source": ["ds = ds.flat_map(lambda x: x)"]}]
    items = tool.file_items("guide/nested.ipynb", json.dumps({"cells": cells}))
    phrases, _ = tool.pairs(items, {"tf.data.Dataset.flat_map"}, short)
    assert [p.mentions for p in phrases] == [{"tf.data.Dataset.flat_map"}, set()]


def test_far_sentences_get_no_code_link():
    tool = _tool()
    prose = " ".join(f"Sentence number {w} talks about the weather." for w in
                     ("one", "two", "three", "four", "five"))
    cells = [{"cell_type": "markdown", "source": [prose]},
             {"cell_type": "code", "source": ["g = tf.clip_by_norm(g, 1.0)"]}]
    items = tool.file_items("guide/far.ipynb", json.dumps({"cells": cells}))
    corpus = tool.Corpus(*tool.pairs(items, KNOWN), sources=[])
    linked = tool.link(corpus, {"tf.clip_by_norm": "tf.clip_by_norm"}, ubiquitous=1.0)
    near = ["one", "two", "three", "four", "five"][-tool.MAX_DISTANCE - 1:]
    assert [t.split()[2] for t in linked.texts] == near
