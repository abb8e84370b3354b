"""Pipeline runs: a chain of jobs with per-step state, outputs passed forward, a stop at the
first failure with a clear report, and resumption from a chosen step (``--from``).

Steps execute through a :class:`catalog.executor.StepExecutor` (the job engine). Every state
change is committed as it happens, so ``pipeline status`` shows live progress from another
process and a crash leaves an honest record.
"""
from __future__ import annotations

import json
import os
import secrets
import socket
import sqlite3
import sys
from typing import Any, Callable

from catalog import components, entries, inputs, pipeline_graph, pipelines
from catalog import executor as step_exec
from catalog.errors import InvalidInput, NotFound
from catalog.executor import StepExecutor, StepOutcome
from catalog.outputs import FinishedJob, register_job_outputs
from catalog.step_outputs import declared as step_outputs_of
from catalog.store import now, transaction

_Resolver = inputs.Resolver  # graph_runs reaches it through this module (its book)

QUEUED, RUNNING, SUCCEEDED, FAILED = "queued", "running", "succeeded", "failed"
PENDING, REUSED, NOT_RUN = "pending", "reused", "not-run"
DONE_STEP = (SUCCEEDED, REUSED)


def _expand_steps(conn, definition: dict[str, Any]) -> list[dict[str, Any]]:
    """Each step as {name, kind, with, environment, register, timeout, outputs}; component
    defaults are merged under the step's own ``with``."""
    out = []
    for step in definition["steps"]:
        params: dict[str, Any] = {}
        kind = step.get("kind")
        if step.get("component"):
            comp = components.get(conn, step["component"])
            kind = comp["kind"]
            params.update(comp["params"])
        params.update(step.get("with", {}) or {})
        out.append({"name": step["name"], "kind": kind, "with": params,
                    "component": step.get("component"),
                    "environment": step.get("environment") or definition.get("environment"),
                    "register": step.get("register"), "timeout": step.get("timeout"),
                    "outputs": step.get("outputs") or {}})
    return out


def start(conn: sqlite3.Connection, pipeline: str, owner: str,
          reply_to: dict[str, Any] | None = None, from_step: str | None = None,
          params: dict[str, Any] | None = None, reuse_own_only: bool = False) -> str:
    """Create a run (state queued) and return its id; :func:`execute` runs it. With
    ``from_step``, the earlier steps' outputs come from the newest run that finished them
    (``reuse_own_only``: the newest of ``owner``'s own runs)."""
    name, definition = pipelines.definition(conn, pipeline)
    if params:
        unknown = sorted(set(params) - set(definition.get("params", {}) or {}))
        if unknown:
            raise InvalidInput(f"pipeline {name!r} has no params {', '.join(unknown)} "
                               f"(it has: {', '.join(definition.get('params', {})) or 'none'})")
        definition["params"] = {**definition.get("params", {}), **params}
    pipelines.check(conn, definition)
    steps = _expand_steps(conn, definition)
    names = [s["name"] for s in steps]
    reused: dict[int, sqlite3.Row] = {}
    resumed_from = None
    if from_step is not None:
        if from_step not in names:
            raise InvalidInput(f"pipeline {name!r} has no step {from_step!r} "
                               f"(steps: {', '.join(names)})")
        first = names.index(from_step)
        if first > 0:
            resumed_from, reused = _earlier_outputs(conn, name, names[:first], from_step,
                                                    owner if reuse_own_only else None)
    run_id = f"run-{secrets.token_hex(4)}"
    if not definition.get("project"):  # the pipeline entry's project, for what its steps make
        row = conn.execute("SELECT p.name FROM catalog_pipelines x JOIN catalog_projects p ON "
                           "p.id = x.project_id WHERE x.name = ?", (name,)).fetchone()
        if row is not None:
            definition["project"] = row[0]
    project = definition.get("project")
    with transaction(conn):
        pid = entries.project_id(conn, project) if project else None
        conn.execute("INSERT INTO catalog_runs (id, pipeline, definition, state, owner, "
                     "project_id, reply_to, resumed_from, created) VALUES (?,?,?,?,?,?,?,?,?)",
                     (run_id, name, json.dumps(definition), QUEUED, owner, pid,
                      json.dumps(reply_to or {}), resumed_from, now()))
        for idx, step in enumerate(steps):
            old = reused.get(idx)
            conn.execute(
                "INSERT INTO catalog_run_steps (run_id, idx, name, kind, state, job_id, spec, "
                "outputs, started, finished) VALUES (?,?,?,?,?,?,?,?,?,?)",
                (run_id, idx, step["name"], step["kind"], REUSED if old else PENDING,
                 old["job_id"] if old else None, json.dumps(step),
                 old["outputs"] if old else None, old["started"] if old else None,
                 old["finished"] if old else None))
    return run_id


