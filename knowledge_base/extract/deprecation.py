"""Deprecation as TensorFlow and Keras write it: ``tensorflow.python.util.deprecation``
decorators (``deprecated``, ``deprecated_args``, ``deprecated_arg_values``,
``deprecated_endpoints``, ``deprecated_alias``) and hand-written docstring markers.

The decorators rewrite docstrings only at import time, so from source we read their
arguments; the instructions text is kept for the user.
"""
from __future__ import annotations

import ast
import re

from ..records import ARGUMENT, RAISES, Deprecation

DECORATORS = ("deprecated", "deprecated_args", "deprecated_arg_values", "deprecated_endpoints")

_DOC_MARKERS = [
    re.compile(r"THIS (?:FUNCTION|CLASS|METHOD|MODULE|API|SYMBOL)S? (?:IS|ARE) DEPRECATED", re.I),
    re.compile(r"^\s*(?:Warning:\s*)?(?:\*\*)?DEPRECATED(?:\*\*)?\s*[:.!]", re.I | re.M),
    re.compile(r"^\s*\.\. deprecated::", re.M),
    re.compile(r"^\s*Deprecated[:.]\s", re.M),
]
_FIRST_LINE = re.compile(r"\(deprecated(?: arguments| argument values)?\)\s*$", re.I)
_INSTRUCTIONS = re.compile(r"Instructions for updating:\s*\n?(.+?)(?:\n\s*\n|\Z)", re.S)


def call_name(node: ast.AST) -> str:
    """Last dotted component of a decorator/call target: ``deprecation.deprecated`` -> ``deprecated``."""
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return ""


def text_of(node: ast.AST | None) -> str | None:
    """Best-effort constant string: literals, ``+`` concatenation, f-strings; else source text."""
    if node is None:
        return None
    if isinstance(node, ast.Constant):
        return None if node.value is None else str(node.value)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = text_of(node.left), text_of(node.right)
        if left is not None and right is not None:
            return left + right
    if isinstance(node, ast.JoinedStr):
        out = []
        for v in node.values:
            out.append(v.value if isinstance(v, ast.Constant) else "{" + ast.unparse(v.value) + "}")
        return "".join(out)
    try:
        return ast.unparse(node)
    except Exception:  # noqa: BLE001 - unparse of odd nodes; the text is advisory only
        return None


def _arg(call: ast.Call, pos: int, kw: str) -> ast.AST | None:
    if len(call.args) > pos and not isinstance(call.args[pos], ast.Starred):
        return call.args[pos]
    for k in call.keywords:
        if k.arg == kw:
            return k.value
    return None


def from_call(call: ast.AST) -> Deprecation | None:
    """Deprecation described by a decorator or decorator-factory call, if it is one."""
    if not isinstance(call, ast.Call):
        return None
    name = call_name(call)
    if name == "deprecated":
        return Deprecation("decorator", text_of(_arg(call, 1, "instructions")) or "",
                           text_of(_arg(call, 0, "date")))
    if name == "deprecated_args":
        names = []
        for a in call.args[2:]:
            if isinstance(a, ast.Tuple) and a.elts:
                a = a.elts[0]
            t = text_of(a)
            if t:
                names.append(t)
        return Deprecation("decorator", text_of(_arg(call, 1, "instructions")) or "",
                           text_of(_arg(call, 0, "date")), names)
    if name == "deprecated_arg_values":
        return Deprecation("decorator", text_of(_arg(call, 1, "instructions")) or "",
                           text_of(_arg(call, 0, "date")),
                           [k.arg for k in call.keywords if k.arg and k.arg != "warn_once"])
    if name == "deprecated_endpoints":
        return Deprecation("endpoint", "", None, [t for t in map(text_of, call.args) if t])
    if name == "deprecated_alias":
        new = text_of(_arg(call, 1, "name"))
        return Deprecation("decorator", f"Use {new} instead." if new else "")
    return None


