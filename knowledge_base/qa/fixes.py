"""The fix for a pasted error, from the KB's own history.

The error line is matched against the families in ``data/error_families.yaml`` (rules as
data); each family is answered from what the KB knows: a name's removal, move, rename or
TF1 home, a module's contents now, a removed method's documented replacement, a parameter's
history. The answer's first line says what to do, in words, with the release.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from knowledge_base.names import canonical_rank
from knowledge_base.qa.fix_parts import MAX_NAMES, Fix, keras_note as _keras_note, near_children
from knowledge_base.qa.fix_parts import popularity as _popularity
from knowledge_base.qa import tf1_fixes
from knowledge_base.qa.keyword_fixes import keyword_fix
from knowledge_base.qa.pasted import Pasted, straight
from knowledge_base.store import KB, like_prefix

RULES = Path(__file__).parent / "data" / "error_families.yaml"


@dataclass
class Family:
    id: str
    pattern: re.Pattern
    answer: str
    text: str = ""
    names: tuple[str, ...] = ()
    keras: int | None = None


@lru_cache(maxsize=1)
def rules() -> tuple[list[Family], dict[str, str], list[tuple[str, str]]]:
    from knowledge_base import yaml_data
    d = yaml_data.load(RULES.read_text())
    fams = [Family(f["id"], re.compile(f["pattern"]), f["answer"], f.get("text", ""),
                   tuple(f.get("names", ())), f.get("keras")) for f in d["families"]]
    modules = sorted(d["modules"].items(), key=lambda kv: -len(kv[0]))
    return fams, dict(d["types"]), modules


def templates() -> list[re.Pattern]:
    """The messages the families know, read in a line that lacks its exception type."""
    return [f.pattern for f in rules()[0]]


def public_module(module: str) -> str | None:
    """'tensorflow.keras.layers' -> 'tf.keras.layers'; None for a module path tfdesk cannot
    map to a public name (keras.src.engine, a third-party package)."""
    for prefix, public in rules()[2]:
        if module == prefix or module.startswith(prefix + "."):
            rest = module[len(prefix):]
            if ".src." in module or "._" in rest:
                return None
            return public + rest
    return None


def fix(kb: KB, pasted: Pasted) -> Fix | None:
    families, _, _ = rules()
    for fam in families:
        m = fam.pattern.search(straight(pasted.message)) or fam.pattern.search(
            straight(pasted.line))
        if not m:
            continue
        g = {k: v for k, v in m.groupdict().items() if v}
        if fam.answer == "fixed":
            return Fix(fam.id, fam.text, [n for n in fam.names if kb.symbol(n)])
        found = None
        if fam.answer in ("name", "module"):
            found = _deeper_fix(kb, g.get("module"), g.get("name"), pasted) or (
                _name_fix(kb, g.get("module"), g["name"], pasted) if fam.answer == "name"
                else _module_fix(kb, g["module"]))
        elif fam.answer == "member":
            found = _member_fix(kb, g["type"], g["name"])
        elif fam.answer == "keyword":
            found = keyword_fix(kb, g["keyword"], g.get("callable"), pasted, fam.keras)
        if found is not None:
            found.family = fam.id
            return found
        break
    return _advice(kb, pasted)


def _advice(kb: KB, pasted: Pasted) -> Fix | None:
    """No family answers: the message's own advice, when it names public symbols."""
    from knowledge_base.qa.advised import advised
    names = advised(kb, straight(pasted.message), public_module)
    if not names:
        return None
    sym = kb.symbol(names[0])
    return Fix("advised", f"Use `{names[0]}` (TensorFlow {kb.availability(sym)}), as the error "
                          f"itself advises", names, names[0])


# -- names and modules -------------------------------------------------------------------------

def _last_deprecation(kb: KB, sym: dict) -> str | None:
    for e in reversed(kb.events(sym["id"])):
        if e["kind"] == "deprecated" and e["detail"] and e["detail"] != "deprecated":
            return e["detail"]
    return None


