"""Which of a candidate's keywords a question says: "what does mask zero do in an embedding
layer" names ``mask_zero``, a keyword of ``tf.keras.layers.Embedding``; "class weight" names
``class_weight`` of ``Model.fit``. Users ask about an option far more often than they know the
callable that takes it, and the KB knows every callable's keywords (its signatures), so this
holds for any symbol, not for the ones some question set happened to ask about.

Read from the candidates' own signatures (one query per question), so it costs nothing for
symbols a question did not already bring up.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from knowledge_base.qa.index import QuestionIndex

# Keywords too generic to point at one callable: every op takes ``name``, every layer ``inputs``.
GENERIC = frozenset("""self cls x y name names input inputs args kwargs training mask dtype
    axis shape value values data tensor tensors fn func function input_shape outputs output
    verbose seed scope options config kind type""".split())
_PARAM = re.compile(r"[(,]\s*\*{0,2}([A-Za-z_]\w*)")
MIN_SINGLE = 6   # a one-word keyword shorter than this ("units", "rate") says too little


def keywords(signature: str | None) -> list[str]:
    """The keyword names of a signature, generic ones left out."""
    return [p for p in _PARAM.findall(signature or "") if p not in GENERIC]


def said(keyword: str, words: list[str], joined: set[str]) -> float:
    """1 when the question says a several-word keyword (its words in order, or written as
    code), 0.5 for a long single word, else 0."""
    parts = [p for p in keyword.lower().split("_") if p]
    if len(parts) > 1:
        if keyword.lower() in joined or "".join(parts) in joined:
            return 1.0
        n = len(parts)
        return 1.0 if any(words[i:i + n] == parts for i in range(len(words) - n + 1)) else 0.0
    return 0.5 if len(keyword) >= MIN_SINGLE and keyword.lower() in joined else 0.0


def question_words(q: str) -> tuple[list[str], set[str]]:
    """The question's words in order (code split at underscores), and its tokens as written."""
    tokens = [t.lower() for t in re.findall(r"[A-Za-z0-9_]+", q)]
    return [w for t in tokens for w in t.split("_") if w], set(tokens)


def said_keywords(ix: QuestionIndex, ids: list[int], q: str) -> dict[int, tuple[float, str]]:
    """Candidate -> (how clearly the question says one of its keywords, that keyword)."""
    if not ids:
        return {}
    words, joined = question_words(q)
    marks = ",".join("?" * len(ids))
    out: dict[int, tuple[float, str]] = {}
    for sid, sig in ix.lookup.db.execute(
            f"SELECT id, signature FROM symbols WHERE id IN ({marks})", ids):
        best = max(((said(k, words, joined), k) for k in keywords(sig)), default=(0.0, ""))
        if best[0] > 0:
            out[sid] = best
    return out


def features(ix: QuestionIndex, ids: list[int], q: str) -> dict[int, tuple[float, float]]:
    """Candidate -> (param_said, param_unique): how clearly the question says one of its
    keywords, and 1 / how many candidates take a keyword said as clearly (return_sequences
    is every recurrent layer's; mask_zero is Embedding's)."""
    found = said_keywords(ix, ids, q)
    share: dict[str, int] = {}
    for _, k in found.values():
        share[k] = share.get(k, 0) + 1
    return {sid: (v, 1.0 / share[k]) for sid, (v, k) in found.items()}
