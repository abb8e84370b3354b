"""Pipelines as graphs: which steps wait for which, and when a step's result can be reused.

A pipeline in which no step says ``after:`` is a chain, as before: each step waits for the one
above it. As soon as one step says ``after:``, the pipeline is a graph: every step waits for
the steps its ``after:`` names and those whose outputs it reads (``${steps.X.outputs.K}``),
and nothing else, so independent steps run at the same time. ``after:`` names steps above it,
so a graph never has a cycle.

A step with ``cache: true`` (or a pipeline with ``cache: true``) is reused when a step of the
same kind ran before with the same resolved inputs and the same content of every file they
name (the script is a file it names): its outputs are taken and the run says so.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

STEP_REF = re.compile(r"\$\{\s*steps\.([A-Za-z0-9._-]+?)\.outputs\.")
MAX_RETRIES = 5
HASH_LIMIT = 256 * 1024 * 1024  # inputs bigger than this (in all) are not hashed: no reuse
CONTEXT_KEYS = ("pipeline_run", "step")  # where a step ran, not what it was given


def is_graph(definition: dict[str, Any]) -> bool:
    """Run by the graph driver: any step with ``after:``, ``retries:`` or ``cache:``, or a
    pipeline-wide ``cache:``."""
    return bool(definition.get("cache")) or any(
        k in s for s in definition.get("steps", []) for k in ("after", "retries", "cache"))


def _after(step: dict[str, Any]) -> list[str]:
    after = step.get("after")
    return [after] if isinstance(after, str) else list(after or [])


def reads(step: dict[str, Any]) -> list[str]:
    """The steps whose outputs ``step`` reads."""
    return sorted(set(STEP_REF.findall(json.dumps(step.get("with") or {}))))


def dependencies(steps: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Step name -> the steps it waits for."""
    graph = any("after" in s for s in steps)
    out: dict[str, list[str]] = {}
    for i, s in enumerate(steps):
        if graph:
            out[s["name"]] = sorted(set(_after(s)) | set(reads(s)))
        else:
            out[s["name"]] = [steps[i - 1]["name"]] if i else []
    return out


def problems(definition: dict[str, Any]) -> list[str]:
    """What is wrong with the steps' ``after:`` and ``retries:``, in words."""
    out, earlier = [], []
    names = [s.get("name") for s in definition.get("steps", [])]
    for s in definition.get("steps", []):
        for a in _after(s):
            if a == s["name"]:
                out.append(f"step {s['name']!r}: after: names the step itself")
            elif a not in names:
                out.append(f"step {s['name']!r}: after: names no step {a!r} "
                           f"(steps: {', '.join(names)})")
            elif a not in earlier:
                out.append(f"step {s['name']!r}: after: {a!r} is below it; a step waits only "
                           "for steps above it")
        retries = s.get("retries", 0)
        if not isinstance(retries, int) or isinstance(retries, bool) or \
                not 0 <= retries <= MAX_RETRIES:
            out.append(f"step {s['name']!r}: retries must be a whole number from 0 to "
                       f"{MAX_RETRIES}, not {retries!r}")
        earlier.append(s["name"])
    return out


def cached(definition: dict[str, Any], step: dict[str, Any]) -> bool:
    return bool(step.get("cache", definition.get("cache", False)))


def _hash_path(path: Path, digest, budget: list[int]) -> bool:
    """Feed a file's (or a folder's files') names and contents to ``digest``; False when over
    the budget."""
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    for f in files:
        size = f.stat().st_size
        budget[0] -= size
        if budget[0] < 0:
            return False
        digest.update(str(f.relative_to(path) if f != path else f.name).encode() + b"\0")
        with open(f, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
    return True


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def step_key(kind: str, spec: dict[str, Any], code_version: str = "") -> str | None:
    """The content hash of what a step is given: its kind, resolved inputs and the bytes of
    every local file or folder they name. None when the files are too big to hash."""
    digest = hashlib.sha256()
    given = {k: v for k, v in spec.items() if k not in CONTEXT_KEYS}
    digest.update(json.dumps({"kind": kind, "spec": given, "code": code_version},
                             sort_keys=True, default=str).encode())
    budget = [HASH_LIMIT]
    for text in sorted(set(_strings(given))):
        if "\0" in text or len(text) > 4096 or "://" in text:
            continue
        path = Path(text)
        if path.is_absolute() and os.path.exists(path):
            digest.update(b"file\0" + text.encode() + b"\0")
            if not _hash_path(path, digest, budget):
                return None
    return digest.hexdigest()


def outputs_exist(outputs: dict[str, Any]) -> bool:
    """A reused step's outputs must still be there: every absolute path among them."""
    return all(os.path.exists(v) for v in outputs.values()
               if isinstance(v, str) and v.startswith("/"))


__all__ = ["cached", "dependencies", "is_graph", "outputs_exist", "problems", "reads",
           "step_key"]
