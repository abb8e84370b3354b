"""TF1 names and names a public module never had (issue 27, knowledge_base/qa/tf1_fixes.py).

Invariants, each checked on generated cases:
- TensorFlow's own migration note is read for the native TF2 way, and only a name that a
  migration cue points at counts (tf2_notes.py);
- an answer that sends the user to tf.compat.v1 names that TF2 way too;
- a public module (tensorflow, tensorflow.keras, keras.layers, ...) is never called internal
  or private code: a name it lacks is a TF1 name, a name that lives elsewhere, or misspelt.
"""
from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from knowledge_base import tf2_notes

CUES = ["To switch to native TF2 style, use {n} instead.", "In TF2 this API is changed to {n}.",
        "The corresponding TensorFlow v2 layer is {n}.", "Please migrate to {n}.",
        "Replace it by {n} when you can.", "Use {n} instead of this symbol."]
SPELLINGS = ["`{n}`", "[`{n}`]", "[{n}]", "{n}"]
NAME = st.from_regex(r"tf\.[a-z]{2,8}(\.[A-Za-z][a-z_]{1,10}[a-z]){0,2}", fullmatch=True)
FILLER = st.sampled_from(["This API is compatible with eager execution.",
                          "It is not compatible with `tf.function`.",
                          "Keep in mind that the default seed has changed."])


def _note(*sentences: str) -> str:
    return "Args about it.\n\n@compatibility(TF2)\n" + " ".join(sentences) + \
        "\n@end_compatibility\n"


@settings(max_examples=150, deadline=None)
@given(NAME, st.sampled_from(CUES), st.sampled_from(SPELLINGS), FILLER, st.booleans())
def test_the_name_a_cue_points_at_is_the_tf2_way(name, cue, spelling, filler, before):
    sentence = cue.format(n=spelling.format(n=name))
    doc = _note(filler, sentence) if before else _note(sentence, filler)
    assert tf2_notes.tf2_way(doc, "tf.compat.v1.own", lambda n: True) == name


@settings(max_examples=100, deadline=None)
@given(NAME, FILLER)
def test_a_name_only_mentioned_is_not_the_tf2_way(name, filler):
    """`tf.keras.optimizers.Optimizer` in TF2 does not provide X: mentioned, not advised."""
    doc = _note(f"`{name}` in TF2 does not provide a `compute` method.", filler)
    assert tf2_notes.tf2_way(doc, "tf.compat.v1.own", lambda n: True) is None


@settings(max_examples=100, deadline=None)
@given(NAME, st.sampled_from(CUES))
def test_compat_own_and_absent_names_are_never_the_way(name, cue):
    own = "tf.compat.v1." + name[3:]
    for said, present in ((own, True), ("tf.compat.v1.other", True), (name, False)):
        doc = _note(cue.format(n=f"`{said}`"))
        assert tf2_notes.tf2_way(doc, own, lambda n, p=present: p) is None
    assert tf2_notes.tf2_way("no note at all", own, lambda n: True) is None


def _v1_with_way(kb):
    from knowledge_base.qa import tf1_fixes
    rows = kb.db.execute("SELECT r.old, r.new FROM renames r WHERE r.new LIKE 'tf.compat.v1.%' "
                         "AND r.old NOT LIKE 'tf.compat.%'").fetchall()
    # Only names TF2 lacks: the upgrade tables also send some present ones to compat.v1.
    return [(old, new, way) for old, new in rows if kb.symbol(old) is None
            and kb.symbol(new) and (way := tf1_fixes.tf2_way(kb, new))]


@pytest.mark.slow
def test_every_tf2_way_is_a_present_public_name(shipped_kb):
    kb = shipped_kb.kb
    found = _v1_with_way(kb)
    assert len(found) >= 40  # 128 of the 183 notes name a way (Adam, set_seed, layers)
    for _, new, way in found:
        sym = kb.symbol(way)
        assert sym["removed_in"] is None and not way.startswith("tf.compat."), (new, way)


@pytest.mark.slow
def test_a_tf1_name_gets_compat_v1_and_the_native_way(shipped_kb):
    """Every TF1 name the upgrade tables send to tf.compat.v1 whose note gives a TF2 way,
    pasted as the error TF2 raises for it."""
    found = _v1_with_way(shipped_kb.kb)
    for old, new, way in random.Random(5).sample(found, min(40, len(found))):
        module, _, name = old.rpartition(".")
        py = "tensorflow" + module[2:]
        a = shipped_kb.ask(f"AttributeError: module '{py}' has no attribute '{name}'")
        names = [r["name"] for r in a["results"][:3]]
        assert a["fix"].startswith(f"Use `{new}`"), (old, a["fix"])
        assert f"native TF 2 way is `{way}`" in a["fix"] and way in names, (old, a["fix"], names)


