"""A pasted error whose message says what to use ("use `keras.layers.TFSMLayer(...)`", "Call
`model.add(layer)`") and that no error family knows: the fix is the symbol the advice names
(issue 27). Generated cases over the KB's own symbols in every spelling a message uses, cases
that must not read as advice, and the real messages: every ``raise`` in the Keras 3 runtime
tfdesk has whose advice names a ``keras.``/``tf.`` symbol."""
from __future__ import annotations

import ast
import random
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from knowledge_base.qa.advised import advised
from knowledge_base.qa.fixes import public_module

ROOT = Path(__file__).resolve().parents[2]
TYPES = ("ValueError", "RuntimeError", "TypeError", "NotImplementedError")
OPENINGS = ("This is not supported in this context.", "Received: x=3.",
            "The layer cannot be saved in this state.", "")
VERBS = ("use {}", "Use {} instead", "Please use {}.", "You can use {} to do this",
         "Try {} instead", "Call {} first", "Did you mean to use {}?", "prefer {}")


def _sample(kb, kind: str, n: int, seed: int) -> list[str]:
    rows = kb.db.execute(
        "SELECT name FROM symbols WHERE kind = ? AND removed_in IS NULL AND name NOT LIKE "
        "'tf.compat.%' AND name NOT LIKE 'tf.raw_ops.%' AND short NOT LIKE '\\_%' ESCAPE '\\' "
        "ORDER BY name", (kind,)).fetchall()
    return random.Random(seed).sample([r[0] for r in rows], n)


def _spellings(name: str) -> list[str]:
    """How a message writes ``name``: in full, as Keras imports it, on an instance."""
    out = [name]
    if name.startswith("tf.keras."):
        out.append("keras." + name[len("tf.keras."):])
    return out


@pytest.fixture(scope="module")
def cases(shipped_kb):
    kb = shipped_kb.kb
    return [(n, s) for kind, seed in (("class", 1), ("function", 2))
            for n in _sample(kb, kind, 40, seed) for s in _spellings(n)]


def _same(kb, a: str | None, b: str) -> bool:
    if a == b:
        return True
    sa, sb = kb.symbol(a) if a else None, kb.symbol(b)
    return bool(sa and sb and sa["object"] and sa["object"] == sb["object"])


@pytest.mark.slow
@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_advice_naming_a_symbol_is_the_fix(shipped_kb, cases, data):
    name, spelt = data.draw(st.sampled_from(cases))
    quoted = data.draw(st.booleans())
    called = data.draw(st.booleans())
    code = f"{spelt}(x)" if called else spelt
    code = f"`{code}`" if quoted or "." not in spelt else code
    message = (f"{data.draw(st.sampled_from(TYPES))}: {data.draw(st.sampled_from(OPENINGS))} "
               f"{data.draw(st.sampled_from(VERBS)).format(code)}").replace("  ", " ")
    a = shipped_kb.ask(message)
    assert a.get("family") == "advised", (message, a.get("fix"))
    assert _same(shipped_kb.kb, a["results"][0]["name"], name), (message, a["results"][0])
    assert a["fix"].startswith("Use `"), a["fix"]


def _members(kb, n: int, seed: int) -> list[str]:
    rows = kb.db.execute(
        "SELECT s.name FROM symbols s JOIN symbols p ON p.name = s.parent WHERE s.kind = "
        "'method' AND s.removed_in IS NULL AND p.removed_in IS NULL AND s.name LIKE "
        "'tf.keras.%' AND s.short NOT LIKE '\\_%' ESCAPE '\\' ORDER BY s.name").fetchall()
    return random.Random(seed).sample([r[0] for r in rows], n)


@pytest.mark.slow
def test_advice_on_an_instance_or_bare_in_context_is_that_class_member(shipped_kb):
    kb = shipped_kb.kb
    checked = 0
    for name in _members(kb, 60, seed=5):
        cls_name, _, member = name.rpartition(".")
        cls = cls_name.rpartition(".")[2]
        # The class's own word as the instance (`model.fit`), and bare in a message that
        # names the class (`fit()` of a `Model`).
        for message in (f"ValueError: Not ready. Call `{cls.lower()}.{member}(x)` first.",
                        f"ValueError: `{cls}` is not ready. Call `{member}()` first."):
            got = advised(kb, message, public_module)
            assert got, message
            assert got[0].rpartition(".")[2] == member, (message, got)
            assert got[0].rpartition(".")[0].rpartition(".")[2] == cls, (message, got)
            checked += 1
    assert checked == 120


