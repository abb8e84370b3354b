"""What ``ask`` answers (:class:`Answer`), typed: the faces read its fields, ``--json`` prints
:meth:`Answer.to_dict`."""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields
from typing import Any


@dataclass(eq=False)
class Answer(Mapping):
    """Fields in the order ``--json`` shows them; ``None`` is "not said" and left out.

    Read-only dict access (``answer["results"]``) is kept for code written against the JSON.
    """
    query: str
    version: str | None = None          # the release signatures are shown in (none: empty query)
    results: list[dict] = field(default_factory=list)
    legacy: dict | None = None          # what the upgrade tables say of a TF1 name
    absent: dict | None = None          # the symbol meant, not in the asked release
    warning: str | None = None          # question search by meaning is off
    unsure: str | None = None           # no answer stands out
    match: str | None = None            # "none": a dotted name no release holds
    releases: str | None = None         # the releases searched, with match "none"
    suggestions: list[str] | None = None
    message: str | None = None          # why there are no results
    error: dict | None = None           # a pasted error, read (error_answers)
    fix: str | None = None              # what to do about it
    family: str | None = None           # the fix's family of errors

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        if self.version is None and self.message is not None:
            # An empty question says its message before its (empty) suggestions.
            out = {"query": out.pop("query"), "results": out.pop("results"),
                   "message": out.pop("message"), **out}
        return {k: v for k, v in out.items() if v is not None}

    def __getitem__(self, key: str) -> Any:
        return self.to_dict()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.to_dict())

    def __len__(self) -> int:
        return len(self.to_dict())
