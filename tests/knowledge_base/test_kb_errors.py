"""Pasted errors as questions (issue 27): the error line is found and kept whatever the paste
looks like, the user's code lines are read, free text reaches ask verbatim, and generated
errors (benchmarks/error_cases.py: Python's and Keras' templates x the KB's history) are
answered with the fix in the top 3."""
from __future__ import annotations

import html
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks.error_cases import Case, generate, hit, names_replacement, python_templates
from benchmarks.traceback_formats import FORMATS, WRAPPERS
from bot.parser import split
from knowledge_base.qa import fixes, pasted

IDENT = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,20}", fullmatch=True)
MODULE = st.lists(IDENT, min_size=1, max_size=4).map(".".join)
TEMPLATES = python_templates()


@st.composite
def error_lines(draw):
    kind = draw(st.sampled_from(sorted(TEMPLATES)))
    filled = TEMPLATES[kind].format(module=draw(MODULE), name=draw(IDENT), type=draw(IDENT),
                                    path="/x/y.py", callable=draw(IDENT), kw=draw(IDENT))
    # A long message must survive whole: Keras prints dicts of every argument passed.
    tail = draw(st.text(alphabet="abc xyz{}:'0123456789,", max_size=3000))
    return filled + (f" {tail.strip()}" if tail.strip() and kind != "keyword" else "")


def traceback_of(line: str, code: str) -> str:
    return ("Traceback (most recent call last):\n"
            '  File "/home/u/train.py", line 7, in <module>\n'
            f"    {code}\n"
            '  File "/usr/lib/python3.11/site-packages/keras/src/x.py", line 90, in f\n'
            "    raise ValueError(msg)\n"
            f"{line}\n")


@settings(max_examples=150, deadline=None)
@given(error_lines(), st.sampled_from(["", "my model fails:\n", "```\n", "&gt; "]))
def test_the_error_line_is_kept_whole(line, prefix):
    for text in (line, prefix + line, traceback_of(line, "m = f(lr=0.1)"),
                 html.escape(traceback_of(line, "m = f(lr=0.1)")), f"```{line}```"):
        got = pasted.read(text)
        assert got is not None and got.line == line.replace("```", "").strip(), text[:200]


# Quotes as Slack and word processors type them: the same message to Python's eyes.
TYPOGRAPHIC = str.maketrans({"'": "\u2019"})


def without_type(line: str) -> str:
    return line.split(": ", 1)[1] if ": " in line else line


@settings(max_examples=150, deadline=None)
@given(error_lines(), st.sampled_from(["", "getting ", "help: "]), st.booleans())
def test_a_known_message_without_its_type_is_the_same_error(line, prefix, curly):
    """An issue title quotes the message, not the exception type: when the families know the
    message, it is read as the error it is (its message kept, quotes made straight)."""
    message = without_type(line)
    if not any(t.search(message) for t in fixes.templates()):
        return
    said = prefix + (message.translate(TYPOGRAPHIC) if curly else message)
    got = pasted.read(said, fixes.templates)
    assert got is not None and got.error_type == ""
    assert got.message == " ".join((prefix + message).split())


@given(st.text(alphabet=st.characters(blacklist_characters="'\"\u2018\u2019\u201c\u201d`\u00b4:"),
               max_size=300))
def test_a_line_without_quotes_never_loads_the_templates(text):
    def templates():
        raise AssertionError("templates read for a line without quotes")
    assert pasted.read(text, templates) is None or pasted.read(text).message == ""


def test_the_users_code_lines_name_the_failing_call():
    got = pasted.read(traceback_of("ValueError: Argument(s) not recognized: {'lr': 0.001}",
                                   "opt = tf.keras.optimizers.Adam(lr=0.001, beta_1=0.9)"))
    assert got.user_code == ["opt = tf.keras.optimizers.Adam(lr=0.001, beta_1=0.9)"]
    assert got.calls() == ["tf.keras.optimizers.Adam"] and got.keywords() == ["lr", "beta_1"]