NOT_ADVICE = st.one_of(
    # Other libraries' names, purpose clauses, "the use of", words that are not code.
    st.sampled_from(["Use np.argmax instead.", "To use `Dense`, you must install flax.",
                     "The use of `load_img` requires PIL.", "Please use a smaller batch.",
                     "Try again later.", "Use torch.nn.Linear instead.",
                     "You must call `compile()` before calling `fit()`."]),
    st.text(alphabet=st.characters(whitelist_categories=("Ll", "Zs")), max_size=60),
)


@pytest.mark.slow
@settings(max_examples=80, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tail=NOT_ADVICE)
def test_no_advice_no_advised_fix(shipped_kb, tail):
    message = f"ValueError: something went wrong. {tail}"
    assert advised(shipped_kb.kb, message, public_module) == [], message


@pytest.mark.slow
def test_a_name_the_message_says_failed_is_not_its_advice(shipped_kb):
    message = ("RuntimeError: Calling `Model.predict` in graph mode is not supported when the "
               "`Model` instance was constructed with eager mode enabled. Please construct "
               "your `Model` instance in graph mode or call `Model.predict` with eager mode "
               "enabled.")
    assert advised(shipped_kb.kb, message, public_module) == []


# -- the real messages --------------------------------------------------------------------------

def _text(node) -> str | None:
    """A raise's message as it reads, formatted parts as "x"."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "x" for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        a, b = _text(node.left), _text(node.right)
        return a + b if a is not None and b is not None else None
    return None


def _keras_messages(src: Path) -> list[tuple[str, str]]:
    out = []
    for path in sorted(src.rglob("*.py")):
        if "tests" in path.parts or path.name.endswith("_test.py"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and node.exc.args:
                text = _text(node.exc.args[0])
                if text:
                    out.append((str(path.relative_to(src)), text))
    return out


@pytest.mark.slow
def test_keras3_messages_that_name_the_way_out(shipped_kb):
    """Every message in Keras 3's sources whose advice names a `keras.`/`tf.` symbol the KB
    holds gets that symbol as the fix (the 2.21 runtime's Keras, read where it is installed)."""
    found = sorted((ROOT / ".venv-runner-tf221").glob("lib/python3*/site-packages/keras/src"))
    if not found:
        pytest.skip("no 2.21 runtime (.venv-runner-tf221); make runner-env builds it")
    kb = shipped_kb.kb
    spelt = re.compile(r"\b(?:[Uu]se|[Cc]all)\s+`((?:keras|tf)\.[\w.]+)")
    checked = []
    for where, text in _keras_messages(found[0]):
        m = spelt.search(text)
        if not m or text[:m.start()].rstrip().endswith(("To", "to")):
            continue
        want = public_module(m.group(1).rpartition(".")[0]) + "." + m.group(1).rpartition(".")[2]
        sym = kb.symbol(want)
        if sym is None or sym["kind"] == "module":
            continue
        got = advised(kb, text, public_module)
        assert got and got[0] == want, (where, text, got)
        checked.append(want)
    # Keras 3.12 has five such raises (TFSMLayer, ops.vectorized_map): the scan must find them.
    assert len(checked) >= 3, checked


@pytest.mark.slow
@settings(max_examples=80, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), det=st.sampled_from(["a", "the", "each", "a non-first", "every", "this",
                                            "any", "the first"]),
       noun=st.sampled_from(["call to", "call of", "use of", "call on"]))
def test_call_or_use_as_a_noun_is_no_advice(shipped_kb, cases, data, det, noun):
    """"Creating variables on a non-first call to a function decorated with tf.function"
    says what went wrong: "call" there is a noun, not the imperative "Call X"."""
    name, spelt = data.draw(st.sampled_from(cases))
    message = f"ValueError: Something failed on {det} {noun} `{spelt}` in this step."
    assert advised(shipped_kb.kb, message, public_module) == [], message
