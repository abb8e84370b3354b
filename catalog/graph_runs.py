"""Running a pipeline as a graph (catalog/pipeline_graph.py): every step whose steps it waits
for are done starts at once, so independent steps run in parallel; a failed step is tried again
up to its ``retries:``; a cached step whose inputs and code are unchanged is reused, and the
run says which run it came from.

The run's record is kept by catalog/runs.py, handed in as ``book`` (its step updates, finish,
reference resolver and output registration), so there is one writer of a run's rows. Step jobs
are waited for in threads; every database write happens in the calling thread.
"""
from __future__ import annotations

import json
import sqlite3
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any, Callable

from catalog import entries, pipeline_graph
from catalog.executor import StepExecutor, StepOutcome, from_record, record, request
from catalog.outputs import FinishedJob
from catalog.step_outputs import declared
from catalog.store import now, transaction
from core import statedb
from runners.specs import StepSpec

SCHEMA = """
CREATE TABLE IF NOT EXISTS catalog_step_cache (
    key TEXT PRIMARY KEY,
    run_id TEXT NOT NULL,
    step TEXT NOT NULL,
    job_id TEXT,
    outputs TEXT NOT NULL,
    created REAL NOT NULL
);
"""
MIGRATIONS = statedb.Migrations("pipeline-cache")
MIGRATIONS(name="0001-step-cache")(statedb.create(SCHEMA))


def _message(exc: Exception) -> str:
    return str(exc) if getattr(exc, "user_facing", False) else f"{type(exc).__name__}: {exc}"