@given(st.text(alphabet=st.characters(blacklist_characters=":"), max_size=300))
def test_text_without_an_error_line_is_a_plain_question(text):
    assert pasted.read(text) is None or pasted.read(text).message == ""


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet="ab '\"\n#`\\", min_size=1, max_size=80).filter(str.strip),
       st.sampled_from(["", " --json", " --version 2.15", " -k 3 --json"]))
def test_ask_takes_its_words_verbatim(text, options):
    argv = split("ask x" + text + options)
    words = ("x" + text).strip()
    if any(c in words for c in "'\"\n\\#`"):
        assert argv[argv.index("--") + 1] == words
        assert argv[1:argv.index("--")] == options.split()


@pytest.mark.slow
def test_generated_errors_get_the_fix_first(shipped_kb):
    root = Path(__file__).resolve().parents[2]
    keras = [root / ".venv-runner/lib/python3.11/site-packages/keras",
             root / ".venv-runner-tf221/lib/python3.11/site-packages/keras"]
    cases = generate(shipped_kb.kb, keras, per_family=6, seed=5).cases
    assert {c.family for c in cases} >= {"no_attribute", "cannot_import", "tf1_name",
                                         "removed_method", "keyword", "misplaced"}
    line_hits = tb_hits = 0
    worse: list[Case] = []
    for c in cases:
        a, b = shipped_kb.ask(c.line), shipped_kb.ask(c.traceback())
        line_hits += hit(a, c)
        tb_hits += hit(b, c)
        # A notebook's traceback, and the error wrapped as Keras and TensorFlow wrap it,
        # are the same error (traceback_formats).
        fmts = list(FORMATS)
        pastes = [c.traceback(fmt) for fmt in fmts] + [
            c.traceback(fmts[i % len(fmts)], w) for i, w in enumerate(WRAPPERS)]
        if hit(a, c) and not all(hit(shipped_kb.ask(p), c) for p in pastes):
            worse.append(c)
        assert a.get("fix"), c.line
        assert "internal" not in a["fix"] or c.family != "misplaced", (c.line, a["fix"])
        assert names_replacement(a, c) in (None, True), (c.line, a["fix"])
    assert not worse, [c.id for c in worse]
    assert line_hits >= 0.9 * len(cases) and tb_hits >= line_hits


@pytest.mark.slow
def test_generated_errors_without_their_type_get_the_same_fix(shipped_kb):
    """Issue titles and Slack lines quote the message alone, often with typographic quotes:
    the answer is the one the whole error line gets."""
    root = Path(__file__).resolve().parents[2]
    keras = [root / ".venv-runner/lib/python3.11/site-packages/keras",
             root / ".venv-runner-tf221/lib/python3.11/site-packages/keras"]
    cases = generate(shipped_kb.kb, keras, per_family=4, seed=11).cases
    for c in cases:
        whole = shipped_kb.ask(c.line)
        for said in (without_type(c.line), without_type(c.line).translate(TYPOGRAPHIC)):
            a = shipped_kb.ask(said)
            assert a.get("fix") == whole.get("fix"), (c.line, said)
            assert [r["name"] for r in a["results"][:3]] == \
                [r["name"] for r in whole["results"][:3]], (c.line, said)
        curly = c.line.translate(TYPOGRAPHIC)
        assert shipped_kb.ask(curly).get("fix") == whole.get("fix"), curly


def test_a_long_traceback_keeps_its_last_line(shipped_kb):
    frames = "".join(f'  File "/usr/lib/python3.11/site-packages/tensorflow/f{i}.py", line {i}, '
                     f"in g{i}\n    g{i + 1}()\n" for i in range(40))
    text = ("Traceback (most recent call last):\n  File \"t.py\", line 1, in <module>\n"
            "    sess = tf.Session()\n" + frames
            + "AttributeError: module 'tensorflow' has no attribute 'Session'")
    assert len(text) > 3000
    a = shipped_kb.ask(text)
    assert a["error"]["line"] == "AttributeError: module 'tensorflow' has no attribute 'Session'"
    assert a["results"][0]["name"] == "tf.compat.v1.Session"
    assert a["fix"].startswith("Use `tf.compat.v1.Session`")


