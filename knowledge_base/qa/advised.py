"""An error message that says what to use instead.

Keras and TensorFlow messages often end with the way out: "use
`keras.layers.TFSMLayer(...)`", "Use `model.export(filepath)` if you want ...", "Please call
`optimizer.build(trainable_variables)`", "Use `add()` and `pop()`" (of the `Sequential` the
message is about). When no error family knows the message, the names such advice gives,
resolved to KB symbols, are the fix: the message's own words say what to do. Names are read as
the deprecation notices' reader reads them (``deprecation_refs.references``, quoted or
code-looking tokens only), spelt as imported (``keras.``, ``tensorflow.``), on a class
(``Model.predict``), on an instance (``model.export``: a member of the class that word names)
or bare (``add()``: a member of a class the message names).
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

from knowledge_base.deprecation_refs import FOREIGN, references
from knowledge_base.names import canonical_rank

if TYPE_CHECKING:
    from knowledge_base.store import KB

# A verb that gives advice, and what follows it to the end of its sentence. "The use of" is a
# noun; "To use X, install Y" (checked in code) says what X needs, not to use it.
_ADVICE = re.compile(r"(?<![Tt]he )(?<![.'\"`=_])\b(?:[Uu]se(?! of\b)|[Cc]all|[Pp]refer|[Ss]witch to|"
                     r"[Mm]igrate to|[Rr]eplace (?:it |this |them )?with|[Tt]ry)\b"
                     r"(?P<rest>.*?)(?:[.?!]\s|[.?!]?$)", re.S)
_PURPOSE = re.compile(r"(?:^|[.!?:]\s+)To\s*$")
# The word before "call"/"use" that makes it a noun: "on a non-first call to a function
# decorated with tf.function" describes what went wrong, it does not advise tf.function.
_NOUN_BEFORE = frozenset({"a", "an", "the", "this", "that", "each", "every", "any", "its", "their",
                          "your", "one", "first", "non-first", "second", "last", "next", "same",
                          "such", "no", "per", "previous", "later", "subsequent", "nested"})
_WORD_BEFORE = re.compile(r"([\w-]+)\s*$")
_CAPITAL = re.compile(r"\b[A-Z][A-Za-z0-9]*\b")
MAX_ADVISED = 3


def advised(kb: "KB", message: str, public_module) -> list[str]:
    """KB names the message advises using, in the order it says them (at most three): the
    first name each piece of advice resolves to. A name the message first says failed
    ("Calling `Model.predict` in graph mode is not supported ... call `Model.predict` with
    eager mode enabled") is what went wrong, not advice."""
    out: list[str] = []
    failed: set[str | None] | None = None
    context = _classes(kb, message)
    for m in _ADVICE.finditer(message):
        before = _WORD_BEFORE.search(message[:m.start()])
        if _PURPOSE.search(message[:m.start()]) or (
                before and before.group(1).lower() in _NOUN_BEFORE):
            continue
        if failed is None:
            failed = {_resolve(kb, t, public_module, context)
                      for t in references(message[:m.start()], words=False)}
        rest = m.group("rest")
        for token in references(rest, words=False):
            if "." not in token and not token[:1].isupper() and token + "(" not in rest:
                continue  # a bare lower-case word is code only when called: `shape` is an arg
            name = _resolve(kb, token, public_module, context)
            if name and name not in failed:
                if name not in out:
                    out.append(name)
                break
    return out[:MAX_ADVISED]


def _classes(kb: "KB", message: str) -> list[str]:
    """Public classes the message names by their short name (`Sequential`, Discretization)."""
    out = []
    for word in dict.fromkeys(_CAPITAL.findall(message)):
        rows = kb.db.execute("SELECT name FROM symbols WHERE short = ? AND kind = 'class' AND "
                             "removed_in IS NULL AND name NOT LIKE 'tf.compat.%'", (word,))
        out += sorted((r[0] for r in rows), key=canonical_rank)
    return out


def _resolve(kb: "KB", token: str, public_module, context: list[str]) -> str | None:
    parts = token.split(".")
    if parts[0] in FOREIGN or not parts[-1] or parts[-1].startswith("_"):
        return None
    if len(parts) > 1:
        spelt = "tf" + token[2:] if parts[0] == "tf" else None
        public = public_module(".".join(parts[:-1]))
        for full in (spelt, public and f"{public}.{parts[-1]}"):
            sym = kb.symbol(full) if full else None
            if sym is not None:
                return full if sym["kind"] != "module" else None
        if len(parts) == 2:
            return _member(kb, parts[0], parts[1]) or _in_context(kb, parts[1], context)
        return None
    # One word, called: a member of a class the message names (`add()` of Sequential); else a class
    # that is one public thing (`TFSMLayer`); never a guess between functions of that name.
    found = _in_context(kb, token, context)
    if found:
        return found
    rows = kb.db.execute("SELECT name, object FROM symbols WHERE short = ? AND removed_in IS "
                         "NULL AND kind = 'class' AND name NOT LIKE 'tf.compat.%'",
                         (token,)).fetchall()
    if rows and len({o or n for n, o in rows}) == 1:
        return min((n for n, _ in rows), key=canonical_rank)
    return None


def _in_context(kb: "KB", member: str, context: list[str]) -> str | None:
    for cls in context:
        name = f"{cls}.{member}"
        if kb.symbol(name) is not None:
            return name
    return None


def _member(kb: "KB", receiver: str, member: str) -> str | None:
    """``Model.predict`` -> tf.keras.Model.predict: a member of the class so named; an instance
    (``model.export``) means a class its word names."""
    rows = kb.db.execute("SELECT name FROM symbols WHERE short = ? AND kind IN ('method', "
                         "'property') AND removed_in IS NULL", (member,)).fetchall()
    cls = {n: n.rpartition(".")[0].rpartition(".")[2] for (n,) in rows}
    if receiver[:1].isupper():
        found = [n for n, c in cls.items() if c == receiver]
    else:
        found = [n for n, c in cls.items() if c.lower() == receiver] or [
            n for n, c in cls.items() if receiver in c.lower() and receiver != "self"]
    found = [n for n in found if ".compat." not in n] or found
    return min(found, key=canonical_rank) if found else None
