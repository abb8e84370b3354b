"""On-demand positions (converters.script.positions.Positions) must agree with a full
code-generation pass (start_positions) for every node, so findings keep their line numbers."""
import ast
from pathlib import Path

import libcst as cst
import pytest

from converters.script.positions import ANCHORS, Positions, start_positions

SCRIPTS = sorted(p for p in (Path(__file__).resolve().parents[1] / "scripts").glob("*.py"))
TRICKY = {
    "elif_and_else": "if a:\n    x = 1\nelif b:\n    x = 2\nelse:\n    x = 3\n",
    "tabs": "def f():\n\tif a:\n\t\treturn tf.keras.optimizers.Adam(1e-3)\n",
    "crlf": "import tensorflow as tf\r\nopt = tf.keras.optimizers.SGD(0.1)\r\nmodel.fit(x, y)\r\n",
    "non_ascii": "# café ünïcode\nname = 'réseau'; lr = 0.01  # taux\nmodel.fit(x, y, epochs=2)\n",
    "decorators": "@tf.function\n@other(1)\ndef step(x):\n    with tf.GradientTape() as t:\n        y = x\n    return y\n",
    "comments_and_blank_lines": "\n\n# leading\n\nclass M(tf.keras.Model):\n    # inside\n\n    def call(self, x):  # c\n        return x\n",
    "source_order": "@deco(a())\ndef f(x=[g()], /, y=h(), *, z=[k()]) -> r():\n    return (p() if q() else [s()])\n"
                    "match v():\n    case [1] if w():\n        t([u()])\n",
    "calls_in_fstrings": "print(f'{a()} and {[b()]}', c())\nd = [e(f'{g()}')]\n",
    "chained_and_parenthesized": "(a.b()\n   .c()\n   .d([1, (f)(2)]))\n",
    "try_finally": "try:\n    a()\nexcept ValueError as e:\n    b()\nelse:\n    c()\nfinally:\n    d()\n",
}


class _Check(cst.CSTVisitor):
    def __init__(self, positions, full, kinds=None):
        self.positions, self.full, self.bad, self.seen = positions, full, [], 0
        self.kinds = kinds  # only ask where nodes of these types start

    def on_visit(self, node):
        if type(node) in ANCHORS:
            self.positions.stack.append(node)
        want = self.full.get(node)
        if want is not None and (self.kinds is None or type(node) in self.kinds):
            self.seen += 1
            got = self.positions.get(node)
            if got != want:
                self.bad.append((type(node).__name__, got, want))
        return True

    def on_leave(self, node):
        if type(node) in ANCHORS:
            self.positions.stack.pop()


def _check(text: str, kinds=None):
    module = cst.parse_module(text)
    check = _Check(Positions(module, ast.parse(text), text), start_positions(module), kinds)
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
    # Calls and lists alone: those are read off the ast tree, not generated.
    check = _check(text, (cst.Call, cst.List))
    assert check.bad == []


@pytest.mark.parametrize("name", sorted(TRICKY))
def test_tricky_layouts(name):
    check = _check(TRICKY[name])
    assert check.bad == [] and check.seen > 3
    check = _check(TRICKY[name], (cst.Call, cst.List))
    assert check.bad == []


def test_source_order_table_matches_libcst():
    """Fields that hold code are walked in source order; LibCST visits children in source order,
    so its _visit_and_replace_children is the reference (a LibCST upgrade that reorders a node
    fails here rather than giving findings wrong columns)."""
    import dataclasses
    import inspect

    from converters.script.walk import SOURCE_ORDER

    trivia = {"lpar", "rpar", "comma", "semicolon", "leading_lines", "lines_after_decorators",
              "header", "footer", "newline", "equal", "colon", "star", "dot", "indent",
              "trailing_whitespace", "first_colon", "second_colon", "lbracket", "rbracket",
              "lbrace", "rbrace", "asynchronous", "posonly_ind", "leading_whitespace",
              "keyword", "relative", "trailing_comma"}
    for name in dir(cst):
        cls = getattr(cst, name)
        if not (isinstance(cls, type) and issubclass(cls, cst.CSTNode)) or inspect.isabstract(cls):
            continue
        src = inspect.getsource(cls._visit_and_replace_children)
        names = [f.name for f in dataclasses.fields(cls) if f.name not in trivia
                 and not f.name.startswith("whitespace") and f'"{f.name}"' in src]
        visited = sorted(names, key=lambda f: src.find(f'"{f}"'))
        walked = [f for f in SOURCE_ORDER[cls] if f in names] if cls in SOURCE_ORDER else names
        assert walked == visited, name
