"""The question sets and their roles, as ``sets/manifest.yaml`` names them: the one list that
tools (fitting the ranker, writing the "asked before" book), benchmarks and tests read."""
from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import yaml

from knowledge_base.errors import KBError

DIR = Path(__file__).parent / "sets"
MANIFEST = DIR / "manifest.yaml"
ROLES = ("training", "tuned", "held-out", "book-only", "generated", "generated-held-out")
FITTED = ("training", "tuned")           # the ranker is fitted on these
IN_BOOK = ("training", "tuned", "book-only")  # the "asked before" book holds these
# "generated": made from the KB's own text (tools/generated_questions.py); neither fitted on nor in
# the book: fitting on it raised its own held-out side and lowered real users' questions (a
# template-worded set teaches templates). "generated-held-out" asks about symbols the generated
# set never does; neither side was fitted on, so it measures what a new symbol's question gets.


@dataclass(frozen=True)
class QuestionSet:
    file: str
    role: str
    about: str

    @property
    def path(self) -> Path:
        return DIR / self.file

    @property
    def fitted(self) -> bool:
        return self.role in FITTED

    @property
    def in_book(self) -> bool:
        return self.role in IN_BOOK

    def items(self) -> list[dict]:
        """``[{q, accept, ...}]`` as written."""
        return yaml.safe_load(self.path.read_text(encoding="utf-8")) or []


@functools.lru_cache(maxsize=4)
def manifest(path: Path = MANIFEST) -> tuple[QuestionSet, ...]:
    doc = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    out = []
    for entry in doc.get("sets") or []:
        if entry.get("role") not in ROLES:
            raise KBError(f"{path}: {entry.get('file')}: role must be one of {ROLES}, "
                          f"not {entry.get('role')!r}")
        out.append(QuestionSet(entry["file"], entry["role"], entry.get("about", "")))
    return tuple(out)


def sets(*roles: str) -> list[QuestionSet]:
    """The sets with one of ``roles`` (all without), in the manifest's order."""
    return [s for s in manifest() if not roles or s.role in roles]


def get(file: str) -> QuestionSet:
    found = [s for s in manifest() if s.file == file]
    if not found:
        raise KBError(f"no question set {file!r} in {MANIFEST}; the sets: "
                      f"{', '.join(s.file for s in manifest())}")
    return found[0]


def held_out() -> QuestionSet:
    (one,) = sets("held-out")
    return one


def sources() -> Path:
    """Real users' threads (URL, answer, set) that tools/real_questions.py splits."""
    return DIR / yaml.safe_load(MANIFEST.read_text(encoding="utf-8"))["sources"]
