"""A symbol's history across releases, from the merged extract: added, removed (and where to),
signature changed, deprecated, unusable, definition moved. The builder stores these events."""
from __future__ import annotations

import functools
import json
from collections import Counter
from typing import TYPE_CHECKING, Callable

from knowledge_base.names import canonical_rank
from knowledge_base.records import METHOD, MODULE, PROPERTY, RAISES
from knowledge_base.signatures import describe_signature_change, signature_change

if TYPE_CHECKING:  # the builder imports this module
    from knowledge_base.builder import Merged, Span

MEMBER_KINDS = (METHOD, PROPERTY, "constant")
Progress = Callable[[str, int | None, int | None], None]


class Releases:
    """The merged extract's lookups across releases: which names an object has in a release
    (best first), which names are present in one, and which appeared there."""

    def __init__(self, m: Merged):
        self.m = m
        self.versions = [r.version for r in m.releases]
        self.newest = len(self.versions) - 1
        self.names = sorted(m.spans)
        self.ids = {n: i + 1 for i, n in enumerate(self.names)}
        self.kinds = {n: m.spans[n][-1].kind for n in self.names}
        # object -> [(name, first, last)] to find aliases and moves per release.
        self.by_obj: dict[str, list[tuple[str, int, int]]] = {}
        # release -> names whose (new) run starts there, for moves whose defining object
        # changed too.
        self.added_at: dict[tuple[int, str], list[tuple[str, Span]]] = {}
        for n in self.names:
            for s in m.spans[n]:
                if s.obj:
                    self.by_obj.setdefault(s.obj, []).append((n, s.first, s.last))
                self.added_at.setdefault((s.first, n.rsplit(".", 1)[-1]), []).append((n, s))
        self._present: dict[int, set[str]] = {}
        self.names_of = functools.lru_cache(maxsize=None)(self._names_of)

    def elsewhere(self, n: str, obj: str, ord_: int) -> bool:
        """Is member ``n`` inherited, i.e. not defined by the class it hangs off? A member's
        canonical name is under the class that defines it (Layer.get_weights, not
        Model.get_weights), whatever canonical_rank says of the two names."""
        parent, _, leaf = n.rpartition(".")
        span = next((s for s in self.m.spans.get(parent, ()) if s.first <= ord_ <= s.last), None)
        return span is None or span.kind != "class" or obj != f"{span.obj}.{leaf}"

    def _names_of(self, obj: str, ord_: int) -> list[str]:
        found = [n for n, a, b in self.by_obj.get(obj, ()) if a <= ord_ <= b]
        if len(found) < 2:
            return found
        return sorted(found, key=lambda n: (self.kinds[n] in MEMBER_KINDS
                                            and self.elsewhere(n, obj, ord_), canonical_rank(n)))

    def names_at(self, ord_: int) -> set[str]:
        if ord_ not in self._present:
            self._present[ord_] = {n for n in self.names
                                   if any(s.first <= ord_ <= s.last for s in self.m.spans[n])}
        return self._present[ord_]


