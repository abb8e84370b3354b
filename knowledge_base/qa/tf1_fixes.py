"""Fixes for TensorFlow 1 names and for names a public module never had.

Two invariants live here:
- An answer that sends the user to ``tf.compat.v1`` also names the native TensorFlow 2 way
  when TensorFlow's own migration note gives one (``tf2_notes.py``): AdamOptimizer ->
  tf.keras.optimizers.Adam, set_random_seed -> tf.random.set_seed.
- A public module (``tensorflow``, ``tensorflow.keras``) is never called internal code: a
  name it lacks is a TF1 name that tf.compat.v1 keeps, a name that lives in another public
  module (``tf.AdamOptimizer`` is tf.compat.v1.train.AdamOptimizer), or a misspelling.
"""
from __future__ import annotations

from collections import Counter

from knowledge_base import tf2_notes
from knowledge_base.names import canonical_rank
from knowledge_base.qa.fix_parts import MAX_NAMES, Fix, near_children
from knowledge_base.store import KB, like_prefix

COMPAT_V1 = "tf.compat.v1."


def tf2_way(kb: KB, name: str) -> str | None:
    """The TF2 name TensorFlow's migration note for ``name`` (a tf.compat.v1 symbol) gives."""
    sym = kb.symbol(name)
    if sym is None or not name.startswith(COMPAT_V1):
        return None

    def present(n: str) -> bool:
        s = kb.symbol(n)
        return s is not None and s["removed_in"] is None
    return tf2_notes.tf2_way(sym["doc"], name, present)


def tf1_fix(kb: KB, old: str, new: str, note: str = "", asked: str = "") -> Fix:
    """``old`` is TF1 API that TF2 keeps as ``new`` (a tf.compat.v1 name, or a TF2 one)."""
    text = f"Use `{new}`: `{old}` is TensorFlow 1 API, not in TensorFlow 2 (since 2.0)"
    if new.startswith(COMPAT_V1):
        text += "; tf.compat.v1 keeps TF1 behaviour, TF 2 code is eager (tf.function)"
    said, native = _native(kb, new)
    return Fix("", text + said + (f". {note}" if note else ""), [new, *native], asked or old)


def _native(kb: KB, name: str) -> tuple[str, list[str]]:
    """What to add to a fix that names ``name``: its native TF2 way, when there is one."""
    native = tf2_way(kb, name)
    if native is None:
        return "", []
    return f"; the native TF 2 way is `{native}` (TensorFlow's migration note)", [native]


def is_public_module(kb: KB, module: str) -> bool:
    """A module some release has as public API, or one tf.compat.v1 keeps from TF1."""
    for name in (module, _v1(module)):
        sym = kb.symbol(name) if name else None
        if sym is not None and sym["kind"] == "module":
            return True
    return False


def _v1(full: str) -> str | None:
    if full.startswith("tf.") and not full.startswith("tf.compat."):
        return COMPAT_V1 + full[3:]
    return None


def not_in_module(kb: KB, module: str, name: str, guessed: bool = False) -> Fix | None:
    """``module.name`` where ``module`` is public and no release has that name in it.
    ``guessed``: the message did not say the module (Python 2's "'module' object has no
    attribute"), so a spelling verdict about it would be a guess: None then."""
    full, span = f"{module}.{name}", f"{kb.versions[0]}–{kb.newest}"
    public = name.lstrip("_")
    if public != name and public:  # private: what its public namesake is
        found = _same_name_elsewhere(kb, public)
        if found:
            return Fix("", f"Use `{found[0]}`: `{full}` is private (a leading underscore) and "
                           f"in no TensorFlow release {span}; the public `{public}` is "
                           f"`{found[0]}`", found[:MAX_NAMES], full)
    v1 = _v1(full)
    sym = kb.symbol(v1) if v1 else None
    if sym is not None and sym["kind"] == "module":
        return _tf1_module(kb, full, v1)
    if sym is not None:
        return tf1_fix(kb, full, v1)
    elsewhere = _same_name_elsewhere(kb, name)
    if elsewhere:
        where = elsewhere[0]
        if kb.symbol(where)["kind"] == "module":  # keras.backend.tf: the backend's import
            return Fix("", f"Import `{where}` itself: `{full}` is in no TensorFlow release "
                           f"{span}; `{name}` is the module `{where}`", [where], full)
        text = f"Use `{where}`: `{full}` is in no TensorFlow release {span}; `{name}` is `{where}`"
        if where.startswith(COMPAT_V1):
            text += " (TensorFlow 1 API, kept in tf.compat.v1)"
        said, native = _native(kb, where)
        names = list(dict.fromkeys([where, *native, *elsewhere[1:]]))[:MAX_NAMES]
        return Fix("", text + said, names, full)
    near = [n for n, _ in near_children(kb, module, name, present_only=True)]
    if guessed and not near:
        return None
    if public != name:
        owner = "Keras" if module.startswith("tf.keras") else "TensorFlow"
        return Fix("", f"Use public API instead of `{name}`: it is private to {owner} (a "
                       f"leading underscore), not public API of `{module}` in any TensorFlow "
                       f"{span}; code that calls it was written for another version's "
                       f"internals, so update it or pin the versions it was written for",
                   near + [module], full)
    text = f"`{full}` is in no TensorFlow release {span}, and no public symbol is called `{name}`"
    if near:
        return Fix("", f"Check the spelling: {text}; did you mean `{near[0]}`?", near, full)
    return Fix("", f"Check the spelling: {text} (tfdesk ask {module} lists what it has)",
               [module], full)


def _tf1_module(kb: KB, full: str, v1: str) -> Fix:
    """A TF1 module (tf.python_io): where the upgrade tables send what it held."""
    rows = kb.db.execute("SELECT old, new FROM renames WHERE old LIKE ? ESCAPE '\\' AND new "
                         "IS NOT NULL", (like_prefix(full),)).fetchall()
    moved = [(o, n) for o, n in rows
             if not n.startswith("tf.compat.") and kb.symbol(n) is not None]
    if not moved:
        return tf1_fix(kb, full, v1)
    home, count = Counter(n.rpartition(".")[0] for _, n in moved).most_common(1)[0]
    # Moved only where at least half of what it held went (as events.History says of a
    # module): tf.layers kept its layers in tf.compat.v1.layers, not in tf.keras.layers.
    if 2 * count < len(rows):
        return tf1_fix(kb, full, v1)
    moved.sort(key=lambda m: (m[1].rpartition(".")[0] != home, canonical_rank(m[1])))
    shown = ", ".join(f"{o} → {n}" for o, n in moved[:3])
    names = [n for _, n in moved]
    if kb.symbol(home) is not None:
        names.insert(0, home)
    return Fix("", f"Import from `{home}`: `{full}` is TensorFlow 1 API, not in TensorFlow 2 "
                   f"(since 2.0); what it held moved: {shown}; `{v1}` keeps the TF1 module",
               list(dict.fromkeys(names))[:MAX_NAMES - 1] + [v1], full)


def _same_name_elsewhere(kb: KB, name: str) -> list[str]:
    """Classes and functions called ``name`` in any public module: present ones first, then
    the TF1 ones tf.compat.v1 keeps."""
    rows = kb.db.execute("SELECT name, removed_in FROM symbols WHERE short = ? AND kind IN "
                         "('class', 'function', 'module')", (name,)).fetchall()
    return [n for n, _ in sorted(rows, key=lambda r: (r[1] is not None,
                                                      r[0].startswith("tf.compat."),
                                                      canonical_rank(r[0])))]