def test_a_pasted_traceback_through_the_command_line_face(shipped_kb):
    """What Slack and the console hand to dispatch: 'ask' and the paste, quotes and newlines
    in it, HTML-escaped as Slack sends it. The reply's first line is the fix."""
    from bot.config import load_config
    from bot.context import Context
    from bot.dispatch import run_line
    ctx = Context(load_config({"TFDESK_HOME": str(shipped_kb.kb.path.parent)}))
    paste = html.escape(traceback_of(
        "ValueError: Unrecognized keyword arguments passed to Embedding: {'input_length': 10}",
        "x = tf.keras.layers.Embedding(1000, 64, input_length=10)"))
    _, reply = run_line(ctx, "ask " + paste)
    assert reply.ok, reply.text
    first = reply.text.splitlines()[0]
    assert first.startswith("Fix: Remove `input_length=`: `tf.keras.layers.Embedding` takes no "
                            "`input_length` since TensorFlow 2.16 (Keras 3)"), first
    assert reply.data["error"]["user_code"] == [
        "x = tf.keras.layers.Embedding(1000, 64, input_length=10)"]


KERAS2_OPTIMIZER = Path(__file__).resolve().parents[2] / \
    ".venv-runner/lib/python3.11/site-packages/keras/src/optimizers/optimizer.py"


def test_keras_2_new_optimizer_keyword_errors_are_keyword_errors(shipped_kb):
    """Keras 2.11-2.15's optimizers raise their own messages for legacy keywords; read from the
    installed Keras 2 when there is one, else as that file writes them."""
    decay = ("decay is deprecated in the new Keras optimizer, please check the docstring for "
             "valid arguments, or use the legacy optimizer, e.g., tf.keras.optimizers.legacy.Adam.")
    if KERAS2_OPTIMIZER.is_file():
        src = " ".join(KERAS2_OPTIMIZER.read_text().split())
        assert '{k} is deprecated in the new Keras optimizer, please " "check the docstring' in src
    a = shipped_kb.ask(f"ValueError: {decay}")
    assert a["family"] == "keras2_optimizer_deprecated"
    assert a["fix"].startswith("Remove `decay=`: `tf.keras.optimizers.Adam`"), a["fix"]


def test_a_removed_module_is_answered_with_where_its_contents_went(shipped_kb):
    """Every removed public module: the fix imports from a home only where the KB's history
    says it moved (at least half of what it held went there: layers.experimental.preprocessing
    -> tf.keras.layers), and that home is where most of the names it held itself went; a module whose
    contents scattered lists where they went and claims no home, and no module is sent to
    one of a like name (`tf.estimator.experimental` -> `tf.experimental` was said before).
    Generated from the KB's own removals."""
    from collections import Counter
    kb = shipped_kb.kb
    mods = [r[0] for r in kb.db.execute(
        "SELECT name FROM symbols WHERE kind = 'module' AND removed_in IS NOT NULL AND name "
        "NOT LIKE 'tf.compat.%'")]
    homes = 0
    for mod in mods:
        sym = kb.symbol(mod)
        fix = shipped_kb.ask(f"ModuleNotFoundError: No module named 'tensorflow{mod[2:]}'")["fix"]
        stored = [e["data"].get("to") for e in kb.events(sym["id"]) if e["kind"] == "removed"]
        assert "is now there" not in fix, (mod, fix)
        if stored and stored[-1]:
            moved = fixes._members_moved(kb, mod, kb.ord_of(sym["removed_in"]))
            most = Counter(b.rpartition(".")[0] for a, b in moved
                           if a.rpartition(".")[0] == mod).most_common(1)[0][0]
            assert stored[-1] == most, (mod, stored[-1], most)
            assert fix.startswith(f"Import from `{most}`: `{mod}` was removed"), (mod, fix)
            homes += 1
        else:
            assert not fix.startswith("Import from"), (mod, fix)
    assert homes >= 5, homes


