"""The native TensorFlow 2 way for a TF1 symbol, as TensorFlow's own migration note says it.

Most ``tf.compat.v1`` docstrings carry a ``@compatibility(TF2)`` section that tells how to
migrate: "To switch to native TF2 style, use `tf.keras.optimizers.Adam` instead", "In TF2
this API is changed to [tf.random.set_seed]", "The corresponding TensorFlow v2 layer is
`tf.keras.layers.Conv2D`". The name a migration cue (use, switch, changed to, corresponding,
replace, instead) is followed by in its sentence is the TF2 way; names merely mentioned
("`tf.keras.optimizers.Optimizer` does not provide ...") are not. A note that only says to
rewrite the code (``Session``, ``placeholder`` without a cue name) gives none.
"""
from __future__ import annotations

import re
from typing import Callable, Iterator

_SECTION = re.compile(r"@?compatibility\(TF2\)(.*?)(?:@end_compatibility|#### |\nArgs:|\Z)",
                      re.S)
_CUE = re.compile(r"\b(?:use|using|switch(?:es)? to|changed to|corresponding|replaced? by|"
                  r"replace|instead of|equivalent|migrate to)\b", re.I)
_NAME = re.compile(r"\[?`?(tf\.[A-Za-z_][\w.]*[A-Za-z0-9_])`?\]?")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`\[])|\n\s*\n")


def section(doc: str | None) -> str:
    """The docstring's TF2 compatibility note, links left out ('' when it has none)."""
    m = _SECTION.search(doc or "")
    return re.sub(r"\(https?://[^)]*\)", "", m.group(1)) if m else ""


def _cued(note: str) -> Iterator[str]:
    """tf.* names that follow a migration cue within one sentence, in order."""
    for sentence in _SENTENCE_END.split(note):
        for cue in _CUE.finditer(sentence):
            rest = sentence[cue.end():]
            m = _NAME.search(rest)
            if m:
                yield m.group(1).rstrip(".")


def tf2_way(doc: str | None, own: str, present: Callable[[str], bool]) -> str | None:
    """The first name the note's cues point at that is not ``own``, not tf.compat and
    ``present`` (a public name of the newest release: the reader resolves it in the KB)."""
    for name in _cued(section(doc)):
        if name != own and not name.startswith("tf.compat.") and present(name):
            return name
    return None
