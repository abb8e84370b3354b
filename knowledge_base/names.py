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
    from knowledge_base import yaml_data
    path = Path(__file__).parent / "data" / "abbreviations.yaml"
    return {str(k): str(v) for k, v in (yaml_data.load(path.read_text()) or {}).items()}


# TF's root binds these to tf.keras submodules; tensorflow.org documents the tf.keras names.
KERAS_ALIAS_MODULES = ("tf.losses.", "tf.metrics.", "tf.optimizers.", "tf.initializers.")


def canonical_rank(name: str) -> tuple:
    """Sort key: the name tensorflow.org would show first for an object."""
    parts = name.split(".")
    return ("compat" in parts, "raw_ops" in parts, name.startswith(KERAS_ALIAS_MODULES),
            "experimental" in parts, len(parts), name)


# -- how people write a name ------------------------------------------------------------------

MAX_QUERY = 300
_NAMEISH = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*\.?(\(\))?$")


def is_name(q: str) -> bool:
    """Written as a name (tf.nn.softmax, EarlyStopping, fit()), not in words."""
    return bool(_NAMEISH.match(q))


def wants_compat(q: str) -> bool:
    """The query asks for TF1 API (tf.compat..., a .v1. part)."""
    return "compat" in q or "v1" in q.split(".")


def clean_query(query: str) -> str:
    """Any input becomes a short, valid str: bad UTF-8 replaced, whitespace collapsed."""
    if isinstance(query, bytes):
        query = query.decode("utf-8", "replace")
    query = query.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    query = " ".join(query.split())[:MAX_QUERY]
    return query.strip("`'\" ")


def spellings(q: str) -> list[tuple[str, str]]:
    """The ways people write a TF name, each with a note when it is not literal."""
    out = [(q, "")]
    if q.startswith("tensorflow."):
        out.append(("tf." + q[len("tensorflow."):], ""))
    elif q.startswith("keras."):
        out.append(("tf." + q, ""))
    elif not q.startswith("tf.") and "." in q:
        out.append(("tf." + q, ""))
    if q.startswith("tf.contrib."):
        # tf.contrib left in TF 2.0; most of tf.contrib.X.Y lived on as tf.X.Y (or its
        # compat.v1 copy), so try that name when the upgrade tables do not know it.
        rest = q[len("tf.contrib."):]
        out.append(("tf." + rest, f"tf.contrib was removed in TF 2.0; closest: tf.{rest}"))
    for cand, _ in list(out):
        if cand.startswith("tf.compat.v2."):
            out.append(("tf." + cand[len("tf.compat.v2."):], "tf.compat.v2 mirrors tf"))
        if cand.startswith("tf.") and not cand.startswith("tf.compat."):
            out.append(("tf.compat.v1." + cand[3:], f"{cand} is TF1 API, kept as tf.compat.v1"))
    return out


# -- what a symbol is, whatever is asked ------------------------------------------------------

TRAITS = ("removed", "compat", "experimental", "keras_copy", "member", "dunder", "alias", "depth")


def traits(name: str, depth: int, last: int, newest: int, kind: str,
           alias: bool) -> tuple[float, ...]:
    """What a symbol is, independent of any question, in the order of TRAITS: the name prior
    (NAME_PRIOR) weighs this tuple, and the question ranker sees it as features. ``alias``:
    the symbol's canonical name is another one."""
    parts = name.split(".")
    return (float(last < newest), float("compat" in parts), float("experimental" in parts),
            float(name.startswith(("tf.keras.ops.", "tf.keras.backend.", "tf.keras.src."))),
            float(kind in ("method", "property")), float(parts[-1].startswith("__")),
            float(alias), float(depth))


# What the name prior makes of each of ``traits`` (in that order): not in the
# newest release, tf.compat, experimental, Keras' own copies of core ops (people mostly mean
# the tf.* op), member, operator method (__getitem__: listed, but below ordinary members),
# alias, depth. The question ranker learns what the same traits are worth.
NAME_PRIOR = (-0.4, -0.6, -0.25, -0.1, -0.15, -0.35, -0.15, -0.04)
RAW_OPS_PRIOR = -0.9


def name_prior(name: str, traits: tuple[float, ...]) -> float:
    p = sum(w * t for w, t in zip(NAME_PRIOR, traits))
    return p + (RAW_OPS_PRIOR if "raw_ops" in name.split(".") else 0.0)