def _about(kb: KB, full: str) -> Fix | None:
    """What to do about ``full``, a public name the user's TensorFlow lacks."""
    sym = kb.symbol(full)
    v = kb.versions
    if sym is not None:
        removed = sym["removed_in"]
        unusable = kb.unusable(sym)
        if removed is None and unusable:
            since = next((e["release"] for e in kb.events(sym["id"]) if e["kind"] == "unusable"),
                         sym["first"])
            return Fix("", f"`{full}` is present but unusable since TensorFlow {since}"
                           f"{_keras_note(kb, sym, since)}: it raises {unusable}", [full], full)
        repl = sym["replacement"]
        if removed is None and repl and sym["deprecated_in"]:
            # Present, but the error says this TensorFlow lacks it: its documented
            # replacement works in both.
            return Fix("", f"Use `{repl}`: `{full}` is deprecated since TensorFlow "
                           f"{sym['deprecated_in']} (present in {kb.availability(sym)})"
                           f"{_gone_too(kb, repl)}", [repl, full], full)
        if removed is None:
            if sym["first"] != kb.versions[0]:
                return Fix("", f"Use TensorFlow {sym['first']} or later (print tf.__version__): "
                               f"`{full}` exists in TensorFlow {kb.availability(sym)}", [full], full)
            # In every release, yet the user's import fails: a standalone Keras whose layout
            # differs; the object's other public name is the import that works there.
            other = _other_name(kb, sym, full)
            check = (f"check which TensorFlow runs your code (print tf.__version__): `{full}` "
                     f"exists in TensorFlow {kb.availability(sym)}")
            if other:
                return Fix("", f"Import it as `{other[0]}` (TensorFlow {other[1]}) or {check}",
                           [other[0], full], full)
            return Fix("", check[0].upper() + check[1:], [full], full)
        keras = _keras_note(kb, sym, removed)
        dep = _last_deprecation(kb, sym)
        moved = _members_moved(kb, full, kb.ord_of(removed))
        home = _moved_home(kb, sym) if moved and sym["kind"] == "module" else None
        if home:
            # Where its contents went says more than a module of a like name
            # (layers.experimental.preprocessing -> layers.*, not tf.keras.preprocessing).
            moved.sort(key=lambda m: m[1].rpartition(".")[0] != home)  # stable: rank kept
            shown = ", ".join(f"{a} → {b}" for a, b in moved[:3])
            return Fix("", f"Import from `{home}`: `{full}` was removed in TensorFlow {removed}"
                           f"{keras}; what it held moved: {shown}",
                       [home] + [b for _, b in moved][:MAX_NAMES - 1] + [full], full)
        if repl:
            text = f"Use `{repl}`: `{full}` was removed in TensorFlow {removed}{keras}" + (
                f". {' '.join(dep.split())}" if dep else "")
            gone = _gone_too(kb, repl)
            return Fix("", text.rstrip(".") + gone if gone else text, [repl, full], full)
        if moved:
            shown = ", ".join(f"{a} → {b}" for a, b in moved[:3])
            return Fix("", f"`{full}` was removed in TensorFlow {removed}{keras}; what it held "
                           f"moved: {shown}", [b for _, b in moved][:MAX_NAMES] + [full], full)
        if dep:
            dep = " ".join(dep.split())
            said = _mentioned(kb, dep, full.rpartition(".")[0])
            head = f"Use `{said[0]}` instead: " if said else ""
            return Fix("", f"{head}`{full}` was removed in TensorFlow {removed}{keras}; its "
                           f"deprecation said: {dep}", said + [full], full)
        # A module moved only where its contents went (events.History), never by its name.
        same = _same_short(kb, full) if sym["kind"] != "module" else []
        if same:
            return Fix("", f"Use `{same[0]}`: `{full}` was removed in TensorFlow {removed}"
                           f"{keras}; `{full.rpartition('.')[2]}` is now there",
                       same + [full], full)
        return Fix("", f"Pin TensorFlow {sym['last']} or rewrite without `{full}`: it was "
                       f"removed in TensorFlow {removed}{keras} (it was in "
                       f"{kb.availability(sym)}) and nothing in the KB replaces it", [full], full)
    renamed = _renamed(kb, full)
    if renamed is not None:
        old, new, note = renamed
        if new:
            return tf1_fixes.tf1_fix(kb, old, new, note, asked=full)
        return Fix("", f"`{old}` is gone since TensorFlow 2.0: {note}".rstrip(": "),
                   _mentioned(kb, note), full)
    return None


def _moved_home(kb: KB, sym: dict) -> str | None:
    """Where a removed module moved, as the KB's history says (events.History: where at
    least half of what it held went); None when its contents scattered."""
    for e in reversed(kb.events(sym["id"])):
        if e["kind"] == "removed":
            return e["data"].get("to")
    return None


def _other_name(kb: KB, sym: dict, full: str) -> tuple[str, str] | None:
    """Another public name of the same object, present now, in another module."""
    if not sym["object"]:
        return None
    rows = kb.db.execute("SELECT name FROM symbols WHERE object = ? AND name != ? AND "
                         "removed_in IS NULL AND name NOT LIKE 'tf.compat.%'",
                         (sym["object"], full)).fetchall()
    home = full.rpartition(".")[0]
    names = sorted((r[0] for r in rows if r[0].rpartition(".")[0] != home), key=canonical_rank)
    if not names:
        return None
    return names[0], kb.availability(kb.symbol(names[0]))


