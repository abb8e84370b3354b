"""Deprecation as TensorFlow and Keras write it: ``tensorflow.python.util.deprecation``
decorators (``deprecated``, ``deprecated_args``, ``deprecated_arg_values``,
``deprecated_endpoints``, ``deprecated_alias``) and hand-written docstring markers.

The decorators rewrite docstrings only at import time, so from source we read their
arguments; the instructions text is kept for the user.
"""
from __future__ import annotations

import ast
import re

from ..records import Deprecation

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


def applies_to(dep: Deprecation, public: str) -> bool:
    """``deprecated_endpoints`` names the deprecated paths (without ``tf.``); others apply to all."""
    if dep.how != "endpoint":
        return True
    for prefix in ("tf.compat.v1.", "tf."):
        if public.startswith(prefix) and public[len(prefix):] in dep.args:
            return True
    return False