def _public_modules(kb) -> list[str]:
    rows = kb.db.execute("SELECT name FROM symbols WHERE kind = 'module' AND removed_in IS NULL "
                         "AND name NOT LIKE 'tf.compat.%' AND name NOT LIKE 'tf.raw_ops%'")
    return sorted(r[0] for r in rows)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data(), st.from_regex(r"zq[a-z]{3,8}(_[a-z]{2,6})?", fullmatch=True),
       st.sampled_from(["tensorflow", "keras"]))
def test_a_public_module_is_never_said_internal(shipped_kb, data, name, package):
    """`module 'tensorflow' has no attribute 'python_io'` was answered "`tensorflow` is
    internal code". A public module lacking a name says so, and what to check."""
    module = data.draw(st.sampled_from(_public_modules(shipped_kb.kb)))
    if package == "keras":
        if not module.startswith("tf.keras"):
            return
        py = "keras" + module[len("tf.keras"):]
    else:
        py = "tensorflow" + module[2:]
    for line in (f"AttributeError: module '{py}' has no attribute '{name}'",
                 f"ImportError: cannot import name '{name}' from '{py}'"):
        fix = shipped_kb.ask(line).get("fix") or ""
        assert fix.startswith("Check the spelling: "), (line, fix)
        assert "internal" not in fix and "private" not in fix, (line, fix)
        assert f"`{module}.{name}` is in no TensorFlow release" in fix, (line, fix)


@pytest.mark.slow
def test_a_name_asked_of_the_wrong_module_names_where_it_lives(shipped_kb):
    """`tf.AdamOptimizer`, `from tensorflow import Adam`: a class or function whose short name
    is its own (one object in the KB) asked of tf, answered with where it is."""
    kb = shipped_kb.kb
    rows = kb.db.execute(
        "SELECT short, min(name), count(DISTINCT object) FROM symbols WHERE kind IN "
        "('class', 'function') AND name NOT LIKE 'tf.raw_ops.%' AND parent != 'tf' "
        "AND short NOT IN (SELECT short FROM symbols WHERE parent = 'tf') "
        "AND short NOT IN (SELECT short FROM symbols WHERE kind = 'module') "
        "GROUP BY short HAVING count(DISTINCT object) = 1").fetchall()
    checked = 0
    for short, _, _ in random.Random(11).sample(rows, 40):
        if kb.symbol(f"tf.{short}") is not None or kb.db.execute(
                "SELECT 1 FROM renames WHERE old = ?", (f"tf.{short}",)).fetchone():
            continue
        a = shipped_kb.ask(f"AttributeError: module 'tensorflow' has no attribute '{short}'")
        first = a["results"][0]["name"]
        assert first.rpartition(".")[2] == short, (short, a["fix"], first)
        assert a["fix"].startswith(f"Use `{first}`: `tf.{short}` is in no TensorFlow release"), \
            (short, a["fix"])
        checked += 1
    assert checked >= 30


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data(), st.from_regex(r"zq[a-z]{3,8}", fullmatch=True))
def test_a_private_name_of_a_public_module_is_said_private(shipped_kb, data, name):
    """`module 'keras.backend' has no attribute '_get_available_gpus'`: Keras' or TF's own
    private code, said so; its public namesake first when there is one (`_set_session`)."""
    module = data.draw(st.sampled_from(_public_modules(shipped_kb.kb)))
    fix = shipped_kb.ask(f"AttributeError: module 'tensorflow{module[2:]}' has no attribute "
                         f"'_{name}'").get("fix") or ""
    assert "(a leading underscore)" in fix and "internal code" not in fix, fix
    fix = shipped_kb.ask("AttributeError: module 'tensorflow' has no attribute "
                         "'_set_session'").get("fix") or ""
    assert fix.startswith("Use `tf.compat.v1.keras.backend.set_session`: "), fix


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.from_regex(r"zq[a-z]{3,8}", fullmatch=True))
def test_python_2s_message_guesses_no_spelling_verdict(shipped_kb, name):
    """"'module' object has no attribute 'x'" does not say which module: a name found
    nowhere gets no fix made up about tensorflow; a TF1 name still gets its fix."""
    assert not shipped_kb.ask(f"AttributeError: 'module' object has no attribute "
                              f"'{name}'").get("fix")
    fix = shipped_kb.ask("AttributeError: 'module' object has no attribute 'placeholder'")
    assert fix["fix"].startswith("Use `tf.compat.v1.placeholder`"), fix["fix"]


@pytest.mark.slow
def test_a_compat_v1_answer_shows_its_tf2_way(shipped_kb):
    """`tfdesk ask tf.train.AdamOptimizer` (or any TF1 name with a migration note) shows
    the native TF2 way beside the tf.compat.v1 symbol, in the data and on the console."""
    from bot.handlers.kb import _symbol_lines
    for _, new, way in random.Random(8).sample(_v1_with_way(shipped_kb.kb), 20):
        d = shipped_kb.ask(new)["results"][0]
        assert d["name"] == new and d["tf2_way"] == way, (new, d.get("tf2_way"))
        assert f"    native TF 2 way: {way} (TensorFlow's migration note)" in _symbol_lines(d)
    assert "tf2_way" not in shipped_kb.ask("tf.keras.optimizers.Adam")["results"][0]
