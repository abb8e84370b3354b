"""render() copies the text of unchanged statements: its output must be exactly LibCST's
``module.code``, whatever the layout, for untouched modules and for converted ones."""
import ast
import random
from pathlib import Path

import libcst as cst
import pytest

from converters.script import ConversionError, convert
from converters.script.positions import statement_starts
from converters.script.render import render, spans
from tests.converters.test_convert_positions import SCRIPTS, TRICKY

LAYOUTS = {
    **TRICKY,
    "no_trailing_newline": "import tensorflow as tf\ndef f():\n    return 1",
    "footer_comments": "x = 1\n\n# the end\n\n",
    "block_footers": "def f():\n    a = 1\n    # trailing in block\n\n# top level\nb = 2\n",
    "continuation": "x = 1 + \\\n    2\ny = [1,\n     2]  # c\nif x:\n    z = 3 \\\n        + 4\n",
    "semicolons": "a = 1; b = 2;\nif a: b = 3\nelse: b = 4\n",
    "nested_else": "for i in r:\n    if i:\n        a()\n    elif j:\n        b()\n    else:\n        c()\nelse:\n    d()\n",
    "decorated_with_comments": "# head\n\n@a\n# between\n@b(1,\n   2)\n\ndef f():\n    pass\n",
    "crlf_blocks": "def f():\r\n    x = 1\r\n    return x\r\n\r\ny = f()\r\n",
    "tabs_and_unicode": "def f():\n\tname = 'réseau'  # café\n\treturn name\n",
}


def _stdlib_sample(count=60):
    files = sorted(Path(ast.__file__).parent.glob("*.py"))
    step = max(1, len(files) // count)
    return [p for p in files[::step] if p.stat().st_size < 120_000]


def _roundtrip(text: str):
    module = cst.parse_module(text)
    found = spans(module, text, statement_starts(module, ast.parse(text), text))
    assert render(module, found) == text
    rng = random.Random(len(text))
    for _ in range(2):  # some statements copied, the rest generated (nested blocks included)
        subset = {k: v for k, v in found.items() if rng.random() < 0.5}
        assert render(module, subset) == text
    return found


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_layouts_render_to_their_source(name):
    _roundtrip(LAYOUTS[name])


def test_real_world_files_render_to_their_source():
    checked = copied = 0
    for path in _stdlib_sample():
        text = path.read_text(encoding="utf-8")
        found = _roundtrip(text)
        checked += 1
        copied += len(found)
    assert checked > 30 and copied > 500


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: p.name)
@pytest.mark.parametrize("target", ["horovod", "tf-distribute"])
def test_converted_code_is_what_libcst_generates(path, target):
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        pytest.skip("not UTF-8 (an input-error case)")
    for _ in range(2):  # the second time, snippets come from the remembered text
        try:
            result = convert(text, target, path.name)
        except ConversionError:
            pytest.skip("refused or not a script (an input-error case)")
        if result.tree is not None:
            assert result.code == result.tree.code


def test_most_of_an_unchanged_module_is_copied():
    text = (Path(__file__).resolve().parents[1] / "scripts" / "keras_argparse_main.py").read_text()
    module = cst.parse_module(text)
    found = spans(module, text, statement_starts(module, ast.parse(text), text))
    assert sum(v.text.count("\n") for k, v in found.items() if k in module.body) >= text.count("\n") - 2


def test_the_rule_walk_keeps_untouched_nodes_and_refuses_trivia_hooks():
    from converters.script.transforms.base import Combined, RuleContext, RuleTransform

    text = (Path(__file__).resolve().parents[1] / "scripts" / "custom_loop_main.py").read_text()
    module = cst.parse_module(text)
    ctx = RuleContext(analysis=None, target="horovod")

    class RenameFit(RuleTransform):
        def leave_Call(self, original, updated):
            if isinstance(updated.func, cst.Name) and updated.func.value == "print":
                return updated.with_changes(func=cst.Name("log"))
            return updated

    assert Combined([]).transform(module) is module
    out = Combined([RenameFit(ctx)]).transform(module)
    changed = [a is not b for a, b in zip(module.body, out.body)]
    assert any(changed) and not all(changed)  # only the statements holding a print()

    class Commas(RuleTransform):
        def leave_Comma(self, original, updated):
            return updated

    with pytest.raises(TypeError, match="whitespace or punctuation"):
        Combined([Commas(ctx)])
