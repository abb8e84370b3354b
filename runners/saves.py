"""Where a training script saves its model, read from its code (never run): so a job can
report a model saved outside its folder, and say so when it found none."""
from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

# Calls that write a model or its weights: methods of a model, and functions taking the model
# first and the path second.
SAVE_METHODS = {"save", "save_weights", "export"}
SAVE_FUNCTIONS = {"tf.saved_model.save": 1, "tf.keras.models.save_model": 1,
                  "keras.models.save_model": 1, "keras.saving.save_model": 1,
                  "tf.keras.callbacks.ModelCheckpoint": 0, "keras.callbacks.ModelCheckpoint": 0}


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return node.id if isinstance(node, ast.Name) else ""


def save_targets(source: str) -> list[dict[str, Any]]:
    """Each save call: its line and the path when it is a literal (None when it is computed
    when the script runs)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = _dotted(node.func).replace("tensorflow.", "tf.", 1)
        index = SAVE_FUNCTIONS.get(name)
        if index is None and isinstance(node.func, ast.Attribute) and \
                node.func.attr in SAVE_METHODS and not name.startswith(("np.", "json.", "os.")):
            index = 0
        if index is None:
            continue
        arg = node.args[index] if len(node.args) > index else next(
            (k.value for k in node.keywords if k.arg in ("filepath", "export_dir", "path")), None)
        if arg is None:
            continue
        path = arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, str) else None
        found.append({"line": node.lineno, "path": path})
    return found


def outside_models(workdir: Path, source: str) -> tuple[list[dict[str, Any]], list[int]]:
    """Models the script saved outside ``workdir`` (absolute literal paths that now exist),
    as artifacts with absolute paths; and the lines whose path tfdesk cannot know."""
    arts, unknown = [], []
    workdir = Path(workdir).resolve()
    for t in save_targets(source):
        if t["path"] is None:
            unknown.append(t["line"])
            continue
        p = Path(t["path"]).expanduser()
        if not p.is_absolute() or p.resolve().is_relative_to(workdir) or not p.exists():
            continue  # inside the folder: already listed; or not written
        if p.is_dir():
            size = sum(f.stat().st_size for f in p.rglob("*") if f.is_file() and not f.is_symlink())
            kind = "saved_model" if (p / "saved_model.pb").exists() else "model"
        else:
            size, kind = p.stat().st_size, "model"
        arts.append({"path": str(p), "size": size, "kind": kind, "name": "saved_outside"})
    return arts, unknown
