"""The stemmed words of a text: what the KB's words index stores for a symbol and what a
question's words are compared with (both sides stem with the same Porter stemmer)."""
from __future__ import annotations

import functools
import re

import snowballstemmer

_TERM = re.compile(r"[A-Za-z0-9]+")
# Words of a question that say nothing about which symbol is meant.
STOPWORDS = frozenset("""a an the to of in on for with without by from and or is are be how do does
i my me we you your can what which when where why it its this that as at into using use via
want need make get tf tensorflow keras please""".split())
stem = functools.lru_cache(maxsize=65536)(snowballstemmer.stemmer("porter").stemWord)


def terms_of(text: str) -> str:
    """Porter stems of the words of ``text`` (each once)."""
    return " ".join(dict.fromkeys(stem(w.lower()) for w in _TERM.findall(text)))
