"""A question about a named symbol's history ("when was fit_generator removed", "is
`tf.keras.layers.CuDNNLSTM` still available", "which version deprecated predict_classes") is
about that symbol: it answers first, its description saying when it came, went or was
deprecated and what replaces it, whatever else the words are near in meaning (the ranker
would put ``Model.fit`` first for the fit_generator question: near, but not what was asked).
A question that says it is gone or asks for its replacement ("what replaces
TimeseriesGenerator", "fit_generator is deprecated, what should I use") gets the KB's
replacement first, then the symbol.

The symbol must be written as code (dotted, snake_case, CamelCase, called) and resolve by name
(exact, alias, TF1 name, a class or member's short name), never by a guess at a typo.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

from knowledge_base.deprecation_refs import FOREIGN
from knowledge_base.qa import questions  # loaded already: only questions in words get here
from knowledge_base.search import Hit

if TYPE_CHECKING:
    from knowledge_base.qa.index import QuestionIndex

# Words that ask when, or whether still: the question is about the symbol's history. Only
# in that sense: "when I call fit", "still nan", "since the loss" are how-tos.
_WHEN = re.compile(
    r"\bwhen\s+(?:was|were|did|is|will|has|have|does)\b|"
    r"\bsince\s+(?:which|what|when|version|release|tf\b|tensorflow|keras|\d)|"
    r"\b(?:which|what)\s+(?:tf\s+|tensorflow\s+|keras\s+)?(?:version|release)|"
    r"\bstill\s+(?:available|exists?|supported|there|in\b|part|public)|\badded\s+in\b|"
    r"\b(?:introduced|disappeared)\b|\bgo\s+away\b|"
    r"^\W*(?:is|was|are|were|has|have|did)\b.*\b(?:deprecated|removed|dropped|gone|renamed)\b",
    re.I)
# Words that say it is gone, or ask what to use in its place: its replacement answers, when
# the KB knows one ("replace NaNs with zeros" is a how-to: not bare "replace"; "equivalent"
# asks for TensorFlow's version of another library's function).
_REPLACE = re.compile(
    r"\b(?:replaces|replaced|replacement|successor|migrat(?:e|ing|ion)|deprecated|removed|"
    r"dropped|no\s+longer|any\s?more|gone|what\s+(?:should|do|can)\s+I\s+use)\b", re.I)
# A name written as code, as the ranker reads one (questions.CODE), and one that opens with
# capitals (LSTMCell, GRUCell).
_CODE = re.compile(questions.CODE.pattern + r"|\b[A-Z]{2,}\w*[a-z]\w*\b")
BY_NAME = ("exact", "alias", "legacy", "inherited", "short", "suffix")


def first(index: "QuestionIndex", question: str) -> list[Hit]:
    """What answers first: the symbol a history question names; for a question that says it
    is gone or asks what replaces it, the KB's replacement and then it (nothing when the KB
    knows no replacement: the ranker's answers stand). [] when the question is about neither
    or names nothing the KB resolves by name."""
    when = _WHEN.search(question)
    if not when and not _REPLACE.search(question):
        return []
    for token in _CODE.findall(question):
        if token.split(".")[0] in FOREIGN:
            continue  # np.clip, torch.nn.X: another library's name, not a TF symbol's
        hit = index.resolve(token.rstrip("."))
        if hit is None or hit.how not in BY_NAME:
            continue
        named = Hit(hit.id, hit.name, 1.0, hit.how, hit.note)
        if when:
            return [named]
        row = index.lookup.db.execute("SELECT r.id, r.name FROM symbols s JOIN symbols r ON "
                                      "r.name = s.replacement WHERE s.id = ?", (hit.id,)).fetchone()
        if row is None:
            return []
        return [Hit(row[0], row[1], 1.0, "replacement", f"replaces {hit.name}"), named]
    return []
