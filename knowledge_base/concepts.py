"""Concept words (knowledge_base/data/concepts.yaml): phrases people use for an operation
whose docstring says it differently ("dtype" -> tf.cast, "add a dimension" -> tf.expand_dims)."""
from __future__ import annotations

import functools
import re
from pathlib import Path

import yaml

DATA = Path(__file__).parent / "data" / "concepts.yaml"
_WORD = re.compile(r"[a-z0-9]+")


@functools.lru_cache(maxsize=4)
def load(stem, path: Path = DATA) -> list[tuple[list[frozenset[str]], list[str]]]:
    """[(phrases as sets of stems, meant names)]. Stop words are left out, as they are of
    questions."""
    from knowledge_base.search import STOPWORDS  # the searcher imports this module
    out = []
    for item in yaml.safe_load(path.read_text()) or []:
        phrases = [frozenset(stem(w) for w in _WORD.findall(str(p).lower()) if w not in STOPWORDS)
                   for p in item["say"]]
        out.append(([p for p in phrases if p], list(item["mean"])))
    return out


@functools.lru_cache(maxsize=4)
def words(stem) -> frozenset[str]:
    """Every stem the phrases use. These are words a question may say that the KB's own texts
    lack ("unsqueeze", "detach"), so typo correction must leave them alone."""
    return frozenset(w for phrases, _ in load(stem) for p in phrases for w in p)


def meant(stems: set[str], stem) -> list[tuple[str, int]]:
    """Names the question's words point at, with the rank of each within its concept (0 first),
    for every concept one of whose phrases is wholly in the question."""
    out: list[tuple[str, int]] = []
    for phrases, names in load(stem):
        if any(p <= stems for p in phrases):
            out += [(n, i) for i, n in enumerate(names)]
    return out
