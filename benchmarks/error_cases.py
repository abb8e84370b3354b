"""Pasted-error cases from first principles: error templates crossed with the KB's history.

Templates are read, not written here: Keras' own messages from its source (a runtime's
site-packages or a wheel: "Argument(s) not recognized: {kwargs}", "Unrecognized keyword
arguments passed to {cls}: {kwargs}", Keras 2's ("Keyword argument not understood:", kw)), and
Python's own by raising the errors in this interpreter (AttributeError of a module and of an
object, ImportError, ModuleNotFoundError, TypeError for a keyword). The KB's history gives
what to fill them with and the expected fix:

- names removed with a known replacement (moves, renames), and TF1 names from the upgrade
  tables: ``module 'tensorflow' has no attribute 'Session'`` -> tf.compat.v1.Session;
- the same as ``from ... import`` (ImportError) and, for modules, ``No module named``;
- methods removed whose deprecation names what to use: ``'Sequential' object has no
  attribute 'predict_classes'`` -> tf.keras.Sequential.predict;
- parameters a callable stopped taking: its signature lost them, or its argument
  deprecation says so (``lr`` -> ``learning_rate``) -> the callable, and the new keyword.

Each case is also written as a traceback (the user's code line calling the API, library
frames, the error line). Cases are split into dev and held-out halves by a hash of their id,
before any tuning.
"""
from __future__ import annotations

import ast
import hashlib
import json
import random
import re
import types
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.traceback_formats import FORMATS, WRAPPERS, Frame

ANCHORS = {"keras3_optimizer": "Argument(s) not recognized",
           "keras3_layer": "Unrecognized keyword arguments passed to",
           "keras2_layer": "Keyword argument not understood"}


@dataclass
class Case:
    id: str
    family: str
    line: str                    # the error line
    code: str                    # the user's code line that failed
    expect: list[str]            # any of these names in the top 3 is the fix
    keyword: str | None = None
    replacement: str | None = None   # the keyword to name in the fix, when the KB knows it
    lib: str = "tensorflow/python/util/dispatch.py"

    @property
    def half(self) -> str:
        return "dev" if int(hashlib.sha1(self.id.encode()).hexdigest(), 16) % 2 == 0 else "heldout"

    def traceback(self, fmt: str = "python", wrapper: str | None = None) -> str:
        """The error as a script's traceback ("python") or a notebook's (traceback_formats),
        wrapped as Keras or TensorFlow wraps an error inside a layer or graph when asked."""
        user = Frame("/home/ana/project/train.py" if fmt == "python" else "", 42, "<module>",
                     self.code, ("import tensorflow as tf", ""))
        lib = Frame(f"/usr/local/lib/python3.11/site-packages/{self.lib}", 153, "error_handler",
                    "raise e.with_traceback(filtered_tb) from None",
                    ("except Exception as e:", "filtered_tb = _process_traceback_frames(e)"))
        line = self.line
        if wrapper is not None:
            error_type, _, message = line.partition(": ")
            line = WRAPPERS[wrapper](error_type, message, user)
        return FORMATS[fmt]([user, lib], line)


# -- templates --------------------------------------------------------------------------------

def python_templates() -> dict[str, str]:
    """Python's own messages, with {module}/{name}/{type}/{callable}/{kw} holes."""
    out = {}
    try:
        getattr(types.ModuleType("M0DULE"), "N4ME")
    except AttributeError as e:
        out["module_attr"] = f"AttributeError: {e}".replace("M0DULE", "{module}").replace("N4ME", "{name}")
    T = type("TYP3", (), {})
    try:
        T().N4ME  # noqa: B018
    except AttributeError as e:
        out["object_attr"] = f"AttributeError: {e}".replace("TYP3", "{type}").replace("N4ME", "{name}")
    try:
        exec("from json import N4ME")
    except ImportError as e:
        out["cannot_import"] = (f"ImportError: {e}".replace("N4ME", "{name}")
                                .replace("'json'", "'{module}'").replace(json.__file__, "{path}"))
    try:
        exec("import json.M0DULE")
    except ImportError as e:
        out["no_module"] = f"ModuleNotFoundError: {e}".replace("json.M0DULE", "{module}")

    def C4LL(a=1):
        return a
    try:
        C4LL(K3Y=1)
    except TypeError as e:
        out["keyword"] = (f"TypeError: {e}".replace(C4LL.__qualname__, "{callable}")
                          .replace("K3Y", "{kw}"))
    return out


