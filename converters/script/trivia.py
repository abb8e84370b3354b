"""Node types that only ever hold more of the same: no code lives inside them."""
from __future__ import annotations

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
