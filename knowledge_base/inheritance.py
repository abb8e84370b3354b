"""Inherited members, computed when the KB is built from the class hierarchy in the extract.

The extractor lists a TF2 class's members where they are defined: a member of a public base
class is listed under the base only (``tf.keras.layers.Layer.get_weights``, not again under
every layer and model), which keeps the extract small. TensorFlow's golden API files, and
``dir()`` in a live runtime, list every member a class has, inherited or not. So each TF2
class records ``bases``: the defining objects of the public classes it derives from, in
method resolution order, per release. :func:`expand` adds, release by release, the members
each class gets from them: ``P.m`` is the first base in that order whose public name lists
``m``, unless ``P`` lists ``m`` itself. An inherited member's span is the base member's
(kind, signature, defining object, deprecation): ``tf.keras.Model.get_weights`` in 2.16 is
defined by ``keras.src.layers.layer.Layer.get_weights``.

The shipped extract stays as written; only the KB built from it holds the expansion. A
member that moves from a class to its public base (Keras 3 moved ``Model.get_weights`` to
``Layer``) therefore continues, with its new definition, instead of being removed.
"""
from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from knowledge_base.names import canonical_rank
from knowledge_base.records import CONSTANT, METHOD, PROPERTY

if TYPE_CHECKING:  # the builder imports this module
    from knowledge_base.builder import Merged, Span

INHERITED_KINDS = (METHOD, PROPERTY, CONSTANT)
COMPAT = "tf.compat.v1."


def _at(spans: list["Span"], i: int) -> "Span | None":
    for s in spans:
        if s.first <= i <= s.last:
            return s
    return None


class _Index:
    """Lookups over the written (not yet expanded) spans."""

    def __init__(self, merged: "Merged") -> None:
        self.spans = merged.spans
        self.members: dict[str, list[str]] = {}   # TF2 class -> its own members' names
        self.classes_of: dict[str, list[str]] = {}  # defining object -> TF2 class names
        for name, runs in merged.spans.items():
            if name.startswith(COMPAT):
                continue
            parent = name.rpartition(".")[0]
            if any(s.kind in INHERITED_KINDS for s in runs):
                self.members.setdefault(parent, []).append(name)
            for s in runs:
                if s.kind == "class" and s.obj:
                    names = self.classes_of.setdefault(s.obj, [])
                    if name not in names:
                        names.append(name)
        self._own: dict[tuple[str, int], dict[str, tuple["Span", str]]] = {}

    def public_class(self, obj: str, i: int) -> str | None:
        """The TF2 name tensorflow.org shows for class object ``obj`` in release ``i``."""
        names = [n for n in self.classes_of.get(obj, ())
                 if (s := _at(self.spans[n], i)) is not None and s.obj == obj]
        return min(names, key=canonical_rank) if names else None

    def own(self, cls: str, i: int) -> dict[str, tuple["Span", str]]:
        """Member leaf -> (span, name) that ``cls`` itself lists in release ``i``."""
        key = (cls, i)
        if key not in self._own:
            out = {}
            for name in self.members.get(cls, ()):
                s = _at(self.spans[name], i)
                if s is not None and s.kind in INHERITED_KINDS:
                    out[name.rpartition(".")[2]] = (s, name)
            self._own[key] = out
        return self._own[key]


def inherited_at(index: _Index, cls: str, bases: tuple[str, ...], i: int
                 ) -> dict[str, tuple["Span", str]]:
    """Member leaf -> (span, defining member's name) that ``cls`` inherits in release ``i``."""
    own = index.own(cls, i)
    got: dict[str, tuple["Span", str]] = {}
    for obj in bases:
        base = index.public_class(obj, i)
        if base is None or base == cls:
            continue
        for leaf, found in index.own(base, i).items():
            if leaf not in own and leaf not in got:
                got[leaf] = found
    return got


def expand(merged: "Merged") -> "Merged":
    """A copy of ``merged`` whose TF2 classes also hold their inherited members (see the
    module docstring); ``merged`` itself is not changed."""
    index = _Index(merged)
    added: dict[str, list[tuple[int, "Span", str]]] = {}
    for name, runs in merged.spans.items():
        if name.startswith(COMPAT):
            continue
        for s in runs:
            if s.kind != "class" or not getattr(s, "bases", None):
                continue
            for i in range(s.first, s.last + 1):
                for leaf, (span, source) in inherited_at(index, name, s.bases, i).items():
                    added.setdefault(f"{name}.{leaf}", []).append((i, span, source))
    spans = dict(merged.spans)
    docs, lines, doc_runs = dict(merged.docs), dict(merged.lines), dict(merged.doc_runs)
    for name, entries in added.items():
        runs = [dataclasses.replace(s) for s in spans.get(name, [])]
        for i, span, _ in sorted(entries, key=lambda e: e[0]):
            runs.append(dataclasses.replace(span, first=i, last=i))
        runs.sort(key=lambda s: s.first)
        joined: list = []
        for r in runs:
            if joined and joined[-1].last == r.first - 1 and joined[-1].key() == r.key():
                joined[-1].last = r.last
            else:
                joined.append(r)
        spans[name] = joined
        newest_source = max(entries, key=lambda e: e[0])[2]
        if name not in docs and newest_source in merged.docs:
            docs[name] = merged.docs[newest_source]
        if name not in lines and newest_source in merged.lines:
            lines[name] = merged.lines[newest_source]
        doc_runs[name] = _inherited_docs(merged, name, entries)
    return dataclasses.replace(merged, spans=spans, docs=docs, lines=lines, doc_runs=doc_runs)


def _inherited_docs(merged: "Merged", name: str, entries) -> list[list]:
    """``name``'s docstring runs: its own, and in each release it inherits the member, the
    docstring the base's member had in that release."""
    at = {i: t for a, b, t in merged.doc_runs.get(name, ()) for i in range(a, b + 1)}
    for i, _, source in entries:
        text = next((t for a, b, t in merged.doc_runs.get(source, ()) if a <= i <= b),
                    merged.docs.get(source))
        if text:
            at.setdefault(i, text)
    runs: list[list] = []
    for i in sorted(at):
        if runs and runs[-1][1] == i - 1 and runs[-1][2] == at[i]:
            runs[-1][1] = i
        else:
            runs.append([i, i, at[i]])
    return runs