class History:
    """Every symbol's events and spans, and where removed names moved to."""

    def __init__(self, r: Releases, progress: Progress | None = None):
        self.r = r
        self.present_in = [0] * len(r.versions)
        self.events: list[tuple] = []
        self.span_rows: list[tuple] = []
        self.moved_to: dict[str, tuple[str, int]] = {}  # old name -> (new name, release ord)
        self._modules_removed: list[tuple[str, int, int]] = []  # (name, symbol, ord)
        self._gone: Counter = Counter()  # (module, ord) -> its non-member names removed then
        for count, n in enumerate(r.names):
            if progress and count % 5000 == 0:
                progress("building KB: symbols", count, len(r.names))
            self._symbol(n)
        self._module_moves()
        # "moved from" on the receiving side, once all removals are known.
        for old, (new, o) in self.moved_to.items():
            if new in r.ids:
                self.events.append((r.ids[new], o, r.versions[o], "moved",
                                    f"`{old}` moved here", json.dumps({"from": old})))
        self.deprecated: dict[int, tuple[str, str]] = {}  # symbol -> (release, text) in force
        # symbol -> its last deprecation notice, in force or not: what to use instead of a
        # removed symbol (Model.apply: deprecated 2.2, unmarked 2.4, removed 2.9).
        self.last_notice: dict[int, str] = {}
        for e in self.events:
            if e[3] == "deprecated":
                self.deprecated[e[0]] = (e[2], e[4])
                self.last_notice[e[0]] = e[4]
            elif e[3] in ("undeprecated", "added"):
                self.deprecated.pop(e[0], None)

    def _module_moves(self) -> None:
        """A removed module moved where most of its contents went
        (keras.layers.experimental.preprocessing -> keras.layers, mixed_precision.experimental
        -> mixed_precision): the home of at least half of what it held when it went, else
        nowhere. Known only once every name's removal is."""
        homes: dict[tuple[str, int], Counter] = {}
        for old, (new, o) in self.moved_to.items():
            homes.setdefault((old.rpartition(".")[0], o), Counter())[new.rpartition(".")[0]] += 1
        at = {(e[0], e[1]): i for i, e in enumerate(self.events) if e[3] == "removed"}
        for name, sid, o in self._modules_removed:
            if not self._gone[(name, o)]:
                continue  # nothing went with it: an alias module, kept by its object
            target, count = (homes.get((name, o)) or Counter({"": 0})).most_common(1)[0]
            if 2 * count >= self._gone[(name, o)]:
                self.moved_to[name] = (target, o)
                event = ("removed", f"removed; moved to `{target}`", json.dumps({"to": target}))
            else:  # even a module of the same object: what it held did not go there
                self.moved_to.pop(name, None)
                event = ("removed", "removed", None)
            self.events[at[(sid, o)]] = (sid, o, self.r.versions[o]) + event

    def _symbol(self, n: str) -> None:
        r, events, versions = self.r, self.events, self.r.versions
        sid = r.ids[n]
        runs = r.m.spans[n]
        prev: Span | None = None
        for s in runs:
            self.span_rows.append((sid, s.first, s.last, s.kind, s.sig, s.obj, s.dep))
            for o in range(s.first, s.last + 1):
                self.present_in[o] += 1
            if prev is None or prev.last < s.first - 1:
                if prev is not None:  # it had gone and came back
                    events.append(self._removed(sid, prev, n))
                detail = ("in the oldest release in the KB" if s.first == 0 else "added")
                events.append((sid, s.first, versions[s.first], "added", detail, None))
            else:
                events += _changes(sid, prev, s, versions)
            if s.dep is not None and (prev is None or prev.last < s.first - 1):
                events.append(_deprecated(sid, s, versions))
            prev = s
        if runs[-1].last < r.newest:
            events.append(self._removed(sid, runs[-1], n))

    def _removed(self, sid: int, span: Span, name: str) -> tuple:
        r, moved_to = self.r, self.moved_to
        o = span.last + 1
        if span.kind == MODULE:
            self._modules_removed.append((name, sid, o))
        if span.kind not in (METHOD, PROPERTY):
            self._gone[(name.rpartition(".")[0], o)] += 1
        target = None
        if span.kind in (METHOD, PROPERTY):
            # A member moves only with its class; inherited members of a removed subclass are
            # still "the same object" as the base's, which is no move.
            parent, _, leaf = name.rpartition(".")
            moved_parent = moved_to.get(parent)
            if moved_parent and moved_parent[1] == o and \
                    f"{moved_parent[0]}.{leaf}" in r.names_at(o):
                target = f"{moved_parent[0]}.{leaf}"
        elif span.obj:
            # Same defining object still public under another name: it moved there. Or an
            # alias it had in its last release survives (even if the object was redefined).
            others = [x for x in r.names_of(span.obj, o) if x != name] or [
                x for x in r.names_of(span.obj, span.last) if x != name and x in r.names_at(o)]
            target = others[0] if others else None
        if target is None and span.kind not in (METHOD, PROPERTY):
            target = _same_short_name_added(name, span, o, r.added_at)
        if target:
            moved_to[name] = (target, o)
            return (sid, o, r.versions[o], "removed", f"removed; moved to `{target}`",
                    json.dumps({"to": target}))
        return (sid, o, r.versions[o], "removed", "removed", None)


def _changes(sid: int, prev: Span, s: Span, versions: list[str]) -> list[tuple]:
    """What changed from one release's span to the next's."""
    out = []
    if prev.sig != s.sig and (prev.sig or s.sig):
        c = signature_change(prev.sig, s.sig)
        out.append((sid, s.first, versions[s.first], "signature_changed",
                    describe_signature_change(c), json.dumps(c)))
    if s.dep is not None and (prev.dep is None or _dep_args(prev.dep) != _dep_args(s.dep)):
        out.append(_deprecated(sid, s, versions))
    elif prev.dep is not None and s.dep is None:
        out.append((sid, s.first, versions[s.first], "undeprecated",
                    "no longer marked deprecated", None))
    # A member's definition moving (keras.engine -> keras.src.engine, thousands of them per
    # Keras reshuffle) is its class's news, not its own.
    if prev.obj != s.obj and prev.obj and s.obj and s.kind not in MEMBER_KINDS:
        out.append((sid, s.first, versions[s.first], "definition_moved",
                    f"now defined in `{s.obj}` (was `{prev.obj}`)",
                    json.dumps({"from": prev.obj, "to": s.obj})))
    return out


def _dep_args(dep: str) -> list[str]:
    return json.loads(dep).get("args") or []


def _deprecated(sid: int, s: Span, versions: list[str]) -> tuple:
    d = json.loads(s.dep)
    text = d.get("instructions") or ""
    if d.get("how") == RAISES:  # a stub: the name resolves, using it raises
        return (sid, s.first, versions[s.first], "unusable",
                f"present but unusable: raises {text}".strip(), s.dep)
    if d.get("args"):  # only some arguments are deprecated, not the symbol
        text = f"arguments {', '.join(d['args'])} deprecated. {text}".strip()
        return (sid, s.first, versions[s.first], "arguments_deprecated", text, s.dep)
    return (sid, s.first, versions[s.first], "deprecated", text or "deprecated", s.dep)


def _same_short_name_added(name: str, span: Span, o: int,
                           added_at: dict[tuple[int, str], list[tuple[str, Span]]]) -> str | None:
    """A name with the same last part and kind that appeared in the same release under the same
    top-level namespace: the usual shape of a move out of ``experimental``."""
    short = name.rsplit(".", 1)[-1]
    top = ".".join(name.split(".")[:2])
    best = None
    for cand, s in added_at.get((o, short), ()):
        if cand.startswith(top + ".") and s.kind == span.kind and cand != name:
            if best is None or canonical_rank(cand) < canonical_rank(best):
                best = cand
    return best

