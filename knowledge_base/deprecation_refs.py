"""What a deprecation notice says to use instead, read from its text in every spelling that
TensorFlow and Keras write one, and resolved against the KB's names.

Notices name the replacement as ``tf.x.y``, but far more often relative to the deprecated
symbol: ``Please use `layer.losses` instead.`` (a member of the same object), ``Please use
Model.fit, which supports generators.`` (a class and member, no ``tf.``), ``renamed to `run```,
``use run() instead``, ``Use outputs.`` (a bare member name), ``use
extended.colocate_vars_with()`` (a member of another object), ``Use `self.session()```.
A reference counts only when it resolves to a KB name other than the deprecated one; names from
other libraries (``np.argmax``, ``jax2tf.convert``) and links are never read as TensorFlow's.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterator

from knowledge_base.names import canonical_rank

_TF_NAME = re.compile(r"`?(tf\.[A-Za-z_][\w.]*[A-Za-z0-9_])`?")
_QUOTED = re.compile(r"`([^`]+)`")
_CHAIN = re.compile(r"(?<![\w.])[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")
# Outside quotes, a token reads as code when dotted, called or snake_case; a plain word only
# when the sentence says to use it ("Use outputs.", "rename to X").
_CODE = re.compile(r"(?<![\w.`])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+|[A-Za-z_]\w*(?=\(\))|"
                   r"[a-z]\w*_\w*)")
_USE_WORD = re.compile(r"\b(?:[Uu]se|[Pp]refer|[Rr]enamed? to)\s+([A-Za-z_]\w*)\b")
_URL = re.compile(r"\(?https?://\S+")
# Receivers that are other libraries, not a TensorFlow object.
FOREIGN = frozenset({"np", "numpy", "jnp", "jax", "jax2tf", "torch", "scipy", "pd", "pandas",
                     "math", "os", "sys", "keras_cv", "keras_nlp", "tfds", "tfp", "hub"})


@dataclass
class NameTable:
    """The KB's names with what the reader needs of each: the release it was last in and the
    object it names there (a member inherited from ``Layer`` names ``...Layer.losses``), and
    its kind."""
    last: dict[str, int]
    obj: dict[str, str | None]
    kind: dict[str, str]
    newest: int
    by_short: dict[str, list[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.by_short:
            for n in self.last:
                self.by_short.setdefault(n.rpartition(".")[2], []).append(n)

    def best(self, names: list[str], own: str) -> str | None:
        """Present in the newest release first, then closest to ``own``, then canonical."""
        def key(n: str):
            common = 0
            for a, b in zip(n.split("."), own.split(".")):
                if a != b:
                    break
                common += 1
            return (self.last[n] != self.newest, ".compat." in n, -common, canonical_rank(n))
        names = [n for n in names if n != own]
        return min(names, key=key) if names else None


def references(text: str, words: bool = True) -> Iterator[str]:
    """Dotted names the text may mean, in reading order: quoted code first (what the notice
    marks as code), then code-looking tokens and (``words``) "use X" words outside quotes."""
    text = _URL.sub(" ", text)
    for quoted in _QUOTED.findall(text):
        yield from _CHAIN.findall(quoted)
    plain = _QUOTED.sub(" ", text)
    found = [(m.start(), m.group(1)) for m in _CODE.finditer(plain)]
    if words:
        found += [(m.start(1), m.group(1)) for m in _USE_WORD.finditer(plain)]
    for _, _, token in sorted((pos, -len(t), t) for pos, t in found):  # longest first
        yield token


def resolve(token: str, own: str, names: NameTable) -> str | None:
    """The KB name ``token`` means, seen from the deprecated symbol ``own``."""
    parts = token.split(".")
    if parts[0] in FOREIGN or parts[-1] == own.rpartition(".")[2] and len(parts) == 1:
        return None
    if parts[0] == "tf":
        return _tf_name(token, own, names) if len(parts) > 1 else None
    member = parts[-1]
    same = names.by_short.get(member, ())
    home = own.rpartition(".")[0]  # own's class (a member) or module (a function, a class)
    if len(parts) == 1:
        return names.best([n for n in same if n.rpartition(".")[0] == home], own)
    suffix = "." + token
    spelled = [n for n in same if n.endswith(suffix)]
    if spelled:
        return names.best(spelled, own)
    receiver = parts[-2].lower()
    if len(parts) == 2 and receiver[:1].islower():
        # An instance: "self", or a word naming own's class or the class defining the member
        # (`layer.losses` on Model: Model.losses is Layer's).
        mine = f"{home}.{member}"
        defined = (names.obj.get(mine) or "").lower().split(".")
        if mine in names.last and mine != own and (
                receiver == "self" or receiver in home.rpartition(".")[2].lower()
                or receiver in defined):
            return mine
        # Another object's member (`extended.colocate_vars_with`: StrategyExtended's).
        # `layer.x` means Layer's own before FlaxLayer's.
        cls = {n: n.rpartition(".")[0].rpartition(".")[2].lower() for n in same}
        other = ([n for n in same if cls[n] == receiver]
                 or [n for n in same if receiver in cls[n]])
        return names.best(other, own)
    return None


def _tf_name(name: str, own: str, names: NameTable) -> str | None:
    """``tf.x``, or its TF1 home when a TF1 notice means the TF1 name (``Please use
    tf.global_variables`` on tf.compat.v1.all_variables); a module only when spelt as it is
    (``tf.layers layers no longer track their graph`` says what is gone, not what to use)."""
    if name in names.last:
        return name if name != own else None
    cand = "tf.compat.v1." + name[3:]
    ok = cand != own and cand in names.last and names.kind.get(cand) != "module"
    return cand if ok else None


def replacement(text: str, own: str, names: NameTable) -> str | None:
    """The first name a deprecation notice recommends, or None. A ``tf.*`` name, when the
    notice has one, wins: it is the notice's own full spelling."""
    for cand in _TF_NAME.findall(text or ""):
        found = _tf_name(cand.rstrip("."), own, names)
        if found:
            return found
    for token in references(text or ""):
        found = resolve(token, own, names)
        if found:
            return found
    return None
