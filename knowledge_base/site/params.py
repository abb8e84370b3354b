"""Parameters read from a KB signature string (``(self, x, *, y=(1, 2), **kw)``).

The KB keeps each release's signature as text; the search index, the Args tables and the
release selector all need its parameter names (and defaults), read the same way here.
"""
from __future__ import annotations

from typing import NamedTuple

# Not parameters a caller passes.
IMPLICIT = frozenset({"self", "cls", "*", "/"})


class Param(NamedTuple):
    name: str            # without stars
    default: str | None  # as written, or None
    stars: str           # "", "*" or "**"


def split_params(signature: str | None) -> list[Param]:
    """Every parameter of ``signature`` in order (``self``, bare ``*`` and ``/`` left out)."""
    if not signature or not signature.startswith("("):
        return []
    depth, cur, out, quote = 0, [], [], None
    for ch in signature[1:signature.rfind(")")] + ",":
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            part = "".join(cur).strip()
            cur = []
            head, eq, default = part.partition("=")
            name = head.split(":", 1)[0].strip()
            stars = name[:len(name) - len(name.lstrip("*"))]
            name = name.lstrip("*")
            if name and name not in IMPLICIT and name.isidentifier():
                out.append(Param(name, default.strip() if eq else None, stars))
            continue
        cur.append(ch)
    return out


def param_names(signature: str | None) -> list[str]:
    """Names a caller can pass by keyword (``*args`` and ``**kwargs`` left out)."""
    return [p.name for p in split_params(signature) if not p.stars]
