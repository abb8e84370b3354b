"""The job engine (runners.engine.Engine) as the catalog's StepExecutor, and the subscriber
that keeps the catalog in step with every job: outputs registered when a job succeeds, and a
catalog model marked "in use" while a job reads it (so deleting it is refused).

Lives in bot/ because it is the one place allowed to know both runners and catalog.
"""
from __future__ import annotations

import logging
import secrets
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

from catalog.executor import StepOutcome
from converters.model.report import ModelReport, load_report
from core.vocabulary import TERMINAL, WAITING_GPU

log = logging.getLogger(__name__)
# Which artifact is a step's "model" output, best first: the validated conversion, a
# TensorRT plan, a trained SavedModel; then anything that is a model.
MODEL_ARTIFACTS = ("onnx", "engine", "saved_model", "keras_model")
# Job kinds whose worker writes a report.json (converters.model.report.ModelReport).
REPORTING_KINDS = ("convert-model", "infer", "evaluate")


def _abs_artifacts(job, arts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # The engine lists artifacts relative to the job's directory; the catalog keeps full paths.
    return [{"name": a.get("kind") or Path(a["path"]).name,
             "path": str(Path(job.workdir) / a["path"]), **{k: v for k, v in a.items()
                                                           if k not in ("path",)}}
            for a in arts]


def job_report(job) -> ModelReport | None:
    """A model job's report (None for kinds that write none)."""
    return load_report(job.workdir) if job.kind in REPORTING_KINDS and job.workdir else None


def runtime_tf(job) -> str:
    """The exact TensorFlow of the runtime the job ran in (its probe), never the version asked
    for: a model job's worker reports its own; a training job's runtime was probed."""
    report = job_report(job)
    if report is not None and report.tf_version:
        return report.tf_version
    runtime = getattr(job.spec, "runtime", None)  # None too when the spec cannot be read
    return str(runtime.tf_version or "") if runtime is not None else ""


def job_results(job) -> dict[str, Any]:
    """What the catalog keeps of a job's results: validation, benchmark, evaluation and the
    exact TensorFlow version."""
    report = job_report(job)
    out: dict[str, Any] = {}
    if report is not None:
        out = {k: v for k, v in (("validation", report.validation),
                                  ("benchmark", report.benchmark),
                                  ("evaluation", report.evaluation)) if v}
    out["tf_version"] = runtime_tf(job)
    return out


def _model_output(arts: list[dict[str, Any]]) -> str | None:
    from catalog.model_files import pick_model  # the one rule: a loadable model or none
    chosen = pick_model(arts, MODEL_ARTIFACTS)
    return chosen["path"] if chosen else None


class EngineSteps:
    """StepExecutor over the engine. ``convert-script`` is not a job (the converter only parses
    the script, never runs it), so it runs inline and gets an ``inline-`` id."""

    def __init__(self, engine, scratch: Path, grant=None):
        self.engine = engine
        self.scratch = Path(scratch)
        # () -> the runners.inputs.Grant of every step: catalog entries only (bot/job_inputs.py)
        self.grant = grant
        self._inline: dict[str, StepOutcome] = {}

    def submit(self, kind: str, spec, owner: str, reply_to: dict[str, Any],
               readable: tuple[str, ...] = ()) -> str:
        """``spec``: the step's typed spec (runners/specs.py); ``readable``: the earlier
        steps' outputs among its inputs, granted to it besides catalog entries."""
        if kind == "convert-script":
            return self._convert_script(spec)
        from runners.inputs import Grant
        grant = self.grant() if self.grant else Grant()
        grant = replace(grant, roots=(*grant.roots, *map(Path, readable)))
        return self.engine.submit(kind, spec, owner, reply_to, grant=grant).id

    def _convert_script(self, spec) -> str:
        from converters.script.child import convert  # its parser holds the GIL for seconds
        job_id = f"inline-{secrets.token_hex(4)}"
        try:
            src = Path(spec.script)
            result = convert(src.read_text(encoding="utf-8"), spec.target, filename=src.name)
            out = self.scratch / job_id / src.name
            out.parent.mkdir(parents=True)
            out.write_text(result.code, encoding="utf-8")
            self._inline[job_id] = StepOutcome("succeeded", {"script": str(out)},
                                               artifacts=[{"name": "script", "path": str(out)}])
        except OSError as exc:
            self._inline[job_id] = StepOutcome("failed", error=f"cannot read the script: {exc}")
        except Exception as exc:  # noqa: BLE001 - reported as the step's failure
            self._inline[job_id] = StepOutcome("failed", error=str(exc))
        return job_id

    def wait(self, job_id: str, timeout: float | None = None) -> StepOutcome:
        if job_id.startswith("inline-"):
            if job_id in self._inline:
                return self._inline.pop(job_id)
            # An inline step exists only in the process that ran it.
            return StepOutcome("lost", error="tfdesk stopped while this step ran inline")
        from runners.models import UnknownJob
        try:
            job = self.engine.wait(job_id, timeout=timeout)
        except UnknownJob:
            return StepOutcome("lost", error=f"job {job_id} no longer exists (deleted?)")
        if job.state not in TERMINAL:
            self.engine.cancel(job_id)
            return StepOutcome("failed", error=f"timed out after {timeout:g} s; cancelled")
        arts = _abs_artifacts(job, self.engine.artifacts(job_id))
        outputs: dict[str, Any] = {"workdir": job.workdir}
        model = _model_output(arts)
        if model:
            outputs["model"] = model
        report = job_report(job)
        results = job_results(job)
        bench = results.get("benchmark") or {}
        if isinstance(bench.get("speedups"), list) and bench["speedups"]:
            outputs["speedup"] = bench["speedups"][0]
        state, error = job.state, job.reason or ""
        if state in ("succeeded", "failed") and report is not None and report.failed:
            # The report says why in words; the job's reason is only its log's last line.
            state, error = "failed", report.error_text
            if report.status == "validation_failed":
                error += f"; see {job.workdir}/report.json"
        elif state == WAITING_GPU or (report is not None and report.status == "needs_gpu"):
            # No engine yet: the step's model does not exist, so the run cannot go on.
            state = "failed"
            error = job.reason or "the TensorRT engine needs a GPU runner"
        return StepOutcome(state, outputs, error=error, artifacts=arts,
                           results=results, tf_version=results.get("tf_version", ""))


def engine_executor(ctx):
    from bot.job_inputs import catalog_grant
    from bot.paths import Areas
    engine = ctx.services.engine
    return EngineSteps(engine, Path(engine.jobs_dir) / "pipeline-steps",
                       lambda: catalog_grant(ctx.services.catalog, Areas.of(ctx.config)))


def _model_read(conn, ref: str | None):
    """The catalog model a job read (``ref``: a model job's ``model``), if it names one."""
    from catalog.outputs import find_model
    if not ref:
        return None
    try:
        return find_model(conn, str(ref))
    except Exception:  # noqa: BLE001 - a spec naming no catalog model reads nothing of ours
        return None


def register_outputs_subscriber(engine, state_path: Path) -> int:
    """Subscribe to the engine so that every job keeps the catalog current: a job that reads a
    catalog model marks it in use until it ends (deletes are refused meanwhile); a job that
    succeeds registers its outputs. Returns the subscription token."""
    from catalog import open_db, register_job_outputs, transaction
    from catalog.entries import job_users, mark_use, release_uses
    from catalog.outputs import FinishedJob
    conn = open_db(state_path)
    lock = threading.Lock()  # one connection, used from the event thread and at start

    def on_event(ev) -> None:
        if ev.type != "state":
            return
        state = ev.data.get("state")
        with lock:
            if state == "queued":
                try:
                    job = engine.get(ev.job_id)
                except Exception:  # noqa: BLE001 - deleted meanwhile
                    return
                row = _model_read(conn, getattr(job.spec, "model", None))
                if row is not None:
                    with transaction(conn):
                        mark_use(conn, "model", row["id"], f"job {job.id}")
                return
            if state not in TERMINAL:
                return
            with transaction(conn):
                release_uses(conn, f"job {ev.job_id}")
            if state != "succeeded":
                return
            job = engine.get(ev.job_id)
            report = job_report(job)
            if report is not None and report.status != "succeeded":
                return  # exited 0 without doing what was asked (validation, no GPU): no model
            arts = _abs_artifacts(job, engine.artifacts(ev.job_id))
            results = job_results(job)
            labels = job.spec.labels  # the catalog's context: run, step, register name
            register_job_outputs(conn, FinishedJob.of(job.id, job.kind, job.spec, job.owner,
                                                      job.state), arts, results,
                                 run_id=labels.pipeline_run, name=labels.register,
                                 tf_version=results["tf_version"])

    token = engine.subscribe(on_event)
    # Jobs that ended while no tfdesk ran (or before this subscription): free what they held.
    with lock:
        for user in job_users(conn):
            try:
                ended = engine.get(user[4:]).state in TERMINAL
            except Exception:  # noqa: BLE001 - the job is gone altogether
                ended = True
            if ended:
                with transaction(conn):
                    release_uses(conn, user)
    return token


def guard_catalog_entries(engine, state_path: Path) -> None:
    """Deleting a job is refused while a catalog entry points at its files."""
    from catalog import open_db
    from catalog.integrity import holding

    def held(job) -> list[str]:
        if not job.workdir:
            return []
        conn = open_db(state_path)
        try:
            return holding(conn, job.workdir)
        finally:
            conn.close()
    engine.delete_guards.append(held)


def _job_state(engine):
    from runners.models import UnknownJob

    def state(job_id: str):
        try:  # state and reason only: a job whose spec cannot be read has both (the engine
            job = engine.get(job_id, strict=False)  # ended it, saying why), so its run does
        except UnknownJob:
            return None
        return job.state, job.reason or ""
    return state


def reconcile_pipeline_runs(engine, state_path: Path, follow: bool = False
                            ) -> list[dict[str, Any]]:
    """Settle pipeline runs a stopped tfdesk left running (catalog.runs.reconcile), after the
    engine has reconciled its jobs. With ``follow`` (a long-running tfdesk), runs whose step
    job is still going or succeeded are taken over in background threads; otherwise they wait
    for ``pipeline follow RUN``."""
    from catalog import open_db, runs
    conn = open_db(state_path)
    try:
        found = runs.reconcile(conn, _job_state(engine))
    finally:
        conn.close()
    for r in found:
        if r["action"] == "follow" and follow:
            threading.Thread(target=_follow_quietly, args=(engine, state_path, r["run"]),
                             name=f"pipeline-{r['run']}", daemon=True).start()
    return found


def _follow_quietly(engine, state_path: Path, run_id: str) -> None:
    from catalog import open_db, runs
    conn = open_db(state_path)  # a thread of its own gets a connection of its own
    try:
        from bot.job_inputs import catalog_grant
        from bot.paths import Areas
        areas = Areas(Path(state_path).parent.resolve(), Path(engine.jobs_dir).resolve())
        runs.follow(conn, run_id, EngineSteps(engine, Path(engine.jobs_dir) / "pipeline-steps",
                                              lambda: catalog_grant(conn, areas)))
    except Exception:  # noqa: BLE001 - e.g. another tfdesk took it over first
        log.exception("following pipeline run %s failed", run_id)
    finally:
        conn.close()
