"""A question about a named symbol's history answers with that symbol first ("when was
fit_generator removed": not Model.fit, however near in meaning); one that says it is gone or
asks what replaces it answers with the KB's replacement, then it. Cases are generated from the
KB's own removals and replacements, in the spellings users write (full name, short name);
how-to questions that merely share a word ("when I call fit", "still nan") are left to the
ranker."""
from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from knowledge_base.qa import history_asked

WHEN = ("when was {} removed", "which version removed {}", "is {} still available in 2.21",
        "since which release is {} gone", "when did {} go away", "was {} deprecated",
        "what tensorflow version introduced {}")
GONE = ("what replaces {}", "{} is deprecated, what should I use", "{} no longer works, "
        "what is the replacement", "migrating off {}")


def _removed(kb, n: int, seed: int, with_replacement: bool) -> list[tuple[str, str]]:
    """(symbol, how it is written) for removed non-compat classes, functions and methods."""
    rows = kb.db.execute(
        "SELECT name, short FROM symbols WHERE removed_in IS NOT NULL AND kind IN ('class', "
        "'function', 'method') AND name NOT LIKE 'tf.compat.%' AND name NOT LIKE "
        "'tf.raw_ops.%' AND short NOT LIKE '\\_%' ESCAPE '\\' AND replacement IS "
        + ("NOT NULL" if with_replacement else "NULL") + " ORDER BY name").fetchall()
    return random.Random(seed).sample([(r[0], r[1]) for r in rows], n)


def _same(kb, a: str, b: str) -> bool:
    sa, sb = kb.symbol(a), kb.symbol(b)
    return a == b or bool(sa and sb and sa["object"] and sa["object"] == sb["object"])


def _written(index, name: str, short: str) -> str:
    """The short name when it alone means this symbol (fit_generator), else the full one."""
    hit = index.resolve(short) if "_" in short or short[:1].isupper() else None
    return short if hit is not None and hit.name == name else name


@pytest.mark.slow
def test_a_history_question_answers_with_the_symbol_it_names(shipped_kb):
    kb, index = shipped_kb.kb, shipped_kb.questions
    for i, (name, short) in enumerate(_removed(kb, 60, seed=1, with_replacement=False)
                                      + _removed(kb, 60, seed=2, with_replacement=True)):
        q = WHEN[i % len(WHEN)].format(_written(index, name, short))
        got = [h.name for h in index.search(q, limit=5)]
        assert got and _same(kb, got[0], name), (q, got[:3])


@pytest.mark.slow
def test_a_gone_symbol_asked_after_gets_its_replacement_then_it(shipped_kb):
    kb, index = shipped_kb.kb, shipped_kb.questions
    for i, (name, short) in enumerate(_removed(kb, 80, seed=3, with_replacement=True)):
        q = GONE[i % len(GONE)].format(_written(index, name, short))
        got = [h.name for h in index.search(q, limit=5)]
        assert got[0] == kb.symbol(name)["replacement"], (q, got[:3])
        assert _same(kb, got[1], name), (q, got[:3])


@pytest.mark.slow
def test_without_a_known_replacement_the_ranker_answers(shipped_kb):
    kb, index = shipped_kb.kb, shipped_kb.questions
    for name, short in _removed(kb, 40, seed=4, with_replacement=False):
        q = f"what replaces {_written(index, name, short)}"
        assert history_asked.first(index, q) == [], q


HOWTO = st.sampled_from(["when I call {} the loss is nan", "loss still nan after {}",
                         "how do I use {} with a generator", "{} returns the wrong shape",
                         "replace NaN values with zeros before {}",
                         "tensorflow equivalent of np.{}", "since the model uses {} it is slow"])


@pytest.mark.slow
@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(template=HOWTO, data=st.data())
def test_a_how_to_sharing_a_word_is_left_to_the_ranker(shipped_kb, template, data):
    names = ["tf.keras.Model.fit", "tf.data.Dataset.map", "tf.clip_by_value", "fit_generator",
             "tf.reduce_sum", "predict_classes", "tf.keras.layers.Dense"]
    name = data.draw(st.sampled_from(names))
    q = template.format(name.rpartition(".")[2] if template.endswith("np.{}") else name)
    assert history_asked.first(shipped_kb.questions, q) == [], q
