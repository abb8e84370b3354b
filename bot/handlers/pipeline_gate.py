"""The gates a pipeline step passes: the same as the command it stands for.

A step of kind ``train`` is ``tfdesk train``: running it needs the compute permission, and the
files it names pass the same path rules as that command's arguments (a Slack member names
only their own uploads, outputs and jobs). Values the catalog or an earlier step produced
(``${datasets.X}``, ``${models.X}``, ``${steps.S.outputs.K}``) are tfdesk's own and pass;
a member's file reaches a step through ``${params.NAME}`` (``--param NAME=train.py``), which
is resolved here to the member's file. Keys that steer tfdesk itself rather than the job
(``settings``, ``labels``) and inline code (``script_source``, without the compute right) are
refused from Slack.
"""
from __future__ import annotations

import re
from typing import Any

from bot.permissions import Forbidden, refusal

# step kind -> the command it stands for
STEP_COMMAND = {"convert-script": "convert", "train": "train", "convert-model": "convert-model",
                "infer": "infer", "evaluate": "evaluate"}
# keys a remote member may not set: they steer tfdesk, not the job
STEERING = {"settings": "tfdesk's own [models] settings", "labels": "the catalog's job labels",
            "workdir": "the job's folder",
            "kubernetes": "how the job's pods run (images, mounts: the operator's [kubernetes])"}
INLINE_CODE = ("script_source",)
WHOLE = re.compile(r"^\$\{\s*([^}]*?)\s*\}$")
TRUSTED = ("steps.", "datasets.", "models.")


def check_steps(ctx, definition: dict[str, Any], params: dict[str, Any], conn=None,
                running: bool = False, from_step: str | None = None) -> dict[str, Any]:
    """Check every step of ``definition`` for ``ctx.actor``; raise Forbidden (or PathRefused)
    at the first that fails. ``running``: the permission of each step's command is needed
    (adding a definition runs nothing). Returns ``params`` with the member's file names
    resolved to their files. ``from_step``: the steps before it are not run (their earlier
    outputs are reused), so they are not checked."""
    # step kind -> its keys that name files, and how (as bot.registry path kinds); imported
    # here, not at start: the catalog package loads SQLite tooling a name lookup never needs.
    from catalog.pipeline_paths import STEP_PATHS
    actor = ctx.actor
    resolved = dict(params)
    all_params = {**(definition.get("params") or {}), **params}
    steps = [s for s in definition.get("steps") or [] if isinstance(s, dict)]
    names = [s.get("name") for s in steps]
    if from_step in names:
        steps = steps[names.index(from_step):]
    for step in steps:
        name = step.get("name", "?")
        kind, merged = _step(step, conn)
        command = STEP_COMMAND.get(kind or "")
        if step.get("register") and conn is not None:
            _may_register(actor, conn, step["register"])
        if running and command:
            from bot.registry import COMMANDS
            why = refusal(actor, command, COMMANDS[command].permission)
            if why:
                raise Forbidden(f"step {name!r} ({kind}) is `{command}`: {why}")
        if not actor.remote:
            continue
        for key in INLINE_CODE:
            if key in merged and not actor.has("compute"):
                raise Forbidden(f"step {name!r}: inline code ({key}) runs on the tfdesk "
                                "machine and needs the compute permission")
        for key, what in STEERING.items():
            if key in merged:
                raise Forbidden(f"step {name!r}: `{key}` sets {what}; it cannot come from "
                                "Slack")
        for key, how in STEP_PATHS.get(kind or "", {}).items():
            if key in merged and merged[key] is not None:
                _check_path(ctx, name, key, how, merged[key], all_params, resolved)
    return resolved


def _may_register(actor, conn, name: str) -> None:
    """``register: NAME`` adds a version of model NAME: the creator of NAME's, or an admin's."""
    from bot.permissions import check_owner
    from catalog.lookup import first_owner
    owner = first_owner(conn, "model", name)
    if owner is not None:
        check_owner(actor, owner, f"model {name!r}", "add a version to")


def _step(step: dict[str, Any], conn) -> tuple[str | None, dict[str, Any]]:
    """The step's kind and parameters, its component's defaults under its own ``with``."""
    merged: dict[str, Any] = {}
    kind = step.get("kind")
    if step.get("component") and conn is not None:
        from catalog import components
        comp = components.get(conn, step["component"])
        kind = comp["kind"]
        merged.update(comp["params"] or {})
    merged.update(step.get("with") or {})
    return kind, merged


def _check_path(ctx, step: str, key: str, how: str, value: Any, params: dict[str, Any],
                resolved: dict[str, Any]) -> None:
    from bot.dispatch import catalog_model, job_owner
    from bot.paths import Areas, PathRefused, readable
    areas = Areas.of(ctx.config)
    text = str(value)
    whole = WHOLE.match(text)
    if whole and whole.group(1).startswith(TRUSTED):
        return  # made by tfdesk: a catalog entry's or an earlier step's output
    if whole and whole.group(1).startswith("params."):
        param = whole.group(1)[len("params."):]
        if param not in params:
            return  # pipelines.check reports the unknown parameter
        resolved[param] = readable(ctx.actor, str(params[param]), areas, job_owner(ctx),
                                   how == "or-name", catalog_model(ctx))
        return
    if "${" in text:
        raise PathRefused(f"step {step!r}: `{key}` mixes a reference into a path; from Slack, "
                          "use a whole ${params.NAME}, ${datasets.NAME}, ${models.NAME} or "
                          "${steps...} reference")
    got = readable(ctx.actor, text, areas, job_owner(ctx), how == "or-name", catalog_model(ctx))
    if got != text:
        raise PathRefused(f"step {step!r}: `{key}: {text}` names a file by a name only you "
                          "know here; pass it as a parameter instead (`${params.NAME}` in the "
                          "step, `--param NAME=" + text + "` when you run it)")
