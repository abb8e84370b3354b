"""Reading LibCST trees without rebuilding them (a LibCST visit rebuilds every node it passes).

Shared by the positions, the rule traversal and the rules' own searches.
"""
from __future__ import annotations

from dataclasses import fields

import libcst as cst


def _trivia() -> frozenset:
    # Whitespace, comments, punctuation and operators: they hold only more of the same, never
    # code, and they are two thirds of all nodes.
    from libcst._nodes import op, whitespace

    found = {c for m in (op, whitespace) for c in vars(m).values()
             if isinstance(c, type) and issubclass(c, cst.CSTNode) and c.__module__ == m.__name__}
    found |= {cst.LeftParen, cst.RightParen, cst.LeftSquareBracket, cst.RightSquareBracket,
              cst.LeftCurlyBrace, cst.RightCurlyBrace}
    return frozenset(found)


TRIVIA = _trivia()

# Node types whose fields that can hold code are not in source order (the rest are; a test
# checks this against LibCST's own visiting order).
SOURCE_ORDER = {
    cst.IfExp: ("body", "test", "orelse"),
    cst.FunctionDef: ("decorators", "name", "type_parameters", "params", "returns", "body"),
    cst.ClassDef: ("decorators", "name", "type_parameters", "bases", "keywords", "body"),
    cst.TypeAlias: ("name", "type_parameters", "value"),
    cst.Parameters: ("posonly_params", "params", "star_arg", "kwonly_params", "star_kwarg"),
    cst.MatchCase: ("pattern", "guard", "body"),
    cst.ExceptHandler: ("type", "name", "body"),
    cst.ExceptStarHandler: ("type", "name", "body"),
}
_CHILDREN: dict = {}
_WALKED: dict = {}


def children_of(cls: type) -> tuple:
    """The fields of a node type, in the order LibCST visits them (source order)."""
    names = _CHILDREN.get(cls)
    if names is None:
        names = _CHILDREN[cls] = SOURCE_ORDER.get(cls) or tuple(f.name for f in fields(cls))
    return names


def walked(value) -> bool:
    """Whether a field value is a node that can hold code (not trivia, not a str or sentinel)."""
    cls = type(value)
    known = _WALKED.get(cls)
    if known is None:
        known = _WALKED[cls] = isinstance(value, cst.CSTNode) and cls not in TRIVIA
    return known


def _children(n) -> list:
    out = []
    for name in children_of(type(n)):
        v = getattr(n, name)
        if type(v) is list or type(v) is tuple:
            out.extend(x for x in v if walked(x))
        elif walked(v):
            out.append(v)
    return out


def nodes_of(node: cst.CSTNode, kind: type, stop: tuple = ()) -> list:
    """Every ``kind`` node in ``node``'s subtree (itself included), in no set order; the
    subtrees of ``stop`` types below ``node`` are not searched."""
    out, todo = [], [node]
    while todo:
        n = todo.pop()
        if type(n) is kind:
            out.append(n)
        if n is node or type(n) not in stop:
            todo.extend(_children(n))
    return out


def in_source_order(node: cst.CSTNode, kinds) -> list:
    """Nodes of the ``kinds`` types in ``node``'s subtree (itself included), in source order."""
    out, todo = [], [node]
    while todo:
        n = todo.pop()
        if type(n) in kinds:
            out.append(n)
        todo.extend(reversed(_children(n)))
    return out