def _gone_too(kb: KB, repl: str) -> str:
    """When the documented replacement was itself removed later (Model.get_updates_for ->
    Model.updates, gone in Keras 3), say so, and what replaced that."""
    r = kb.symbol(repl)
    if r is None or r["removed_in"] is None:
        return ""
    then = f"; use `{r['replacement']}`" if r["replacement"] and r["replacement"] != repl else ""
    return (f". Note: `{repl}` was itself removed in TensorFlow {r['removed_in']}"
            f"{_keras_note(kb, r, r['removed_in'])}{then}")


def _renamed(kb: KB, full: str) -> tuple[str, str | None, str] | None:
    parts = full.split(".")
    for cut in range(len(parts), 1, -1):
        old = ".".join(parts[:cut])
        row = kb.db.execute("SELECT old, new, note FROM renames WHERE old = ?", (old,)).fetchone()
        if row and (cut == len(parts) or kb.symbol(old) is None):
            return (row[0], row[1], row[2] or "")
    return None


def _members_moved(kb: KB, module: str, ord_: int) -> list[tuple[str, str]]:
    rows = kb.db.execute(
        "SELECT s.name, e.data, s.kind FROM events e JOIN symbols s ON s.id = e.symbol_id WHERE "
        "e.ord = ? AND e.kind = 'removed' AND e.data IS NOT NULL AND s.name LIKE ? "
        "AND s.kind NOT IN ('method', 'property', 'constant')", (ord_, module + ".%"))
    import json
    out = [(n, json.loads(d).get("to"), kind) for n, d, kind in rows]
    # What users import (classes, functions) before the modules that held them.
    return [(a, b) for a, b, kind in sorted(
        (x for x in out if x[1]), key=lambda x: (x[2] == "module", canonical_rank(x[1])))]


def _mentioned(kb: KB, text: str, cls: str | None = None) -> list[str]:
    """The KB names a deprecation text recommends: tf.* names, and ``model.predict(x)``-style
    calls of another member of the same class."""
    names = re.findall(r"tf\.[\w.]*\w", text or "")
    if cls:
        names += [f"{cls}.{m}" for m in re.findall(r"\.(\w+)\(", text or "")]
    return [n for n in dict.fromkeys(names) if kb.symbol(n)]


def _same_short(kb: KB, full: str) -> list[str]:
    """Where a removed name's last part lives now. For a member, only under a class of the
    same name (optimizers.Adam.x -> optimizers.legacy.Adam.x): another class's member of that
    name is not where it went."""
    parent, _, short = full.rpartition(".")
    rows = kb.db.execute("SELECT name FROM symbols WHERE short = ? AND removed_in IS NULL "
                         "AND name != ?", (short, full))
    names = sorted((r[0] for r in rows), key=canonical_rank)
    p = kb.symbol(parent)
    if p is not None and p["kind"] == "class":
        cls = parent.rpartition(".")[2]
        names = [n for n in names if n.rpartition(".")[0].rpartition(".")[2] == cls]
        # A Keras 2 member Keras 3 dropped lives on in tf.compat.v1.keras (tf_keras).
        return ([n for n in names if ".compat." not in n] or names)[:2]
    return [n for n in names if ".compat." not in n][:2]


def _by_object(kb: KB, module: str) -> list[str]:
    """Public names (newest first) of what a Python module path defined: keras.utils.np_utils
    -> tf.keras.utils.to_categorical."""
    rows = kb.db.execute(
        "SELECT s.name, s.last_ord FROM spans p JOIN symbols s ON s.id = p.symbol_id WHERE "
        "(p.object = ? OR p.object LIKE ? ESCAPE '\\') AND s.kind IN ('class', 'function') "
        "AND s.name NOT LIKE 'tf.compat.%' GROUP BY s.id", (module, like_prefix(module)))
    used = _popularity(kb)
    best = sorted(rows, key=lambda r: (-r[1], -used.get(r[0], 0), canonical_rank(r[0])))
    return [r[0] for r in best]