@pytest.mark.slow
def test_a_name_in_every_release_gets_its_other_public_name(shipped_kb):
    """An import of a name every release has fails only where the package's layout differs
    (a standalone Keras: `keras.preprocessing.sequence.pad_sequences`): the fix imports the
    object's other public name, present now in another module. Generated from the KB."""
    import random
    kb = shipped_kb.kb
    rows = kb.db.execute(
        "SELECT a.name, b.name FROM symbols a JOIN symbols b ON a.object = b.object AND "
        "a.name != b.name WHERE a.kind IN ('class', 'function') AND a.first = ? AND "
        "a.removed_in IS NULL AND b.removed_in IS NULL AND a.name LIKE 'tf.keras.%' AND "
        "b.name NOT LIKE 'tf.compat.%' AND a.name NOT LIKE 'tf.compat.%'",
        (kb.versions[0],)).fetchall()
    names = sorted({a for a, b in rows
                    if a.rpartition(".")[0] != b.rpartition(".")[0]})
    assert len(names) >= 50, len(names)
    for name in random.Random(7).sample(names, 40):
        module, _, short = name.rpartition(".")
        a = shipped_kb.ask(f"ImportError: cannot import name '{short}' from "
                           f"'{'keras' + module[len('tf.keras'):]}'")
        other = a["fix"].split("Import it as `")[1].split("`")[0]
        assert other != name and other.rpartition(".")[0] != module, a["fix"]
        assert kb.symbol(other)["object"] == kb.symbol(name)["object"], a["fix"]
        assert kb.symbol(other)["removed_in"] is None
        assert a["results"][0]["name"] == other, (a["fix"], a["results"][0]["name"])


def retyped(line: str, how: int) -> str | None:
    """The message as an issue title retypes it (None when ``how`` does not apply): the
    type left out and the closing quote dropped, "module" left out, Python 2's wording, the
    module unquoted."""
    msg = without_type(line)
    m = re.match(r"module '((?:tensorflow|keras)[\w.]*)' has no attribute '(\w+)'$", msg)
    if how == 0:
        return msg[:-1] if msg.endswith("'") else None
    if how == 1 and m:
        return f"'{m.group(1)}' has no attribute '{m.group(2)}'"
    if how == 2 and m and m.group(1) == "tensorflow":
        return f"AttributeError: 'module' object has no attribute '{m.group(2)}'"
    if how == 3 and msg.startswith("cannot import name"):
        return re.sub(r"from '([\w.]+)'", r"from \1", msg)
    return None


@pytest.mark.slow
@settings(max_examples=80, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(0, 10_000), st.integers(0, 3))
def test_a_retyped_message_gets_the_same_fix(shipped_kb, pick, how):
    """`'tensorflow' has no attribute 'set_random_seed` (a title: no type, no "module", no
    closing quote) is the error `module 'tensorflow' has no attribute 'set_random_seed'`."""
    cases = _retype_pool(shipped_kb)
    c = cases[pick % len(cases)]
    said = retyped(c.line, how)
    if said is None:
        return
    whole, a = shipped_kb.ask(c.line), shipped_kb.ask(said)
    assert a.get("fix") == whole.get("fix"), (c.line, said)


_POOL: list = []


def _retype_pool(shipped_kb) -> list:
    if not _POOL:
        cases = generate(shipped_kb.kb, [], per_family=30, seed=13).cases
        _POOL.extend(c for c in cases if c.family in ("no_attribute", "cannot_import",
                                                      "tf1_name", "misplaced", "no_module"))
    return _POOL
