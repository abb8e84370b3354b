"""Signatures as the KB stores them ('(a, b=1, *args, c=None, **kw)'): parsing, and what
changed between two of them."""
from __future__ import annotations

import ast


def parse_params(sig: str | None) -> list[tuple[str, str, str | None]] | None:
    """'(a, b=1, *args, c=None, **kw)' -> [(name, kind, default)]; None if unparseable."""
    if sig is None:
        return None
    try:
        fn = ast.parse(f"def f{sig}: pass").body[0]
    except SyntaxError:
        return None
    a = fn.args
    out: list[tuple[str, str, str | None]] = []
    positional = a.posonlyargs + a.args
    defaults = [None] * (len(positional) - len(a.defaults)) + [ast.unparse(d) for d in a.defaults]
    for i, p in enumerate(positional):
        out.append((p.arg, "positional_only" if i < len(a.posonlyargs) else "positional_or_keyword",
                    defaults[i]))
    if a.vararg:
        out.append((a.vararg.arg, "var_positional", None))
    for p, d in zip(a.kwonlyargs, a.kw_defaults):
        out.append((p.arg, "keyword_only", ast.unparse(d) if d is not None else None))
    if a.kwarg:
        out.append((a.kwarg.arg, "var_keyword", None))
    return out


def signature_change(old: str | None, new: str | None) -> dict:
    """What changed between two signatures: added, removed, renamed, default changes."""
    po, pn = parse_params(old), parse_params(new)
    if po is None or pn is None:
        return {"from": old, "to": new}
    on = {p[0]: p for p in po}
    nn = {p[0]: p for p in pn}
    added = [p[0] for p in pn if p[0] not in on]
    removed = [p[0] for p in po if p[0] not in nn]
    renamed = []
    # A parameter that vanished where a new one appeared at the same position is a rename.
    for i, p in enumerate(po):
        if p[0] in removed and i < len(pn) and pn[i][0] in added:
            renamed.append([p[0], pn[i][0]])
    for a_, b_ in renamed:
        removed.remove(a_)
        added.remove(b_)
    defaults = [[n, on[n][2], nn[n][2]] for n in on if n in nn and on[n][2] != nn[n][2]]
    out = {"from": old, "to": new}
    for k, v in (("added", added), ("removed", removed), ("renamed", renamed),
                 ("defaults", defaults)):
        if v:
            out[k] = v
    return out


def describe_signature_change(c: dict) -> str:
    parts = []
    if c.get("added"):
        parts.append("added " + ", ".join(f"`{a}`" for a in c["added"]))
    if c.get("removed"):
        parts.append("removed " + ", ".join(f"`{a}`" for a in c["removed"]))
    if c.get("renamed"):
        parts.append("renamed " + ", ".join(f"`{a}` → `{b}`" for a, b in c["renamed"]))
    if c.get("defaults"):
        parts.append("default of " + ", ".join(f"`{n}` {a} → {b}" for n, a, b in c["defaults"]))
    return "signature changed: " + ("; ".join(parts) if parts else
                                    f"{c.get('from')} → {c.get('to')}")