def _deeper_fix(kb: KB, module: str | None, name: str | None, pasted: Pasted) -> Fix | None:
    """Python names the first missing part of a dotted path (``module 'tensorflow' has no
    attribute 'estimator'``, ``No module named 'tensorflow.keras.optimizers.experimental'``);
    the user's code line spells the whole path (``tf.estimator.LinearClassifier(...)``,
    ``... import Ftrl``). The fix is about the deepest name written that the KB knows."""
    missing = public_module(module) if module else None
    if missing is None:
        return None
    missing = f"{missing}.{name}" if name else missing
    written = [n if n.startswith("tf.") else public_module(n) for n in pasted.spelt()]
    # Deepest first; the sort is stable, so the last code line comes first among equals.
    for full in sorted(dict.fromkeys(n for n in written if n), key=lambda n: -n.count(".")):
        at = _through(full, missing)
        if at is None:
            continue
        parts = full.split(".")
        for depth in range(len(parts), at + 1, -1):
            name_ = ".".join(parts[:depth])
            sym = kb.symbol(name_)
            if sym is not None and sym["removed_in"] is None and not kb.unusable(sym):
                continue  # present now: the missing part above it is what failed
            found = _about(kb, name_)  # the KB's names, then TF1's renames
            if found:
                return found
    return None


def _through(full: str, missing: str) -> int | None:
    """Where ``full`` passes through the missing name (the index of its last part), when it
    goes deeper: spelt as the message spells it, or through another alias of its module
    (tf.optimizers.experimental.X when Keras 3 says 'keras.optimizers' lacks 'experimental')."""
    if full.startswith(missing + "."):
        return missing.count(".")
    parts, tail = full.split("."), missing.split(".")[-2:]
    return next((i for i in range(1, len(parts) - 1) if parts[i - 1:i + 1] == tail), None)


def _name_fix(kb: KB, module: str | None, name: str, pasted: Pasted) -> Fix | None:
    calls = [c.rpartition(".")[0] for c in pasted.calls() if c.endswith(name)]
    modules = [module] if module else calls or ["tensorflow"]
    guessed = not module and not calls  # Python 2's "'module' object": tensorflow, a guess
    for mod in modules:
        public = public_module(mod) if mod else None
        if public is not None:
            found = _about(kb, f"{public}.{name}")
            if found:
                return found
        owned = _by_object(kb, f"{mod}.{name}")
        if owned:
            return Fix("", f"Import `{owned[0]}`: `{mod}.{name}` is not public API; what it "
                           f"defined is public as {', '.join(owned[:3])}", owned[:MAX_NAMES],
                       f"{mod}.{name}")
        if public is not None and tf1_fixes.is_public_module(kb, public):
            # tensorflow, tensorflow.keras: public, so the name is TF1's, elsewhere or
            # misspelt; never "internal code".
            found = tf1_fixes.not_in_module(kb, public, name, guessed)
            if found is not None or guessed:
                return found
        under = _defined_under(kb, mod, name) if mod else []
        if under:  # keras.layers.normalization.BatchNormalization: defined a level deeper
            return Fix("", f"Import `{under[0]}`: `{mod}` is private code whose layout "
                           f"changed between releases; `{name}` is public as "
                           f"{', '.join(under[:3])}", under[:MAX_NAMES], f"{mod}.{name}")
    mod = modules[0]
    if mod and _ours(mod):
        # Internal code (tensorflow.python.keras.utils.generic_utils): a package calling
        # into it expects another version; a public symbol of that name is the way out.
        public = _same_short(kb, f"tf.{name}")
        use = f"Import `{public[0]}`" if public else "Use the public API"
        return Fix("", f"{use}: `{mod}.{name}` is not public TensorFlow API in any release "
                       f"{kb.versions[0]}–{kb.newest}; `{mod}` is internal code, and code that "
                       f"reaches into it expects other TensorFlow/Keras versions (compare "
                       f"`pip show tensorflow keras` with what it needs)", public,
                   f"{mod}.{name}")
    return None


def _ours(module: str) -> bool:
    """A TensorFlow or Keras module path (public or not), not a third-party package."""
    return any(module == p or module.startswith(p + ".") for p, _ in rules()[2])


def _defined_under(kb: KB, module: str, name: str) -> list[str]:
    """Public classes and functions called ``name`` whose definition lies anywhere under
    the private ``module``, newest and most used first."""
    rows = kb.db.execute(
        "SELECT s.name, s.last_ord FROM spans p JOIN symbols s ON s.id = p.symbol_id WHERE "
        "p.object LIKE ? ESCAPE '\\' AND s.short = ? AND s.kind IN ('class', 'function') "
        "AND s.name NOT LIKE 'tf.compat.%' GROUP BY s.id", (like_prefix(module), name))
    used = _popularity(kb)
    return [r[0] for r in sorted(rows, key=lambda r: (-r[1], -used.get(r[0], 0),
                                                       canonical_rank(r[0])))]


