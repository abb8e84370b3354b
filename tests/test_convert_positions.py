"""On-demand positions (converters.script.positions.Positions) must agree with a full
code-generation pass (start_positions) for every node, so findings keep their line numbers."""
import ast
from pathlib import Path

import libcst as cst
import pytest

from converters.script.positions import ANCHORS, Positions, start_positions

SCRIPTS = sorted(p for p in (Path(__file__).parent / "scripts").glob("*.py"))
TRICKY = {
    "elif_and_else": "if a:\n    x = 1\nelif b:\n    x = 2\nelse:\n    x = 3\n",
    "tabs": "def f():\n\tif a:\n\t\treturn tf.keras.optimizers.Adam(1e-3)\n",
    "crlf": "import tensorflow as tf\r\nopt = tf.keras.optimizers.SGD(0.1)\r\nmodel.fit(x, y)\r\n",
    "non_ascii": "# café ünïcode\nname = 'réseau'; lr = 0.01  # taux\nmodel.fit(x, y, epochs=2)\n",
    "decorators": "@tf.function\n@other(1)\ndef step(x):\n    with tf.GradientTape() as t:\n        y = x\n    return y\n",
    "comments_and_blank_lines": "\n\n# leading\n\nclass M(tf.keras.Model):\n    # inside\n\n    def call(self, x):  # c\n        return x\n",
    "try_finally": "try:\n    a()\nexcept ValueError as e:\n    b()\nelse:\n    c()\nfinally:\n    d()\n",
}


class _Check(cst.CSTVisitor):
    def __init__(self, positions, full):
        self.positions, self.full, self.bad, self.seen = positions, full, [], 0

    def on_visit(self, node):
        if type(node) in ANCHORS:
            self.positions.stack.append(node)
        want = self.full.get(node)
        if want is not None:
            self.seen += 1
            got = self.positions.get(node)
            if got != want:
                self.bad.append((type(node).__name__, got, want))
        return True

    def on_leave(self, node):
        if type(node) in ANCHORS:
            self.positions.stack.pop()


def _check(text: str):
    module = cst.parse_module(text)
    check = _Check(Positions(module, ast.parse(text), text), start_positions(module))
    module.visit(check)
    return check


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: p.name)
def test_corpus_positions_match_the_full_pass(path):
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
        ast.parse(text)
    except (UnicodeDecodeError, SyntaxError):
        pytest.skip("not a parseable UTF-8 script (an input-error case)")
    check = _check(text)
    assert check.bad == [] and (check.seen > 10 or len(text) < 10)


@pytest.mark.parametrize("name", sorted(TRICKY))
def test_tricky_layouts(name):
    check = _check(TRICKY[name])
    assert check.bad == [] and check.seen > 3
