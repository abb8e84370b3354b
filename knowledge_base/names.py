"""How TensorFlow names are spelled and ranked: the words of a name (what the words index
holds for it) and which of an object's names tensorflow.org shows first. Shared by the KB's
write path and its readers; imports nothing of the KB."""
from __future__ import annotations

import functools
import re
from pathlib import Path

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def name_words(name: str) -> str:
    """'tf.keras.callbacks.EarlyStopping' -> 'keras callbacks early stopping earlystopping'."""
    parts = name.split(".")
    return " ".join(part_words(p) for p in (parts[1:] if parts[0] == "tf" else parts))


def part_words(part: str) -> str:
    pieces = [p for chunk in part.split("_") for p in _CAMEL.split(chunk) if p]
    words = [p.lower() for p in pieces]
    if len(pieces) > 1:
        words.append(part.replace("_", "").lower())
    spelled = _abbreviations()
    words += [spelled[w] for w in words if w in spelled]
    return " ".join(words)


@functools.lru_cache(maxsize=1)
def _abbreviations() -> dict[str, str]:
    """knowledge_base/data/abbreviations.yaml: inv -> inverse, det -> determinant..."""
    import yaml
    path = Path(__file__).parent / "data" / "abbreviations.yaml"
    return {str(k): str(v) for k, v in (yaml.safe_load(path.read_text()) or {}).items()}


# TF's root binds these to tf.keras submodules; tensorflow.org documents the tf.keras names.
KERAS_ALIAS_MODULES = ("tf.losses.", "tf.metrics.", "tf.optimizers.", "tf.initializers.")


def canonical_rank(name: str) -> tuple:
    """Sort key: the name tensorflow.org would show first for an object."""
    parts = name.split(".")
    return ("compat" in parts, "raw_ops" in parts, name.startswith(KERAS_ALIAS_MODULES),
            "experimental" in parts, len(parts), name)