def from_decorators(decorators: list[ast.expr], public: str | None = None) -> Deprecation | None:
    """The first deprecation decorator that applies to ``public`` (all apply when None)."""
    for d in decorators:
        dep = from_call(d)
        if dep is None and call_name(d) == "deprecated":  # bare @deprecated
            dep = Deprecation("decorator")
        if dep is not None and (public is None or applies_to(dep, public)):
            return dep
    return None


def from_docstring(doc: str) -> Deprecation | None:
    if not doc:
        return None
    first = doc.strip().splitlines()[0] if doc.strip() else ""
    if not (_FIRST_LINE.search(first) or any(p.search(doc) for p in _DOC_MARKERS)):
        return None
    m = _INSTRUCTIONS.search(doc)
    if m:
        instructions = " ".join(m.group(1).split())
    else:
        # The marker's own paragraph is the advice.
        para = next((p for p in re.split(r"\n\s*\n", doc)
                     if _FIRST_LINE.search(p.splitlines()[0] if p.strip() else "")
                     or any(r.search(p) for r in _DOC_MARKERS)), "")
        instructions = " ".join(para.split())
    return Deprecation("docstring", instructions[:1000])


# Keras writes argument deprecations as messages in the code, not decorators: "The `lr`
# argument is deprecated, use `learning_rate` instead.", "Argument `input_length` is
# deprecated. Just remove it.", "`period` argument is deprecated. Please use `save_freq`".
_ARG_MESSAGE = re.compile(
    r"(?:[Aa]rgument\s+`(\w+)`|`(\w+)`\s+(?:argument|arg)\b|`(\w+)`\s+is deprecated,? "
    r"(?:please )?use\b)[^.]*?(?:\bis\s+(?:deprecated|no longer supported)|use\b)")


def argument_messages(functions: list[ast.AST | None]) -> Deprecation | None:
    """Arguments that ``functions`` (a function, or a class's ``__init__`` chain) say are
    deprecated or no longer supported, with the messages as the advice."""
    names: list[str] = []
    texts: list[str] = []
    for fn in functions:
        for node in ast.walk(fn) if fn is not None else ():
            if not isinstance(node, (ast.Constant, ast.JoinedStr, ast.BinOp)):
                continue
            if isinstance(node, ast.Constant) and not isinstance(node.value, str):
                continue
            text = text_of(node) if not isinstance(node, ast.Constant) else node.value
            m = _ARG_MESSAGE.search(text or "")
            if not m:
                continue
            arg = next(g for g in m.groups() if g)
            if arg not in names:
                names.append(arg)
                texts.append(" ".join(text.split()))
    if not names:
        return None
    return Deprecation(ARGUMENT, " ".join(texts)[:1000], None, names)


def stub_raise(fn: ast.AST | None) -> Deprecation | None:
    """A stub that exists only to fail: the body (after its docstring) starts with an
    unconditional ``raise X("...")``, as Keras 3's ``tf.keras.optimizers.legacy.*`` do
    (``LegacyOptimizerWarning.__init__`` raises ImportError). Such a name resolves but is
    unusable; the raised message is the advice."""
    body = list(getattr(fn, "body", None) or [])
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]
    if not body or not isinstance(body[0], ast.Raise) or body[0].exc is None:
        return None
    exc = body[0].exc
    kind = call_name(exc)
    if not kind or kind == "NotImplementedError":
        return None  # abstract: meant to be overridden, not a removed API
    message = " ".join((text_of(exc.args[0]) or "").split()) if (
        isinstance(exc, ast.Call) and exc.args) else ""
    return Deprecation(RAISES, f"{kind}: {message}".strip().rstrip(":")[:1000])


def applies_to(dep: Deprecation, public: str) -> bool:
    """``deprecated_endpoints`` names the deprecated paths (without ``tf.``); others apply to all."""
    if dep.how != "endpoint":
        return True
    for prefix in ("tf.compat.v1.", "tf."):
        if public.startswith(prefix) and public[len(prefix):] in dep.args:
            return True
    return False