def _sources(root: Path):
    """(path, text) of the Python files of a keras package: a site-packages dir or a wheel."""
    if root.suffix == ".whl":
        with zipfile.ZipFile(root) as z:
            for n in z.namelist():
                if n.startswith("keras/") and n.endswith(".py"):
                    yield n, z.read(n).decode("utf-8", "replace")
    else:
        for p in root.rglob("*.py"):
            yield str(p), p.read_text("utf-8", "replace")


def keras_templates(root: Path) -> dict[str, str]:
    """Keras' keyword messages as written in its source, holes as {}."""
    found: dict[str, str] = {}
    for _, text in _sources(root):
        if not any(a.split()[0] in text for a in ANCHORS.values()):
            continue  # (implicitly joined literals span lines: the first word will do)
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.JoinedStr):
                s = "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                s = node.value
            else:
                continue
            for key, anchor in ANCHORS.items():
                if anchor in s and key not in found:
                    found[key] = s
    return found


def fill_keras(key: str, template: str, cls: str, kw: str) -> str:
    kwargs = repr({kw: 0.001})
    if key == "keras2_layer":  # raise TypeError(error_message, kwarg): a tuple's repr
        return f"TypeError: {TypeError(template, kw)}"
    holes = template.count("{}")
    args = [cls, kwargs] if holes == 2 else [kwargs]
    return "ValueError: " + template.replace("{}", "\0").replace("\0", "{}", holes).format(*args)


# -- cases from the KB's history ----------------------------------------------------------------

def python_module(public: str, keras_major: int) -> str:
    """The __name__ a public module has at run time (what AttributeError prints)."""
    if public == "tf":
        return "tensorflow"
    if public.startswith("tf.keras"):
        rest = public[len("tf.keras"):]
        return ("keras._tf_keras.keras" if keras_major == 3 else "keras.api._v2.keras") + rest
    return "tensorflow._api.v2." + public[3:]


def import_module(public: str) -> str:
    return "tensorflow" + public[2:]


def _kb_rows(kb, sql, *args):
    return [dict(r) for r in kb.db.execute(sql, args)]


def name_cases(kb, py: dict[str, str]) -> list[Case]:
    out = []
    rows = _kb_rows(kb, "SELECT name, kind, removed_in, replacement FROM symbols WHERE removed_in "
                        "IS NOT NULL AND replacement IS NOT NULL AND kind IN ('class', 'function', "
                        "'module') AND name NOT LIKE 'tf.compat.%' AND name NOT LIKE '%.raw_ops.%'")
    for r in rows:
        parent, _, leaf = r["name"].rpartition(".")
        major = kb.keras_major(kb.ord_of(r["removed_in"])) or 2
        line = py["module_attr"].format(module=python_module(parent, major), name=leaf)
        out.append(Case(f"attr:{r['name']}", "no_attribute", line, f"x = {r['name']}(...)",
                        [r["replacement"]]))
        line = py["cannot_import"].format(name=leaf, module=import_module(parent),
                                          path=f"/usr/lib/python3/site-packages/{parent[3:].replace('.', '/')}/__init__.py")
        out.append(Case(f"import:{r['name']}", "cannot_import", line,
                        f"from {import_module(parent)} import {leaf}", [r["replacement"]]))
        if r["kind"] == "module":
            out.append(Case(f"module:{r['name']}", "no_module",
                            py["no_module"].format(module=import_module(r["name"])),
                            f"import {import_module(r['name'])}", [r["replacement"]]))
    for r in _kb_rows(kb, "SELECT old, new FROM renames WHERE new IS NOT NULL"):
        if not kb.symbol(r["new"]) or kb.symbol(r["old"]):
            continue
        parent, _, leaf = r["old"].rpartition(".")
        out.append(Case(f"tf1:{r['old']}", "tf1_name",
                        py["module_attr"].format(module=python_module(parent, 2), name=leaf),
                        f"x = {r['old']}(...)", [r["new"]]))
    return out