class GraphRun:
    def __init__(self, conn: sqlite3.Connection, run_id: str, executor: StepExecutor, book,
                 progress: Callable[[str, int, int], None] | None):
        statedb.migrate(conn, MIGRATIONS)
        self.conn, self.run_id, self.executor, self.book = conn, run_id, executor, book
        self.progress = progress
        self.run = book._run_row(conn, run_id)
        self.definition = json.loads(self.run["definition"])
        self.declared = {s["name"]: s for s in self.definition["steps"]}
        self.rows = {r["name"]: r for r in conn.execute(
            "SELECT * FROM catalog_run_steps WHERE run_id = ? ORDER BY idx", (run_id,))}
        self.order = list(self.rows)
        self.deps = pipeline_graph.dependencies(self.definition["steps"])
        self.state = {n: r["state"] for n, r in self.rows.items()}
        self.outputs = {n: json.loads(r["outputs"]) for n, r in self.rows.items()
                        if r["state"] in book.DONE_STEP and r["outputs"]}
        self.attempts: dict[str, int] = {}
        self.specs: dict[str, StepSpec] = {}
        self.readable: dict[str, tuple[str, ...]] = {}  # earlier steps' outputs it reads
        self.keys: dict[str, str | None] = {}
        self.failed: str | None = None
        self.failure = ""

    # -- the loop ---------------------------------------------------------------------------
    def drive(self) -> dict[str, Any]:
        pool = ThreadPoolExecutor(max_workers=max(1, len(self.order)),
                                  thread_name_prefix=f"pipeline-{self.run_id}")
        inflight: dict[Future, tuple[str, str]] = {}
        try:
            for name in self.order:  # following a run after a restart: its jobs exist
                row = self.rows[name]
                if row["state"] == self.book.RUNNING and row["job_id"]:
                    step = json.loads(row["spec"])
                    self.specs[name] = from_record(step["kind"], step.get("resolved") or {})
                    inflight[self._wait(pool, name, row["job_id"])] = (name, row["job_id"])
            while True:
                if self.failed is None:
                    for name, job_id in self._start_ready():
                        inflight[self._wait(pool, name, job_id)] = (name, job_id)
                if not inflight:
                    break
                done, _ = wait(list(inflight), return_when=FIRST_COMPLETED)
                for fut in done:
                    name, job_id = inflight.pop(fut)
                    try:
                        outcome = fut.result()
                    except Exception as exc:  # noqa: BLE001 - the step fails, with the reason
                        outcome = StepOutcome(state=self.book.FAILED, error=_message(exc))
                    again = self._ended(name, job_id, outcome)
                    if again:
                        inflight[self._wait(pool, name, again)] = (name, again)
        finally:
            pool.shutdown(wait=False)
        if self.failed is not None:  # once every running step has ended
            self.book._finish(self.conn, self.run_id, self.book.FAILED, self.failure)
        elif all(s in self.book.DONE_STEP for s in self.state.values()):
            self.book._finish(self.conn, self.run_id, self.book.SUCCEEDED)
        if self.progress:
            self.progress(f"{self.run['pipeline']}: done", len(self.order), len(self.order))
        return self.book.status(self.conn, self.run_id)

    def _wait(self, pool, name: str, job_id: str) -> Future:
        return pool.submit(self.executor.wait, job_id, self.declared[name].get("timeout"))

    def _ready(self) -> list[str]:
        done = self.book.DONE_STEP
        return [n for n in self.order if self.state[n] == self.book.PENDING
                and all(self.state[d] in done for d in self.deps.get(n, []))]

    def _start_ready(self) -> list[tuple[str, str]]:
        """Start every step that can start; reused steps may free more, so look again."""
        started = []
        while self.failed is None:
            ready = self._ready()
            if not ready:
                break
            for name in ready:
                job_id = self._start(name)
                if job_id:
                    started.append((name, job_id))
        return started

    # -- one step ---------------------------------------------------------------------------
    def _start(self, name: str) -> str | None:
        """Submit ``name``'s job (its id), or reuse a cached result (None)."""
        row, step = self.rows[name], json.loads(self.rows[name]["spec"])
        self.state[name] = self.book.RUNNING
        try:
            resolver = self.book._Resolver(self.conn, self.definition.get("params", {}) or {},
                                           self.outputs)
            spec = request(self.definition, step, resolver.step(name, step["with"]), self.run_id)
            self.specs[name], self.readable[name] = spec, tuple(resolver.readable)
            if self._reuse(name, step, spec):
                return None
            with transaction(self.conn):
                for kind, item_id in resolver.used:
                    entries.mark_use(self.conn, kind, item_id, f"run {self.run_id}")
            self.book._set_step(self.conn, self.run_id, row["idx"], state=self.book.RUNNING,
                                started=now(), spec={**step, "resolved": record(step["kind"], spec)})
            if self.progress:
                self.progress(f"{self.run['pipeline']}: step {name} ({step['kind']})",
                              sum(s in self.book.DONE_STEP for s in self.state.values()),
                              len(self.order))
            return self._submit(name, step, spec)
        except Exception as exc:  # noqa: BLE001 - a step's failure is reported, never raised
            self._fail(name, None, _message(exc))
            return None

    def _submit(self, name: str, step: dict[str, Any], spec: StepSpec) -> str:
        job_id = self.executor.submit(step["kind"], spec, self.run["owner"],
                                      json.loads(self.run["reply_to"]),
                                      readable=self.readable.get(name, ()))
        job_id = str(getattr(job_id, "id", job_id))
        self.book._set_step(self.conn, self.run_id, self.rows[name]["idx"], job_id=job_id)
        return job_id

    def _reuse(self, name: str, step: dict[str, Any], spec: StepSpec) -> bool:
        if not pipeline_graph.cached(self.definition, self.declared[name]):
            self.keys[name] = None
            return False
        given = record(step["kind"], spec)  # what it is given; not where it runs (labels)
        given["labels"] = {k: v for k, v in given["labels"].items()
                           if k not in pipeline_graph.CONTEXT_KEYS}
        key = self.keys[name] = pipeline_graph.step_key(step["kind"], given, _code_version())
        hit = key and self.conn.execute("SELECT * FROM catalog_step_cache WHERE key = ?",
                                        (key,)).fetchone()
        if not hit or not pipeline_graph.outputs_exist(json.loads(hit["outputs"])):
            return False
        outputs = json.loads(hit["outputs"])
        why = (f"reused from run {hit['run_id']} step {hit['step']}"
               + (f" (job {hit['job_id']})" if hit["job_id"] else "")
               + ": its inputs and code are unchanged")
        self.book._set_step(self.conn, self.run_id, self.rows[name]["idx"],
                            state=self.book.REUSED, job_id=hit["job_id"], outputs=outputs,
                            started=now(), finished=now(),
                            spec={**step, "resolved": record(step["kind"], spec), "reused": why})
        self.state[name], self.outputs[name] = self.book.REUSED, outputs
        if self.progress:
            self.progress(f"{self.run['pipeline']}: step {name} {why}",
                          sum(s in self.book.DONE_STEP for s in self.state.values()),
                          len(self.order))
        return True

    def _ended(self, name: str, job_id: str, outcome: StepOutcome) -> str | None:
        """Record a step's end; returns a new job id when the step is tried again."""
        idx = self.rows[name]["idx"]
        if not outcome.ok:
            error = outcome.error or f"the job ended {outcome.state}"
            tries = self.attempts.get(name, 0) + 1
            allowed = int(self.declared[name].get("retries", 0) or 0)
            if tries <= allowed and self.failed is None:
                self.attempts[name] = tries
                if self.progress:
                    self.progress(f"{self.run['pipeline']}: step {name} failed ({error}); "
                                  f"trying again ({tries} of {allowed})", 0, len(self.order))
                step = json.loads(self.rows[name]["spec"])
                try:
                    return self._submit(name, step, self.specs[name])
                except Exception as exc:  # noqa: BLE001
                    error = _message(exc)
            self._fail(name, job_id, error, outcome.state)
            return None
        return self._succeeded(name, job_id, outcome, idx)

    def _succeeded(self, name: str, job_id: str, outcome: StepOutcome, idx: int) -> None:
        step = json.loads(self.rows[name]["spec"])
        try:
            step_outputs = declared(step, outcome.outputs)  # what it declared, checked
        except Exception as exc:  # noqa: BLE001 - a declared output it did not write
            self._fail(name, job_id, _message(exc))
            return None
        try:
            registered = self.book.register_job_outputs(
                self.conn, FinishedJob.of(job_id, step["kind"], self.specs[name],
                                          self.run["owner"]),
                outcome.artifacts, outcome.results, run_id=self.run_id,
                name=step.get("register"), tf_version=outcome.tf_version)
        except Exception as exc:  # noqa: BLE001
            self._fail(name, job_id, "the job succeeded but registering its outputs failed: "
                       + _message(exc))
            return None
        made = [m["ref"] for m in registered if "ref" in m and m.get("job_id") == job_id]
        if made:
            step_outputs.setdefault("catalog_model", made[0])
        self.outputs[name], self.state[name] = step_outputs, self.book.SUCCEEDED
        self.book._set_step(self.conn, self.run_id, idx, state=self.book.SUCCEEDED,
                            outputs=step_outputs, finished=now())
        if self.keys.get(name):
            with transaction(self.conn):
                self.conn.execute("INSERT OR REPLACE INTO catalog_step_cache VALUES "
                                  "(?,?,?,?,?,?)", (self.keys[name], self.run_id, name,
                                                    job_id, json.dumps(step_outputs,
                                                                       default=str), now()))
        return None

    def _fail(self, name: str, job_id: str | None, error: str, state: str | None = None):
        self.state[name] = self.book.FAILED
        self.book._set_step(self.conn, self.run_id, self.rows[name]["idx"],
                            state=self.book.FAILED, error=error, finished=now())
        if self.failed is None:  # the first failure is the run's; steps running go on
            self.failed = name
            where = f" (job {job_id})" if job_id else ""
            how = state if state and state != self.book.FAILED else "failed"
            self.failure = f"step {name!r}{where} {how}: {error}"


def _code_version() -> str:
    """tfdesk's own version: a step reused must have been run by the same code."""
    try:
        from importlib.metadata import version
        return version("tfdesk")
    except Exception:  # noqa: BLE001 - not installed as a distribution
        return ""


def drive(conn: sqlite3.Connection, run_id: str, executor: StepExecutor, book,
          progress: Callable[[str, int, int], None] | None = None) -> dict[str, Any]:
    """Run the run's pending steps as a graph; returns ``book.status``."""
    return GraphRun(conn, run_id, executor, book, progress).drive()


__all__ = ["GraphRun", "MIGRATIONS", "drive"]