def _module_fix(kb: KB, module: str) -> Fix | None:
    public = public_module(module)
    if public is not None:
        found = _about(kb, public)
        if found:
            return found
    owned = _by_object(kb, module)
    if owned:
        return Fix("", f"Import `{owned[0]}`: the module `{module}` is gone; what it defined is "
                       f"public as {', '.join(owned[:3])}", owned[:MAX_NAMES], module)
    if _ours(module):
        return Fix("", f"Import from the public API (tf.*, tf.keras.*) instead: `{module}` is "
                       f"not a public module in any TensorFlow {kb.versions[0]}–{kb.newest} "
                       f"(internal code, or TensorFlow 1.x)", [], module)
    return None


def _member_fix(kb: KB, type_name: str, member: str) -> Fix | None:
    mapped = rules()[1].get(type_name)
    classes = [mapped] if mapped else []
    rows = kb.db.execute("SELECT name FROM symbols WHERE short = ? AND kind = 'class' AND "
                         "name NOT LIKE 'tf.compat.%'", (type_name,))
    classes += sorted((r[0] for r in rows), key=lambda n: (not n.startswith("tf.keras"),
                                                           canonical_rank(n)))
    for cls in dict.fromkeys(classes):
        found = _about(kb, f"{cls}.{member}")
        if found:
            return found
    for cls in dict.fromkeys(classes):
        # A subclass's own member (Sequential.predict_proba on a Functional model): the
        # code was written for that class; what became of it is the answer.
        sub = _subclass_member(kb, cls, member)
        if sub is None:
            continue
        sym = kb.symbol(sub)
        found = _about(kb, sub) if sym["removed_in"] else None
        if found:
            found.text = f"{found.text} (`{cls}` itself never had `{member}`)"
            return found
        owner = sub.rpartition(".")[0]
        return Fix("", f"Use a `{owner}` for `{member}`: it is a member of `{owner}` (TensorFlow "
                       f"{kb.availability(sym)}), a subclass of `{cls}`, which never had it",
                   [sub, owner], f"{cls}.{member}")
    return _unknown_member(kb, list(dict.fromkeys(classes)), member) if classes else None


def _subclass_member(kb: KB, cls: str, member: str) -> str | None:
    """``member`` of a public subclass of ``cls`` (one whose inherited members are cls's)."""
    rows = kb.db.execute(
        "SELECT m.name FROM symbols m WHERE m.short = ? AND m.parent IN (SELECT DISTINCT "
        "parent FROM symbols WHERE canonical LIKE ? ESCAPE '\\' AND parent != ?)",
        (member, like_prefix(cls), cls)).fetchall()
    names = sorted((r[0] for r in rows), key=canonical_rank)
    return names[0] if names else None


def _unknown_member(kb: KB, classes: list[str], member: str) -> Fix:
    """A member that no release in the KB has as public API of the class: private (a leading
    underscore: Keras internals that old code or a library calls) or misspelt. Says so, with
    the public members spelt most like it, of the class of that name that has the likest
    (the message gives only the short name: Optimizer may be Keras 3's or the legacy one)."""
    scored = [(cls, near_children(kb, cls, member.strip("_"))) for cls in classes[:8]]
    cls, found = max(scored, key=lambda c: max((s for _, s in c[1]), default=0))
    near = [n for n, _ in found]
    span = f"{kb.versions[0]}–{kb.newest}"
    if member.startswith("_"):
        owner = "Keras" if cls.startswith("tf.keras") else "TensorFlow"
        text = (f"Use public API{f' (such as `{near[0]}`)' if near else ''} instead of "
                f"`{member}`: it is private to {owner} (a leading underscore), not public API "
                f"of `{cls}` in any TensorFlow {span}; code that calls it was written for "
                f"another version's internals, so update it or pin the versions it was "
                f"written for")
        return Fix("", text, near + [cls], f"{cls}.{member}")
    text = f"`{cls}` has no public member `{member}` in any TensorFlow {span}"
    if not near:
        return Fix("", f"{text}: check the spelling against its members (tfdesk ask {cls})",
                   [cls], f"{cls}.{member}")
    sym = kb.symbol(near[0])
    then = ""
    if sym["removed_in"]:  # misspelt and gone too: what replaced it
        then = (f" (removed in TensorFlow {sym['removed_in']}"
                + (f"; use `{sym['replacement']}`" if sym["replacement"] else "") + ")")
    names = ([sym["replacement"]] if then and sym["replacement"] else []) + near + [cls]
    return Fix("", f"{text}: did you mean `{near[0]}`{then}?", list(dict.fromkeys(names)),
               f"{cls}.{member}")
