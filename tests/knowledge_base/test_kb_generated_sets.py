"""The generated question sets (tools/generated_questions.py) are the tool's output for the
shipped KB, split by object so no symbol is on both sides, and name only symbols the KB has."""
import string

import pytest
from hypothesis import given, strategies as st

from knowledge_base.qa import question_sets
from tools import generated_questions as gen


@pytest.fixture(scope="module")
def generated(shipped_kb):
    return gen.generate(shipped_kb.kb.db)


def test_the_shipped_files_are_the_tools_output_for_the_shipped_kb(generated):
    train, held = generated
    for file, items in ((gen.TRAIN_FILE, train), (gen.HELD_OUT_FILE, held)):
        assert (question_sets.DIR / file).read_text(encoding="utf-8") == gen.render(file, items)
    assert len(train) >= 1000 and len(held) >= 200


def test_no_object_is_asked_about_on_both_sides(shipped_kb, generated):
    train, held = generated
    obj = dict(shipped_kb.kb.db.execute("SELECT name, COALESCE(object, name) FROM symbols"))
    sides = [{obj[n] for item in items for n in item["accept"]} for items in generated]
    assert not sides[0] & sides[1]
    assert all(gen.held_out(o) for o in sides[1]) and not any(gen.held_out(o) for o in sides[0])


def test_every_question_names_only_kb_symbols_and_none_repeats(shipped_kb, generated):
    names = {n for (n,) in shipped_kb.kb.db.execute("SELECT name FROM symbols")}
    items = generated[0] + generated[1]
    assert all(set(i) == {"q", "accept"} and set(i["accept"]) <= names for i in items)
    keys = [" ".join(i["q"].lower().split()) for i in items]
    assert len(keys) == len(set(keys))


# Spelling alone cannot tell "caches" (cache) from "matches" (match): stems ending in a
# sibilant and "e" are left to the examples below.
@given(st.text(string.ascii_lowercase, min_size=2, max_size=9).filter(
    lambda w: not w.endswith(("s", "x", "z", "sh", "ch", "y", "ie", "se", "xe", "ze", "he"))))
def test_a_third_person_verb_becomes_the_request(stem):
    assert gen.base_verb(stem.capitalize() + "s") == stem


@pytest.mark.parametrize("said,asked", [("Applies", "apply"), ("Matches", "match"),
                                          ("Passes", "pass"), ("Does", "do"), ("Fixes", "fix")])
def test_irregular_third_persons(said, asked):
    assert gen.base_verb(said) == asked


def test_a_summary_becomes_a_question_without_code_marks():
    sym = gen.Symbol("tf.data.Dataset.map", "method", "o", "Maps `map_func` across the "
                     "elements of this dataset.", None, "")
    assert gen.purpose_question(sym, 0) == "how do I map map func across the elements of a dataset"
    doc = "Embeds.\n\nArgs:\n    mask_zero: Boolean, whether the input value 0 is padding.\n"
    sym = gen.Symbol("tf.keras.layers.Embedding", "class", "o", "Embeds.",
                     "(input_dim, mask_zero=False, **kwargs)", doc)
    assert gen.param_questions(sym, 0) == ["what does mask zero do in embedding"]
