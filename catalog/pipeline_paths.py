"""The files a pipeline's steps name, resolved once when the pipeline is added, so a run does
not depend on the folder it is started from.

Which ``with:`` keys of which step kind are files is data (:data:`STEP_PATHS`), read by the
resolver here and by the bot's gate for Slack members (bot/handlers/pipeline_gate.py).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from catalog.names import NAME_RE

# step kind -> its keys that name files, and how: "in" (a file read), "or-name" (a file, or
# a catalog model's name)
STEP_PATHS: dict[str, dict[str, str]] = {
    "convert-script": {"script": "in"},
    "train": {"script": "in", "script_path": "in"},
    "convert-model": {"model": "or-name", "calibration": "in", "input": "in"},
    "infer": {"model": "or-name", "input": "in"},
    "evaluate": {"model": "or-name", "data": "in", "against": "or-name"},
}


def _kind(step: dict[str, Any], conn) -> str | None:
    if step.get("kind"):
        return step["kind"]
    if step.get("component") and conn is not None:
        from catalog import components
        try:
            return components.get(conn, step["component"])["kind"]
        except Exception:  # noqa: BLE001 - pipelines.check reports an unknown component
            return None
    return None


def resolve(definition: dict[str, Any], base: Path, conn=None) -> tuple[dict[str, Any], list[str]]:
    """``definition`` with every relative file a step names made absolute against ``base``
    (the folder ``pipelines add`` ran in), and the list of what changed ("train.script: ./t.py ->
    /abs/t.py"). References (``${...}``), URIs and catalog names (a name that is no file
    there) are left as they are. A file that is not there yet is resolved all the same: the
    run names it, absolute, if it is still missing then."""
    base = Path(base).resolve()
    steps, changed = [], []
    for step in definition.get("steps") or []:
        paths = STEP_PATHS.get(_kind(step, conn) or "", {})
        given = dict(step.get("with") or {})
        for key, how in paths.items():
            value = given.get(key)
            if not isinstance(value, str) or not value or "${" in value or "://" in value \
                    or Path(value).expanduser().is_absolute():
                continue
            target = (base / value).resolve()
            if how == "or-name" and not target.exists() and \
                    NAME_RE.fullmatch(value.partition(":")[0]):
                continue  # a catalog model's name
            given[key] = str(target)
            changed.append(f"{step.get('name')}.{key}: {value} -> {target}")
        steps.append({**step, "with": given} if given != (step.get("with") or {}) else step)
    return {**definition, "steps": steps}, changed
