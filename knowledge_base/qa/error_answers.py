"""``ask`` for a pasted error or traceback: the fix first, then what search finds.

The answer is ``ask``'s usual one (results described as usual) with, added:
``error`` (the error line kept whole, the user's code lines, the calls in them), ``fix`` (what
to do, in words, with the release: the first line the faces show) and ``family``. The fix's
symbols come first in ``results``; the search for the rest is on the name or keyword the
error is about, else on the error line.
"""
from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from knowledge_base.qa import fixes
from knowledge_base.qa.answer import Answer
from knowledge_base.qa.pasted import Pasted

if TYPE_CHECKING:
    from knowledge_base.qa.answers import Answers


def templates() -> list:
    """Error messages known without their exception type (issue titles quote them so)."""
    return fixes.templates()


def answer(answers: "Answers", error: Pasted, version: str | None, limit: int) -> Answer:
    limit = max(1, min(int(limit), 50))
    fx = fixes.fix(answers.kb, error)
    query = fx.asked if fx is not None and fx.asked.startswith("tf.") else error.message
    base = answers.ask(query or error.line, version=version, limit=limit, errors=False)
    ord_ = answers.kb.ord_of(version) if version else None
    first = []
    for name in (fx.names if fx else []):
        sym = answers.kb.symbol(name)
        if sym is not None:
            d = answers.describe(sym, ord_)
            d.update(score=1.0, match="fix")
            first.append(d)
    seen = {d["name"] for d in first}
    rest = [d for d in base.results if d["name"] not in seen]
    out = replace(base, query=error.line, results=(first + rest)[:limit],
                  error={"type": error.error_type, "message": error.message, "line": error.line,
                         "user_code": error.user_code, "calls": error.calls()})
    if fx is not None:
        out.fix, out.family = fx.text, fx.family
    if fx is not None or out.results:
        # A fix is an answer: "no such symbol" no longer applies.
        out.match = out.message = out.releases = None
    return out
