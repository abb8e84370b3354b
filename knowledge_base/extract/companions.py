"""Where each public namespace of a release comes from, by TF minor version.

``tf.keras`` and ``tf.estimator`` are lazy-loaded by TensorFlow's root ``__init__``, so
their generated API roots are wired here as data. Wheels 2.6+ still carry a stale in-tree
Keras (``tensorflow/python/keras``, and in 2.6/2.7 a generated ``tensorflow/keras``); it is
never a source of ``tf.keras`` for those releases.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Root:
    public: str       # "tf.keras"
    module: str       # generated API package: "keras.api._v2.keras"
    wheel: str        # which wheel holds it: "tf", "keras", "estimator"


# (first minor, last minor, roots); None = open-ended.
KERAS_ROOTS: list[tuple[int, int | None, str, tuple[Root, ...]]] = [
    (2, 5, "tensorflow (in-tree)", (
        Root("tf.keras", "tensorflow.python.keras.api._v2.keras", "tf"),
        Root("tf.compat.v1.keras", "tensorflow.python.keras.api._v1.keras", "tf"))),
    (6, 15, "keras 2 wheel", (
        Root("tf.keras", "keras.api._v2.keras", "keras"),
        Root("tf.compat.v1.keras", "keras.api._v1.keras", "keras"))),
    # Keras 3 has no TF1 flavour: tf.compat.v1.keras does not load with it.
    (16, None, "keras 3 wheel", (
        Root("tf.keras", "keras._tf_keras.keras", "keras"),)),
]

ESTIMATOR_ROOTS: list[tuple[int, int | None, tuple[Root, ...]]] = [
    (2, 15, (
        Root("tf.estimator", "tensorflow_estimator._api.v2.estimator", "estimator"),
        Root("tf.compat.v1.estimator", "tensorflow_estimator._api.v1.estimator", "estimator"))),
]

TF_ROOT = Root("tf", "tensorflow", "tf")

# Public paths only a companion may supply (the TF wheel's own copies are ignored).
COMPANION_PREFIXES = ("tf.keras", "tf.compat.v1.keras", "tf.estimator", "tf.compat.v1.estimator")

# What a wheel must contain to be the package we expect.
MARKERS = {
    "tf": "tensorflow/__init__.py",
    "keras": "keras/__init__.py",
    "estimator": "tensorflow_estimator/__init__.py",
}


def _in(minor: int, first: int, last: int | None) -> bool:
    return first <= minor and (last is None or minor <= last)


def keras_plan(minor: int) -> tuple[str | None, tuple[Root, ...]]:
    for first, last, source, roots in KERAS_ROOTS:
        if _in(minor, first, last):
            return source, roots
    return None, ()


def estimator_roots(minor: int) -> tuple[Root, ...]:
    for first, last, roots in ESTIMATOR_ROOTS:
        if _in(minor, first, last):
            return roots
    return ()


def owned_by_companion(public: str) -> bool:
    return any(public == p or public.startswith(p + ".") for p in COMPANION_PREFIXES)
