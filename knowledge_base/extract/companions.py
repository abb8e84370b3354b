"""Where each public namespace of a release comes from, by TF minor version.

``tf.keras`` and ``tf.estimator`` are lazy-loaded by TensorFlow's root ``__init__``, so
their generated API roots are wired here as data. Wheels 2.6+ still carry a stale in-tree
Keras (``tensorflow/python/keras``, and in 2.6/2.7 a generated ``tensorflow/keras``); it is
never a source of ``tf.keras`` for those releases.
"""
from __future__ import annotations

import re
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

# tf.losses, tf.metrics, tf.optimizers, tf.initializers: TensorFlow's root __init__ binds them
# at import time to the matching tf.keras submodule (``setattr(_current_module, "losses",
# ...)``), in every 2.x release; the goldens list them. They are walked from the Keras root.
KERAS_ALIASES = ("losses", "metrics", "optimizers", "initializers")
_SETATTR_RE = re.compile(r"""setattr\(\s*_current_module\s*,\s*["'](\w+)["']""")


def keras_aliases(root_text: str) -> list[str]:
    """The Keras-backed alias modules a release's ``tensorflow/__init__.py`` sets up."""
    bound = set(_SETATTR_RE.findall(root_text or ""))
    return [n for n in KERAS_ALIASES if n in bound]

# Public paths only a companion may supply (the TF wheel's own copies are ignored).
COMPANION_PREFIXES = ("tf.keras", "tf.compat.v1.keras", "tf.estimator", "tf.compat.v1.estimator")

# What a wheel must contain to be the package we expect.
MARKERS = {
    "tf": "tensorflow/__init__.py",
    "keras": "keras/__init__.py",
    "estimator": "tensorflow_estimator/__init__.py",
    "tf_keras": "tf_keras/__init__.py",
    "tensorboard": "tensorboard/__init__.py",
}

# Namespaces whose TensorFlow files are completed by a companion's module when TensorFlow's
# root imports it: (public, companion module, marker text in tensorflow/__init__.py).
EXTENSIONS = (
    ("tf.summary", "tensorboard.summary._tf.summary", "from tensorboard.summary._tf import summary"),
)


def extensions(root_text: str) -> list[tuple[str, str]]:
    return [(public, module) for public, module, marker in EXTENSIONS if marker in (root_text or "")]


# Who supplies a public name, by the top package of its defining object: shown as
# "provided by" where that is not TensorFlow itself.
PROVIDERS = (
    ("tf_keras.", "tf_keras"),
    ("keras.", "keras"),
    ("tensorflow_estimator.", "tensorflow-estimator"),
    ("tensorboard.", "tensorboard"),
)


def provider_of(obj: str | None) -> str | None:
    for prefix, package in PROVIDERS:
        if obj and obj.startswith(prefix):
            return package
    return None


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


# tf.compat.v1 namespaces that TensorFlow's compat.v1 __init__ lazy-loads from a Keras
# package (keras 2.6-2.15, tf_keras from 2.16): used when that module string is in the file.
LAZY_V1 = (
    ("tf.compat.v1.layers", "keras.api._v1.keras.__internal__.legacy.layers"),
    ("tf.compat.v1.nn.rnn_cell", "keras.api._v1.keras.__internal__.legacy.rnn_cell"),
    ("tf.compat.v1.layers", "tf_keras.api._v1.keras.__internal__.legacy.layers"),
    ("tf.compat.v1.nn.rnn_cell", "tf_keras.api._v1.keras.__internal__.legacy.rnn_cell"),
    ("tf.compat.v1.keras", "tf_keras.api._v1.keras"),
)


def lazy_v1_roots(compat_v1_text: str) -> list[tuple[str, str]]:
    return [(public, module) for public, module in LAZY_V1 if f'"{module}"' in compat_v1_text]
