"""Concept words (knowledge_base/qa/data/concepts.yaml): phrases people use for an operation
whose docstring says it differently ("dtype" -> tf.cast, "add a dimension" -> tf.expand_dims)."""
from __future__ import annotations

import functools
import re
from pathlib import Path

from knowledge_base.words import STOPWORDS

DATA = Path(__file__).parent / "data" / "concepts.yaml"
_WORD = re.compile(r"[a-z0-9]+")


@functools.lru_cache(maxsize=4)
def load(stem, path: Path = DATA) -> list[tuple[list[tuple[str, ...]], list[str]]]:
    """[(phrases as stems in order, meant names)]. Stop words are left out, as they are of
    questions."""
    from knowledge_base import yaml_data  # PyYAML: once, when prepared (QuestionIndex.prepared)
    out = []
    for item in yaml_data.load(path.read_text()) or []:
        phrases = [tuple(dict.fromkeys(stem(w) for w in _WORD.findall(str(p).lower())
                                       if w not in STOPWORDS))
                   for p in item["say"]]
        out.append(([p for p in phrases if p], list(item["mean"])))
    return out


@functools.lru_cache(maxsize=4)
def words(stem) -> frozenset[str]:
    """Every stem the phrases use. These are words a question may say that the KB's own texts
    lack ("unsqueeze", "detach"), so typo correction must leave them alone."""
    return frozenset(w for phrases, _ in load(stem) for p in phrases for w in p)


def meant(stems: set[str], stem, order: list[str] | None = None,
          table: list | None = None) -> list[tuple[str, int, int]]:
    """Names the question's words point at, for every concept one of whose phrases is wholly
    in the question, in the phrase's order when the question's word ``order`` is given
    ("batch normalization layer" says "batch normalization", not "layer normalization"):
    (name, its rank within the concept (0 first), words of the longest phrase matched).
    ``table``: :func:`load`'s table when the caller has it already (prepared beside the KB)."""
    out: list[tuple[str, int, int]] = []
    for phrases, names in load(stem) if table is None else table:
        longest = max((len(p) for p in phrases
                       if set(p) <= stems and (order is None or _in_order(p, order))), default=0)
        if longest:
            out += [(n, i, longest) for i, n in enumerate(names)]
    return out


def _in_order(phrase: tuple[str, ...], order: list[str]) -> bool:
    """The phrase's words appear in ``order`` one after another (other words between)."""
    it = iter(order)
    return all(w in it for w in phrase)