def misplaced_cases(kb, py: dict[str, str]) -> list[Case]:
    """Names asked of a public module that never had them: a TF1 module (tf.python_io: what
    tf.compat.v1 keeps, or where what it held went), and a class or function whose short
    name is one object's, asked of tf (tf.AdamOptimizer, from tensorflow import Adam)."""
    out = []
    olds = [r[0] for r in kb.db.execute("SELECT old FROM renames WHERE old LIKE 'tf.%' AND "
                                        "old NOT LIKE 'tf.compat.%'")]
    modules = {o.rsplit(".", 1)[0] for o in olds if o.count(".") >= 2}
    for mod in sorted(m for m in modules if kb.symbol(m) is None):
        v1 = kb.symbol("tf.compat.v1." + mod[3:])
        if v1 is None or v1["kind"] != "module":
            continue
        parent, _, leaf = mod.rpartition(".")
        if kb.symbol(parent) is None:
            continue
        news = [r[0] for r in kb.db.execute("SELECT new FROM renames WHERE old LIKE ? AND new "
                                            "IS NOT NULL", (mod + ".%",))]
        homes = [n.rpartition(".")[0] for n in news if not n.startswith("tf.compat.")]
        expect = [v1["name"]] + [h for h in set(homes) if 2 * homes.count(h) >= len(news)]
        out.append(Case(f"tf1mod:{mod}", "misplaced", py["module_attr"].format(
            module=python_module(parent, 2), name=leaf), f"w = {mod}.X(...)", expect))
    rows = kb.db.execute(
        "SELECT short, min(name) FROM symbols WHERE kind IN ('class', 'function') AND name "
        "NOT LIKE 'tf.raw_ops.%' AND short NOT IN (SELECT short FROM symbols WHERE parent = "
        "'tf' OR kind = 'module') GROUP BY short HAVING count(DISTINCT object) = 1")
    for short, name in rows:
        if kb.db.execute("SELECT 1 FROM renames WHERE old = ?", (f"tf.{short}",)).fetchone():
            continue
        line = (py["module_attr"].format(module="tensorflow", name=short)
                if len(short) % 2 else py["cannot_import"].format(
                    name=short, module="tensorflow",
                    path="/usr/lib/python3/site-packages/tensorflow/__init__.py"))
        out.append(Case(f"misplaced:{short}", "misplaced", line, f"v = tf.{short}(x)", [name]))
    return out


def method_cases(kb, py: dict[str, str]) -> list[Case]:
    from knowledge_base.qa.fixes import _last_deprecation, _mentioned
    out = []
    rows = _kb_rows(kb, "SELECT id, name, parent, replacement FROM symbols WHERE kind = 'method' "
                        "AND removed_in IS NOT NULL AND name NOT LIKE 'tf.compat.%'")
    for r in rows:
        dep = _last_deprecation(kb, r)
        expect = ([r["replacement"]] if r["replacement"] else []) + _mentioned(kb, dep or "", r["parent"])
        parent = kb.symbol(r["parent"])
        if not expect or parent is None or parent["kind"] != "class":
            continue
        cls, leaf = r["parent"].rpartition(".")[2], r["name"].rpartition(".")[2]
        # The message names the class by its short name only: the same member's replacement
        # under another class of that name (layers.X vs layers.experimental.preprocessing.X)
        # is as right.
        expect += [n for (n,) in kb.db.execute(
            "SELECT s.replacement FROM symbols s JOIN symbols p ON p.name = s.parent WHERE "
            "p.short = ? AND p.kind = 'class' AND s.short = ? AND s.replacement IS NOT NULL",
            (cls, leaf)) if n not in expect]
        out.append(Case(f"method:{r['name']}", "removed_method",
                        py["object_attr"].format(type=cls, name=leaf),
                        f"y = obj.{leaf}(x)", expect))
    return out