def _earlier_outputs(conn, pipeline: str, names: list[str], from_step: str,
                     owner: str | None = None) -> tuple[str, dict[int, sqlite3.Row]]:
    """The newest run of ``pipeline`` (of ``owner``'s, when given) whose steps ``names`` all
    finished: their outputs."""
    for run in conn.execute("SELECT id FROM catalog_runs WHERE pipeline = ? AND "
                            "(? IS NULL OR owner = ?) ORDER BY created DESC, rowid DESC",
                            (pipeline, owner, owner)):
        rows = conn.execute("SELECT * FROM catalog_run_steps WHERE run_id = ? ORDER BY idx",
                            (run["id"],)).fetchall()
        if len(rows) >= len(names) and all(
                r["name"] == n and r["state"] in DONE_STEP for r, n in zip(rows, names)):
            return run["id"], {i: rows[i] for i in range(len(names))}
    whose = " of yours" if owner else ""
    raise InvalidInput(f"cannot start pipeline {pipeline!r} from step {from_step!r}: no earlier "
                       f"run{whose} finished the steps before it ({', '.join(names)}); "
                       f"run it from the start ('pipeline run {pipeline}')")


def _set_step(conn, run_id: str, idx: int, **fields) -> None:
    for key in ("outputs", "spec"):
        if key in fields and not isinstance(fields[key], str):
            fields[key] = json.dumps(fields[key], default=str)
    cols = ", ".join(f"{k} = ?" for k in fields)
    with transaction(conn):
        conn.execute(f"UPDATE catalog_run_steps SET {cols} WHERE run_id = ? AND idx = ?",
                     (*fields.values(), run_id, idx))


def _finish(conn, run_id: str, state: str, error: str | None = None) -> None:
    with transaction(conn):
        conn.execute("UPDATE catalog_runs SET state = ?, error = ?, finished = ? WHERE id = ?",
                     (state, error, now(), run_id))
        conn.execute("UPDATE catalog_run_steps SET state = ? WHERE run_id = ? AND state = ?",
                     (NOT_RUN, run_id, PENDING))
        entries.release_uses(conn, f"run {run_id}")
        # Its jobs that ended free what they read now, not when the engine's event for their
        # end reaches the catalog's subscriber: a model is deletable once its run is over.
        for (job_id,) in conn.execute(
                "SELECT job_id FROM catalog_run_steps WHERE run_id = ? AND job_id IS NOT NULL "
                "AND state IN (?, ?, ?)", (run_id, SUCCEEDED, FAILED, REUSED)):
            entries.release_uses(conn, f"job {job_id}")


def _me() -> dict[str, Any]:
    """This process, as a run's driver: pid, its start time (a pid can be reused, the pair
    cannot) and the host."""
    pid = os.getpid()
    return {"pid": pid, "start": _start_time(pid), "host": socket.gethostname()}


