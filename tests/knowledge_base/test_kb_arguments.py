"""A question that says one of a candidate's keywords is noticed (knowledge_base/qa/arguments.py),
checked against Python's own parser of signatures and on generated keywords and questions."""
import string
from keyword import iskeyword

from hypothesis import given, settings, strategies as st

from knowledge_base.qa import arguments
from knowledge_base.signatures import parse_params

word = st.text(string.ascii_lowercase, min_size=2, max_size=8)
# A parameter's name: never a Python keyword ("else" is no signature's).
keyword = st.lists(word, min_size=1, max_size=4).map("_".join).filter(
    lambda w: not iskeyword(w))
filler = st.lists(st.sampled_from(["how", "does", "the", "in", "keras", "work", "layer", "my"]),
                  max_size=5)


@given(st.lists(keyword, min_size=1, max_size=6, unique=True),
       st.lists(st.sampled_from(["None", "1", "'a'", "(1, 2)", "[]"]), max_size=6),
       st.booleans(), st.booleans())
def test_keywords_are_the_signatures_names_less_the_generic_ones(names, defaults, star, kw):
    n_plain = len(names) - len(defaults[:len(names)])
    params = names[:n_plain] + [f"{n}={d}" for n, d in zip(names[n_plain:], defaults)]
    if star:
        params.append("*rest_args")
    if kw:
        params.append("**more_kwargs")
    sig = "(" + ", ".join(params) + ")"
    oracle = [n for n, kind, _ in parse_params(sig) if n not in arguments.GENERIC]
    assert arguments.keywords(sig) == oracle


@given(keyword.filter(lambda k: "_" in k), filler, filler)
def test_a_several_word_keyword_said_in_words_or_as_code_is_said(k, before, after):
    for q in (" ".join(before + k.split("_") + after), " ".join(before + [k] + after),
              " ".join(before + [k.upper()] + after)):
        words, joined = arguments.question_words(q)
        assert arguments.said(k, words, joined) == 1.0, q


@given(keyword.filter(lambda k: k.count("_") >= 1), filler)
def test_a_keyword_with_a_word_missing_or_out_of_order_is_not_said(k, rest):
    parts = k.split("_")
    if len(set(parts)) < len(parts):
        return
    dropped = " ".join(rest + parts[1:])
    swapped = " ".join(rest + parts[::-1])
    for q in (dropped, swapped):
        words, joined = arguments.question_words(q)
        if "_".join(parts) not in joined and not any(
                words[i:i + len(parts)] == parts for i in range(len(words))):
            assert arguments.said(k, words, joined) == 0.0, q


@settings(max_examples=50)
@given(word, filler)
def test_one_word_keywords_count_half_and_only_when_long(w, rest):
    words, joined = arguments.question_words(" ".join(rest + [w]))
    expected = 0.5 if len(w) >= arguments.MIN_SINGLE else 0.0
    assert arguments.said(w, words, joined) == expected


def test_the_real_signatures_keywords(shipped_kb):
    s = shipped_kb.questions
    ids = [s.lookup.name_to_id[n] for n in ("tf.keras.layers.Embedding", "tf.keras.Model.fit",
                                             "tf.keras.layers.LSTM", "tf.keras.layers.GRU")]
    said = arguments.features(s, ids, "how does mask zero work in an embedding layer")
    assert said == {ids[0]: (1.0, 1.0)}
    said = arguments.features(s, ids, "what does return_sequences do")
    assert said == {ids[2]: (1.0, 0.5), ids[3]: (1.0, 0.5)}
    assert arguments.features(s, ids, "use class weight for an unbalanced data set") == \
        {ids[1]: (1.0, 1.0)}
