"""A parameter's history, from the KB's own spans: in which releases a callable took a keyword,
when it stopped, and what replaces it.

Three sources, all in the KB: the signature of each run of releases (``lr`` gone from the
signature: removed), argument deprecations (``deprecated_args`` decorators, and the
messages Keras writes in code: "The `lr` argument is deprecated, use `learning_rate`
instead"), and the parameter that took the removed one's place in the same release.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache

from knowledge_base.signatures import parse_params
from knowledge_base.store import KB

_USE = re.compile(r"\b[Uu]se\s+(?:`|the\s+)?`?(\w+)`?")


@dataclass
class ParamHistory:
    symbol: str                      # tf.keras.optimizers.Adam
    keyword: str                     # lr
    took: str                        # releases in which it was a parameter ('' if never)
    deprecated: str | None           # the deprecation message, newest
    deprecated_in: str | None
    gone_in: str | None              # first release, after one that took it, that did not
    replacement: str | None          # learning_rate
    accepts_now: bool                # the newest release takes it (a parameter, or deprecated)

    @property
    def relevant(self) -> bool:
        return bool(self.took or self.deprecated)


def _names(sig: str | None) -> list[str] | None:
    params = parse_params(sig)
    return None if params is None else [n for n, kind, _ in params]


def _var_kw(sig: str | None) -> bool:
    return any(kind == "var_keyword" for _, kind, _ in parse_params(sig) or [])


def history(kb: KB, name: str, keyword: str) -> ParamHistory | None:
    sym = kb.symbol(name)
    if sym is None:
        return None
    spans = kb.spans(sym["id"])
    v = kb.versions
    took: list[int] = []
    dep_text, dep_in, gone, repl = None, None, None, None
    seen_kw = False
    for s in spans:
        names = _names(s["signature"]) or []
        dep = json.loads(s["deprecation"]) if s["deprecation"] else {}
        has = keyword in names
        deprecates = keyword in (dep.get("args") or [])
        if has:
            took += range(s["first_ord"], s["last_ord"] + 1)
        if deprecates:
            dep_text = dep.get("instructions") or dep_text
            dep_in = dep_in or v[s["first_ord"]]
        if has or deprecates:
            seen_kw = True
        elif seen_kw and gone is None:  # the first release that stopped taking it
            gone = v[s["first_ord"]]
            prev = next((p for p in reversed(spans) if p["last_ord"] < s["first_ord"]), None)
            repl = repl or _took_its_place(prev["signature"] if prev else None, s["signature"],
                                           keyword)
    if seen_kw and gone is None and spans[-1]["last_ord"] < len(v) - 1:
        gone = None  # the symbol itself went; its removal is its own history
    if dep_text:
        dep_text = _about(dep_text, keyword)
        m = _USE.search(dep_text.split(keyword, 1)[-1])
        if m and m.group(1) != keyword:
            repl = m.group(1)
    last = spans[-1]
    last_dep = json.loads(last["deprecation"]) if last["deprecation"] else {}
    accepts = last["last_ord"] == len(v) - 1 and (
        keyword in (_names(last["signature"]) or []) or keyword in (last_dep.get("args") or []))
    ranges = _ranges(v, took)
    return ParamHistory(name, keyword, ranges, dep_text, dep_in, gone, repl, accepts)


def _about(text: str, keyword: str) -> str:
    """The sentences of a deprecation text that speak of ``keyword`` (a docstring can be the
    text: only its lines about the argument matter), with the one after each."""
    sentences = re.split(r"(?<=[.!?])\s+|\n\s*\n", " ".join(text.split()))
    keep: list[str] = []
    for i, sent in enumerate(sentences):
        if re.search(rf"`?\b{re.escape(keyword)}\b`?", sent):
            keep += [x for x in sentences[i:i + 2] if x not in keep]
    return " ".join(keep)[:400] or text[:400]


def _took_its_place(old_sig: str | None, new_sig: str | None, keyword: str) -> str | None:
    """The new parameter at the removed one's position, when exactly one came and one went."""
    old, new = _names(old_sig) or [], _names(new_sig) or []
    went = [n for n in old if n not in new]
    came = [n for n in new if n not in old]
    if went == [keyword] and len(came) == 1 and old.index(keyword) == new.index(came[0]) \
            and _similar(keyword, came[0]):
        return came[0]
    return None


def _similar(a: str, b: str) -> bool:
    """lr / learning_rate, input_dim / input_shape: an abbreviation or a shared word."""
    wa, wb = a.lower().split("_"), b.lower().split("_")
    initials = lambda w: "".join(x[:1] for x in w)  # noqa: E731
    return bool(set(wa) & set(wb)) or a == initials(wb) or b == initials(wa)


def _ranges(v: list[str], ords: list[int]) -> str:
    out: list[list[int]] = []
    for o in sorted(set(ords)):
        if out and o == out[-1][1] + 1:
            out[-1][1] = o
        else:
            out.append([o, o])
    return ", ".join(v[a] if a == b else f"{v[a]}–{v[b]}" for a, b in out)


# Parameter names in a rendered signature "(a, b=1, *args, c=None, **kwargs)"; a default's
# text can fake one, which history() (a real parse) then finds absent.
_PARAM = re.compile(r"(?:^\(|, )\*{0,2}([A-Za-z_]\w*)(?=[=,)])")


@lru_cache(maxsize=4)
def _keyword_index(kb: KB) -> dict[str, list[int]]:
    """keyword -> ids of symbols whose history mentions it (a parameter or a deprecated
    argument in some release). Built once per KB, on the first keyword error."""
    index: dict[str, set[int]] = {}
    for sid, sig, dep in kb.db.execute("SELECT symbol_id, signature, deprecation FROM spans "
                                       "WHERE signature IS NOT NULL OR deprecation IS NOT NULL"):
        for n in _PARAM.findall(sig or ""):
            index.setdefault(n, set()).add(sid)
        if dep and '"args"' in dep:
            for a in json.loads(dep).get("args") or []:
                index.setdefault(a, set()).add(sid)
    return {k: sorted(s) for k, s in index.items()}


def keyword_ids(kb: KB, keyword: str) -> list[int]:
    return _keyword_index(kb).get(keyword, [])


def symbols_with(kb: KB, keyword: str) -> list[str]:
    """Names of the symbols whose history has ``keyword`` and that no longer take it."""
    ids = _keyword_index(kb).get(keyword, [])
    if not ids:
        return []
    marks = ",".join("?" * len(ids))
    return [r[0] for r in kb.db.execute(f"SELECT name FROM symbols WHERE id IN ({marks})", ids)]
