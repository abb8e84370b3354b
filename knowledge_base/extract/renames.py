"""TF1 -> TF2 renames and notes from the upgrade tables shipped in the TF wheel
(``tensorflow/tools/compatibility/``), read with ``ast`` as data, never executed.

Sources, later ones adding notes or filling gaps:

* ``renames_v2.renames`` and ``all_renames_v2.manual_symbol_renames``: old -> new names;
* ``all_renames_v2.addons_symbol_mappings``: contrib symbols moved to TensorFlow Addons;
* ``tf_upgrade_v2``: ``function_warnings`` (advice texts), ``function_transformers`` (calls
  rewritten by a function; its docstring names the replacement, e.g.
  ``tf.contrib.layers.xavier_initializer`` -> ``tf.compat.v1.keras.initializers.VarianceScaling``);
* ``module_deprecations_v2.MODULE_DEPRECATIONS``: whole modules gone (``tf.contrib``, ``tf.flags``).
"""
from __future__ import annotations

import ast
import re

from ..records import Rename
from .zipsource import Sources

PKG = "tensorflow.tools.compatibility"
_TF_NAME = re.compile(r"\bto\s+`?(tf\.[A-Za-z_][\w.]*[\w])")


def _eval(node: ast.AST | None, env: dict[str, ast.AST], depth: int = 0):
    """A literal value: strings (with + and .format skipped), tuples, dicts; Names via env."""
    if node is None or depth > 10:
        return None
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return _eval(env.get(node.id), env, depth + 1)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        a, b = _eval(node.left, env, depth + 1), _eval(node.right, env, depth + 1)
        return a + b if isinstance(a, str) and isinstance(b, str) else None
    if isinstance(node, ast.Tuple):
        return tuple(_eval(e, env, depth + 1) for e in node.elts)
    if isinstance(node, ast.Dict):
        out = {}
        for k, v in zip(node.keys, node.values):
            key = _eval(k, env, depth + 1)
            if isinstance(key, str):
                out[key] = v  # values stay nodes; callers evaluate what they need
        return out
    return None


def _assigns(body: list[ast.stmt]) -> dict[str, ast.AST]:
    env: dict[str, ast.AST] = {}
    for node in body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            t = node.targets[0]
            if isinstance(t, ast.Name):
                env[t.id] = node.value
            elif isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                env["self." + t.attr] = node.value
    return env


def _message(value) -> str | None:
    if isinstance(value, tuple):
        texts = [v for v in value if isinstance(v, str)]
        return texts[-1] if texts else None
    return value if isinstance(value, str) else None


def _clean(text: str, old: str) -> str:
    return " ".join(text.replace("<function name>", old).split())


def extract_renames(sources: Sources) -> list[Rename]:
    out: dict[str, Rename] = {}

    def put(old: str, new: str | None, note: str = "") -> None:
        if not old.startswith("tf."):
            return
        r = out.get(old)
        if r is None:
            out[old] = Rename(old, new, note)
            return
        if new and not r.new:
            r.new = new
        if note and note not in r.note:
            r.note = f"{r.note} {note}".strip()

    tree = sources.tree(f"{PKG}.renames_v2")
    if tree is not None:
        table = _eval(_assigns(tree.body).get("renames"), {})
        for old, v in (table or {}).items():
            new = _eval(v, {})
            if isinstance(new, str):
                put(old, new)

    tree = sources.tree(f"{PKG}.all_renames_v2")
    if tree is not None:
        env = _assigns(tree.body)
        for old, v in (_eval(env.get("manual_symbol_renames"), env) or {}).items():
            new = _eval(v, env)
            if isinstance(new, str):
                out.pop(old, None)  # the manual table overrides the generated one
                put(old, new)
        for old, v in (_eval(env.get("addons_symbol_mappings"), env) or {}).items():
            new = _eval(v, env)
            if isinstance(new, str):
                put(old, new, f"Moved to TensorFlow Addons as `{new}`; the API may have changed.")

    tree = sources.tree(f"{PKG}.tf_upgrade_v2")
    if tree is not None:
        module_env = _assigns(tree.body)
        functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
        init_env: dict[str, ast.AST] = {}
        for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
            for fn in cls.body:
                if isinstance(fn, ast.FunctionDef) and fn.name == "__init__":
                    init_env.update(_assigns(fn.body))
        env = {**module_env, **init_env}
        for old, v in (_eval(env.get("self.function_warnings"), env) or {}).items():
            msg = _message(_eval(v, env))
            if msg:
                put(old, None, _clean(msg, old))
        for old, v in (_eval(env.get("self.function_transformers"), env) or {}).items():
            fn_name = v.id if isinstance(v, ast.Name) else None
            fn = functions.get(fn_name) if fn_name else None
            doc = ast.get_docstring(fn) if fn is not None else None
            if not doc:
                continue
            m = _TF_NAME.search(doc)
            summary = re.split(r"\n\s*(?:Returns|Args):", doc)[0]
            put(old, m.group(1) if m else None, _clean(summary, old))

    tree = sources.tree(f"{PKG}.module_deprecations_v2")
    if tree is not None:
        env = _assigns(tree.body)
        for old, v in (_eval(env.get("MODULE_DEPRECATIONS"), env) or {}).items():
            msg = _message(_eval(v, env))
            if msg:
                put(old, None, _clean(msg, old))

    return sorted(out.values(), key=lambda r: r.old)