def keyword_cases(kb, py: dict[str, str], keras: dict[str, str]) -> list[Case]:
    from knowledge_base.qa import params
    out = []
    rows = _kb_rows(kb, "SELECT id, name, kind, parent FROM symbols WHERE kind IN ('class', "
                        "'function', 'method') AND name NOT LIKE 'tf.compat.%' AND removed_in IS "
                        "NULL AND name NOT LIKE '%.raw_ops.%'")
    for r in rows:
        spans = kb.spans(r["id"])
        kws = set()
        for s in spans:
            kws.update(params._names(s["signature"]) or [])
            dep = json.loads(s["deprecation"]) if s["deprecation"] else {}
            kws.update(dep.get("args") or [])
        for kw in sorted(kws):
            h = params.history(kb, r["name"], kw)
            if h is None or not h.gone_in or h.accepts_now or kw in ("self", "args", "kwargs"):
                continue
            newest = spans[-1]["signature"] or ""
            absorbs = "**" in newest  # a **kwargs takes the keyword: no TypeError from Python
            keras3 = kb.keras_major(kb.ord_of(h.gone_in)) == 3 and r["name"].startswith("tf.keras")
            leaf = r["name"].rpartition(".")[2]
            if keras3 and r["kind"] == "class" and ".optimizers." in r["name"] and "keras3_optimizer" in keras:
                line = fill_keras("keras3_optimizer", keras["keras3_optimizer"], leaf, kw)
            elif keras3 and r["kind"] == "class" and ".layers." in r["name"] and "keras3_layer" in keras:
                line = fill_keras("keras3_layer", keras["keras3_layer"], leaf, kw)
            elif absorbs:
                continue  # Python raises nothing; only Keras' own checks above would
            else:
                qual = f"{leaf}.__init__" if r["kind"] == "class" else (
                    f"{r['parent'].rpartition('.')[2]}.{leaf}" if r["kind"] == "method" else leaf)
                line = py["keyword"].format(callable=qual, kw=kw)
            call = (f"obj.{leaf}(x, {kw}=0.001)" if r["kind"] == "method"
                    else f"out = {r['name']}({kw}=0.001)")
            case = Case(f"kw:{r['name']}:{kw}", "keyword", line, call, [r["name"]], kw,
                        h.replacement)
            if leaf not in line:
                # The message does not name the callable (Keras 3 optimizers): any callable
                # that dropped the keyword in the same release carries the same fix; the
                # traceback's code line names the one.
                case.expect += [n for n in params.symbols_with(kb, kw) if n != r["name"] and (
                    (g := params.history(kb, n, kw)) and g.gone_in == h.gone_in)]
            out.append(case)
    return out


@dataclass
class CaseSet:
    cases: list[Case] = field(default_factory=list)
    templates: dict[str, str] = field(default_factory=dict)


def generate(kb, keras_roots: list[Path], per_family: int = 60, seed: int = 27) -> CaseSet:
    py = python_templates()
    keras: dict[str, str] = {}
    for root in keras_roots:
        if root.exists():
            for k, v in keras_templates(root).items():
                keras.setdefault(k, v)
    pool = (name_cases(kb, py) + misplaced_cases(kb, py) + method_cases(kb, py)
            + keyword_cases(kb, py, keras))
    rng = random.Random(seed)
    by_family: dict[str, list[Case]] = {}
    for c in pool:
        by_family.setdefault(c.family, []).append(c)
    cases = []
    for fam in sorted(by_family):
        group = sorted(by_family[fam], key=lambda c: c.id)
        cases += rng.sample(group, min(per_family, len(group)))
    for c in cases:
        c.expect += aliases_of(kb, c.expect)
    return CaseSet(cases, {**py, **keras})


def aliases_of(kb, names: list[str]) -> list[str]:
    """The other public names of the objects ``names`` name, in order: a fix is an object,
    so any of its names names it."""
    out: list[str] = []
    for name in names:
        sym = kb.symbol(name)
        out += [a for a in (kb.aliases(sym) if sym else []) if a not in names and a not in out]
    return out


def hit(answer: dict, case: Case, k: int = 3) -> bool:
    names = [r["name"] for r in answer.get("results", [])[:k]]
    return any(e in names for e in case.expect)


def names_replacement(answer: dict, case: Case) -> bool | None:
    if not case.replacement:
        return None
    return re.search(rf"`{re.escape(case.replacement)}\b", answer.get("fix", "")) is not None
