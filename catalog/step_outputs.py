"""What a pipeline step makes and what a later step may read of it.

The invariant, enforced here and nowhere else: **a step reads, read-only, exactly the catalog
entries it names and the outputs it names of steps it runs after; nothing else.**

- When a pipeline is added (:func:`problems`): every ``${steps.X.outputs.K}`` of a step names a
  step X it runs after (X is above it, and in a graph it waits for X) and an output K that X
  makes: one of its kind's own (:data:`BUILTIN`) or one X declares under ``outputs:``. A
  declared output is a path relative to X's job folder, inside it, not hidden.
- When X succeeds (:func:`declared`): each declared output must exist in X's job folder (looked
  at without following links); it becomes ``${steps.X.outputs.K}``, an absolute path there.
- When a later step resolves a reference to an output that lies inside X's job folder
  (:func:`as_input`), that path becomes one of the step's ``inputs`` and is granted to its job:
  runners/inputs.py copies it privately (links refused) and the sandbox binds it read-only at
  that same path, as it does a catalog dataset.
"""
from __future__ import annotations

import os
import re
import stat
from pathlib import Path, PurePosixPath
from typing import Any

from catalog import pipeline_graph
from catalog.errors import InvalidInput
from catalog.names import NAME_RE

# step kind -> the outputs it makes by itself (catalog/executor.py StepOutcome.outputs, and
# catalog_model once its model is registered).
BUILTIN: dict[str, tuple[str, ...]] = {
    "convert-script": ("script",),
    "train": ("workdir", "model", "catalog_model"),
    "convert-model": ("workdir", "model", "catalog_model", "speedup"),
    "infer": ("workdir", "speedup"),
    "evaluate": ("workdir",),
}
REF = re.compile(r"\$\{\s*steps\.([^.}]+)\.outputs\.([^}]*?)\s*\}")


def ancestors(steps: list[dict[str, Any]]) -> dict[str, set[str]]:
    """Step name -> every step it runs after (what it waits for, and what those wait for),
    by the same dependencies the drivers use (catalog/pipeline_graph.py)."""
    deps = pipeline_graph.dependencies(steps)
    out: dict[str, set[str]] = {}
    for s in steps:  # a step waits only for steps above it (no cycle): one pass in order
        name = s["name"]
        out[name] = set()
        for d in deps.get(name, []):
            if d in out and d != name:  # above it; a read of itself or below is refused
                out[name] |= {d} | out[d]
    return out


def _path_problem(rel: Any) -> str | None:
    if not isinstance(rel, str) or not rel.strip():
        return "must be a path relative to the step's job folder"
    p = PurePosixPath(rel)
    if p.is_absolute() or "\\" in rel or "\x00" in rel:
        return f"{rel!r} must be relative to the step's job folder"
    if ".." in p.parts:
        return f"{rel!r} leaves the step's job folder"
    if not [part for part in p.parts if part != "."]:
        return f"{rel!r} is the job folder itself; name a file or folder in it"
    if any(part.startswith(".") for part in p.parts):
        return f"{rel!r} names a hidden entry (the job's own bookkeeping)"
    return None


def problems(steps: list[dict[str, Any]], kinds: dict[str, str | None]) -> list[str]:
    """What is wrong with the steps' ``outputs:`` and their ``${steps...}`` references, in
    words; ``kinds``: step name -> its kind (None when unknown: its outputs go unchecked)."""
    out: list[str] = []
    names = [s["name"] for s in steps]
    after = ancestors(steps)
    for s in steps:
        for key, rel in (s.get("outputs") or {}).items():
            if not NAME_RE.fullmatch(str(key)):
                out.append(f"step {s['name']!r}: output name {key!r} is not a name")
            elif key in BUILTIN.get(kinds.get(s["name"]) or "", ()):
                out.append(f"step {s['name']!r}: output {key!r} is made by every "
                           f"{kinds[s['name']]} step; declare it under another name")
            why = _path_problem(rel)
            if why:
                out.append(f"step {s['name']!r}: output {key!r}: {why}")
        for src, key in REF.findall(str(s.get("with") or "")):
            if src not in names:
                out.append(f"step {s['name']!r}: ${{steps.{src}.outputs.{key}}} names no step "
                           f"{src!r} (steps: {', '.join(names)})")
            elif src not in after[s["name"]]:
                where = "itself" if src == s["name"] else "a step it does not run after"
                out.append(f"step {s['name']!r}: ${{steps.{src}.outputs.{key}}} names {where} "
                           f"({src!r}); a step reads only outputs of steps it runs after")
            else:
                made = {*BUILTIN.get(kinds.get(src) or "", ()),
                        *((next(x for x in steps if x["name"] == src).get("outputs")) or {})}
                if kinds.get(src) is not None and key not in made:
                    out.append(f"step {s['name']!r}: ${{steps.{src}.outputs.{key}}}: step "
                               f"{src!r} makes no output {key!r} (it makes: "
                               f"{', '.join(sorted(made))}; declare others under outputs:)")
    return out


def declared(step: dict[str, Any], outputs: dict[str, Any]) -> dict[str, Any]:
    """A succeeded step's outputs with what it declared: absolute paths in its job folder,
    each checked there without following links. InvalidInput when one is missing."""
    wanted = step.get("outputs") or {}
    if not wanted:
        return dict(outputs)
    workdir = outputs.get("workdir")
    if not workdir:
        raise InvalidInput(f"step {step['name']!r} declares outputs but its job has no folder")
    out = dict(outputs)
    for key, rel in wanted.items():
        parts = [p for p in PurePosixPath(rel).parts if p != "."]
        if not _exists_beneath(Path(workdir), parts):
            raise InvalidInput(f"step {step['name']!r} declares output {key!r} ({rel}), but "
                               "its job did not write it there (or wrote a link)")
        out[key] = str(Path(workdir).joinpath(*parts))
    return out


def _exists_beneath(root: Path, parts: list[str]) -> bool:
    """``root/parts`` exists and no component is a link (looked at by name, nothing read)."""
    at = root
    for part in parts:
        at = at / part
        try:
            st = os.lstat(at)
        except OSError:
            return False
        if stat.S_ISLNK(st.st_mode):
            return False
    return bool(parts)


def as_input(value: Any, outputs: dict[str, Any]) -> str | None:
    """``value`` (a resolved ``${steps.X.outputs.K}``) when it is a path inside X's job folder
    (``outputs``: X's), which the reading step is then given; else None (a number, a name, X's
    folder itself, or a file outside it such as a converted script)."""
    workdir = outputs.get("workdir")
    if not isinstance(value, str) or not workdir or not os.path.isabs(value):
        return None
    path, root = os.path.normpath(value), os.path.normpath(str(workdir))
    return path if path != root and Path(path).is_relative_to(root) else None


__all__ = ["BUILTIN", "ancestors", "as_input", "declared", "problems"]