def _start_time(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return None if fields[0] == "Z" else int(fields[19])


def driver_alive(driver: str | dict | None) -> bool:
    """Is the process that drives a run still running? A driver on another host counts as
    alive (it cannot be checked from here); a run without one has none."""
    if not driver:
        return False
    d = json.loads(driver) if isinstance(driver, str) else driver
    if d.get("host") != socket.gethostname():
        return True
    return d.get("pid") is not None and _start_time(d["pid"]) == d.get("start")


def execute(conn: sqlite3.Connection, run_id: str, executor: StepExecutor,
            progress: Callable[[str, int, int], None] | None = None) -> dict[str, Any]:
    """Run the pending steps in order; stop at the first failure. Returns :func:`status`."""
    run = _run_row(conn, run_id)
    with transaction(conn):
        claimed = conn.execute("UPDATE catalog_runs SET state = ?, driver = ? WHERE id = ? AND "
                               "state = ?", (RUNNING, json.dumps(_me()), run_id, QUEUED)).rowcount
    if not claimed:
        raise InvalidInput(f"run {run_id} is {run['state']}; only a queued run can be executed "
                           f"(start a new one with 'pipeline run {run['pipeline']}')")
    return _drive(conn, run_id, executor, progress)


def follow(conn: sqlite3.Connection, run_id: str, executor: StepExecutor,
           progress: Callable[[str, int, int], None] | None = None) -> dict[str, Any]:
    """Take over a running run whose driver is gone (see :func:`reconcile`): wait for the job
    of the step that was running, then go on with the rest."""
    run = _run_row(conn, run_id)
    if run["state"] != RUNNING:
        raise InvalidInput(f"run {run_id} is {run['state']}; only a running run can be followed")
    if driver_alive(run["driver"]):
        d = json.loads(run["driver"])
        raise InvalidInput(f"run {run_id} is being driven by tfdesk process {d.get('pid')} on "
                           f"{d.get('host')}; 'pipeline status {run_id}' shows its progress")
    with transaction(conn):  # compare-and-set: of two restarted tfdesks, one takes it
        claimed = conn.execute("UPDATE catalog_runs SET driver = ? WHERE id = ? AND "
                               "driver IS ?", (json.dumps(_me()), run_id, run["driver"])).rowcount
    if not claimed:
        raise InvalidInput(f"run {run_id} was just taken over by another tfdesk")
    return _drive(conn, run_id, executor, progress)


def reconcile(conn: sqlite3.Connection, job_state: Callable[[str], tuple[str, str] | None]
              ) -> list[dict[str, Any]]:
    """Settle runs whose driver (the tfdesk process running them) is gone, e.g. after a crash.

    ``job_state(job_id)`` gives a job's (state, reason), or None when the job is unknown. The
    running step's job decides: still active or succeeded -> the run can be followed
    (:func:`follow`); failed, cancelled, lost or gone -> the step and run fail with the reason.
    A run that never started fails too. Returns [{"run", "action": "follow"|"failed", "why"}].
    """
    out = []
    for run in conn.execute("SELECT * FROM catalog_runs WHERE state IN (?, ?)",
                            (QUEUED, RUNNING)).fetchall():
        if driver_alive(run["driver"]):
            continue
        if run["state"] == QUEUED:
            if now() - run["created"] < 60:  # just made; its execute() is about to claim it
                continue
            why = "tfdesk stopped before the run started"
            _finish(conn, run["id"], FAILED, why)
            out.append({"run": run["id"], "action": FAILED, "why": why})
            continue
        running = conn.execute("SELECT * FROM catalog_run_steps WHERE run_id = ? AND state = ? "
                               "ORDER BY idx", (run["id"], RUNNING)).fetchall()
        # A graph run has several steps running: one whose job goes on keeps it followable
        # (following settles the others' ends); else the first running step decides.
        step = next((s for s in running if _job_goes_on(s["job_id"], job_state)),
                    running[0] if running else None)
        why = None
        if step is not None:
            job = step["job_id"]
            got = job_state(job) if job and not job.startswith("inline-") else None
            if not job:
                why = "tfdesk stopped before the step's job was created"
            elif job.startswith("inline-"):
                why = "tfdesk stopped while this step ran in it"
            elif got is None:
                why = f"its job {job} no longer exists"
            elif got[0] in ("failed", "cancelled", "lost"):
                why = f"its job {job} {got[0]}" + (f": {got[1]}" if got[1] else "")
        if why is None:
            out.append({"run": run["id"], "action": "follow",
                        "why": "its tfdesk stopped" + (f"; job {step['job_id']} is "
                                                       f"{job_state(step['job_id'])[0]}"
                                                       if step is not None else "")})
            continue
        _set_step(conn, run["id"], step["idx"], state=FAILED, error=why, finished=now())
        _finish(conn, run["id"], FAILED, f"step {step['name']!r} failed after tfdesk stopped: "
                                         f"{why}")
        out.append({"run": run["id"], "action": FAILED, "why": why})
    return out


def _job_goes_on(job: str | None, job_state) -> bool:
    if not job or job.startswith("inline-"):
        return False
    got = job_state(job)
    return got is not None and got[0] not in ("failed", "cancelled", "lost")


def _error_text(exc: Exception) -> str:
    """A step's failure as its run reports it: a user-facing message as it is, else its type."""
    return str(exc) if getattr(exc, "user_facing", False) else f"{type(exc).__name__}: {exc}"


def _submit_step(conn, run: sqlite3.Row, definition: dict[str, Any], step: dict[str, Any],
                 idx: int, outputs: dict[str, Any], executor: StepExecutor
                 ) -> tuple[str, dict[str, Any]]:
    """Resolve a pending step's ``with:`` against the params and earlier outputs, record what it
    uses, mark it running and submit its job: (job id, the spec submitted)."""
    run_id, name = run["id"], step["name"]
    resolver = inputs.Resolver(conn, definition.get("params", {}) or {}, outputs)
    spec = step_exec.request(definition, step, resolver.step(name, step["with"]), run_id)
    with transaction(conn):
        for kind, item_id in resolver.used:
            entries.mark_use(conn, kind, item_id, f"run {run_id}")
    _set_step(conn, run_id, idx, state=RUNNING, started=now(),
              spec={**step, "resolved": step_exec.record(step["kind"], spec)})
    job = executor.submit(step["kind"], spec, run["owner"], json.loads(run["reply_to"]),
                          readable=tuple(resolver.readable))
    job_id = str(getattr(job, "id", job))
    _set_step(conn, run_id, idx, job_id=job_id)
    return job_id, spec


def _drive(conn: sqlite3.Connection, run_id: str, executor: StepExecutor,
           progress: Callable[[str, int, int], None] | None) -> dict[str, Any]:
    run = _run_row(conn, run_id)
    definition = json.loads(run["definition"])
    if pipeline_graph.is_graph(definition):  # after:/retries:/cache: this module keeps the book
        from catalog import graph_runs
        return graph_runs.drive(conn, run_id, executor, sys.modules[__name__], progress)
    steps = conn.execute("SELECT * FROM catalog_run_steps WHERE run_id = ? ORDER BY idx",
                         (run_id,)).fetchall()
    outputs = {s["name"]: json.loads(s["outputs"]) for s in steps if s["state"] in DONE_STEP}
    total = len(steps)
    for s in steps:
        if s["state"] not in (PENDING, RUNNING):
            continue
        step = json.loads(s["spec"])
        name = step["name"]
        if progress:
            progress(f"{run['pipeline']}: step {name} ({step['kind']})", s["idx"], total)
        job_id = None
        try:
            if s["state"] == RUNNING:  # following after a restart: its job exists already
                job_id = s["job_id"]
                spec = step_exec.from_record(step["kind"], step.get("resolved") or {})
            else:
                job_id, spec = _submit_step(conn, run, definition, step, s["idx"], outputs,
                                            executor)
            outcome = executor.wait(job_id, step.get("timeout"))
        except Exception as exc:  # noqa: BLE001 - a step's failure is reported, never raised
            outcome = StepOutcome(state=FAILED, error=_error_text(exc))
        if not outcome.ok:
            error = outcome.error or f"the job ended {outcome.state}"
            _set_step(conn, run_id, s["idx"], state=FAILED, error=error, finished=now())
            where = f" (job {job_id})" if job_id else ""
            _finish(conn, run_id, FAILED,
                    f"step {name!r}{where} {outcome.state if outcome.state != FAILED else 'failed'}"
                    f": {error}")
            break
        step_outputs = dict(outcome.outputs)
        try:
            step_outputs = step_outputs_of(step, outcome.outputs)
            registered = register_job_outputs(
                conn, FinishedJob.of(job_id, step["kind"], spec, run["owner"]),
                outcome.artifacts, outcome.results, run_id=run_id,
                name=step.get("register"), tf_version=outcome.tf_version)
        except Exception as exc:  # noqa: BLE001
            msg = _error_text(exc)
            _set_step(conn, run_id, s["idx"], state=FAILED, finished=now(),
                      error=f"the job succeeded but registering its outputs failed: {msg}",
                      outputs=step_outputs)
            _finish(conn, run_id, FAILED, f"step {name!r} (job {job_id}): registering its "
                                          f"outputs failed: {msg}")
            break
        models_made = [m["ref"] for m in registered if "ref" in m and m.get("job_id") == job_id]
        if models_made:
            step_outputs.setdefault("catalog_model", models_made[0])
        outputs[name] = step_outputs
        _set_step(conn, run_id, s["idx"], state=SUCCEEDED, outputs=step_outputs,
                  finished=now())
    else:
        _finish(conn, run_id, SUCCEEDED)
    if progress:
        progress(f"{run['pipeline']}: done", total, total)
    return status(conn, run_id)


def _run_row(conn, run_id: str) -> sqlite3.Row:
    row = conn.execute("SELECT * FROM catalog_runs WHERE id = ?", (run_id,)).fetchone()
    if row is None:
        raise NotFound(f"no pipeline run {run_id!r}; 'pipelines show NAME' lists recent runs")
    return row


def status(conn: sqlite3.Connection, run_id: str) -> dict[str, Any]:
    run = _run_row(conn, run_id)
    steps = []
    for s in conn.execute("SELECT * FROM catalog_run_steps WHERE run_id = ? ORDER BY idx",
                          (run_id,)):
        steps.append({"name": s["name"], "kind": s["kind"], "state": s["state"],
                      "job_id": s["job_id"], "error": s["error"],
                      "outputs": json.loads(s["outputs"]) if s["outputs"] else {},
                      # why a cached step was reused (graph_runs keeps it in the step's spec)
                      "reused": json.loads(s["spec"] or "{}").get("reused"),
                      "started": entries.iso(s["started"]), "finished": entries.iso(s["finished"])})
    models = [f"{r['name']}:{r['version']}" for r in conn.execute(
        "SELECT name, version FROM catalog_models WHERE run_id = ? ORDER BY id", (run_id,))]
    failed = next((s for s in steps if s["state"] == FAILED), None)
    hint = (f"fix the cause, then resume with: pipeline run {run['pipeline']} --from "
            f"{failed['name']}" if failed else None)
    orphaned = run["state"] == RUNNING and not driver_alive(run["driver"])
    if orphaned:
        hint = (f"the tfdesk running it stopped; continue it with: pipeline follow {run['id']}")
    return {"id": run["id"], "pipeline": run["pipeline"], "state": run["state"],
            "orphaned": orphaned,
            "owner": run["owner"], "error": run["error"], "resumed_from": run["resumed_from"],
            "created": entries.iso(run["created"]), "finished": entries.iso(run["finished"]),
            "steps": steps, "models": models, "resume_hint": hint}


def definition(conn: sqlite3.Connection, run_id: str) -> dict[str, Any]:
    """The pipeline definition a run ran (as it was when the run started)."""
    return json.loads(_run_row(conn, run_id)["definition"])


def running_count(conn: sqlite3.Connection, owner: str) -> int:
    """How many of ``owner``'s runs are going: queued or running, with a live driver (one
    each, however many steps; a run counts between its steps too)."""
    rows = conn.execute("SELECT driver FROM catalog_runs WHERE owner = ? AND state IN (?, ?)",
                        (owner, QUEUED, RUNNING)).fetchall()
    return sum(1 for r in rows if driver_alive(r[0]))


def list_runs(conn: sqlite3.Connection, pipeline: str | None = None, limit: int = 20
              ) -> list[dict[str, Any]]:
    sql = "SELECT id, pipeline, state, owner, created, finished, error FROM catalog_runs"
    params: list[Any] = []
    if pipeline:
        sql += " WHERE pipeline = ?"
        params.append(pipeline)
    sql += " ORDER BY created DESC, rowid DESC LIMIT ?"
    rows = conn.execute(sql, (*params, limit)).fetchall()
    return [{**dict(r), "created": entries.iso(r["created"]),
             "finished": entries.iso(r["finished"])} for r in rows]


def render(st: dict[str, Any]) -> str:
    """A run's report as text: one line per step, then the failure and how to resume."""
    marks = {SUCCEEDED: "ok", REUSED: "reused", FAILED: "FAILED", RUNNING: "running",
             PENDING: "pending", NOT_RUN: "not run"}
    lines = [f"pipeline {st['pipeline']} run {st['id']}: {st['state']}"
             + (f" (resumed from {st['resumed_from']})" if st["resumed_from"] else "")]
    for s in st["steps"]:
        job = f" job {s['job_id']}" if s["job_id"] else ""
        outs = ", ".join(f"{k}={v}" for k, v in s["outputs"].items()) if s["outputs"] else ""
        lines.append(f"  {marks.get(s['state'], s['state']):>8}  {s['name']} ({s['kind']})"
                     f"{job}" + (f"  -> {outs}" if outs else ""))
    if st["error"]:
        lines.append(f"error: {st['error']}")
    if st["resume_hint"]:
        lines.append(st["resume_hint"])
    if st["models"]:
        lines.append("registered models: " + ", ".join(st["models"]))
    return "\n".join(lines)


