"""The job engine: submission, a bounded pool with per-owner limits, following running jobs,
publishing events to subscribers, and reconciling with reality when it starts.

Several engines may share one state database (a long-running ``tfdesk serve`` and one-shot
``tfdesk`` commands): claiming a job and every state change are single transactions, so a job
is started once and finished once whichever engine sees it first.
"""
from __future__ import annotations

import itertools
import logging
import os
import queue
import secrets
import shutil
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from runners.backends import BACKENDS, Backend
from runners.builtins import backend_class, default_runner_python, load_kinds
from runners.inputs import Grant, place as place_inputs, resolve as resolve_inputs
from runners.kinds import JobKind, RunnerEnv, get_kind
from runners.local import LocalBackend, paths, pid_alive, proc_start_time
from runners.metrics import MetricReader
from runners.models import (CANCELLED, FAILED, QUEUED, RUNNING, STARTING, TERMINAL,
                            WAITING_GPU, Event, Job, JobError)
from runners.announcing import Announcing
from runners.observing import Observing
from runners.reattach import Reattaching
from runners.specs import JobSpec, as_mapping
from runners.store import JobStore, new_job_id
from runners.stored import Runtime, UnreadableSpec, build, runtime_of

log = logging.getLogger(__name__)


@dataclass
class EngineConfig:
    state_path: Path
    jobs_dir: Path
    runner_python: Path
    local_workers: int = 2          # local jobs running at once (the bounded pool)
    per_owner: int = 2              # running jobs per owner, local and cluster together
    kubernetes: dict[str, Any] = field(default_factory=dict)  # the [kubernetes] config section
    kubernetes_workers: int = 50    # cluster jobs tfdesk keeps in flight
    grace_s: float = 10.0           # SIGTERM -> SIGKILL on cancel and timeout
    follow: bool = True             # follow running jobs in threads (live metrics, auto-finish)
    poll_s: float = 0.2             # how often a local job's log is read while it runs
    schedule_s: float = 0.5         # how often the scheduler looks for new and ended work
    lease_s: float = 3.0            # a scheduler silent this long is gone; another takes over
    job_user: str | None = None     # [runner] user: who local jobs run as (None: tfdesk-job as root)
    runner: dict[str, Any] = field(default_factory=dict)  # [runner]: sandbox, limits, network
    # The catalog's environments as plain dicts (runners/runtimes.py); None: every job runs
    # with runner_python and no runtime is chosen.
    environments: Callable[[], list[dict[str, Any]]] | None = None


Subscriber = Callable[[Event], None]


class Engine(Observing, Reattaching, Announcing):
    def __init__(self, config: EngineConfig):
        load_kinds()  # the built-in job kinds, registered once
        self.config = config
        self.store = JobStore(config.state_path)
        self.jobs_dir = Path(config.jobs_dir)
        self.jobs_dir.mkdir(parents=True, exist_ok=True)
        self.env = RunnerEnv(Path(config.runner_python))
        self.local = LocalBackend(grace_s=config.grace_s, user=config.job_user,
                                  poll_s=config.poll_s, settings=config.runner)
        self._backends: dict[str, Backend] = {"local": self.local}
        # job -> what still points at its files ("model m:1"); delete refuses while any does.
        self.delete_guards: list[Callable[[Job], list[str]]] = []
        self._subs: dict[int, tuple[Subscriber, str | None]] = {}
        self._sub_ids = itertools.count(1)
        self._events: queue.Queue = queue.Queue()
        # Jobs this engine is ending whose end its subscribers have not all seen yet: wait()
        # returns only once they have (the catalog has registered a training's model by then).
        self._announcing: set[str] = set()
        self._announced = threading.Condition(threading.Lock())
        self._readers: dict[str, MetricReader] = {}
        self._followers: dict[str, threading.Thread] = {}
        self._lock = threading.RLock()
        self._changed = threading.Condition(threading.Lock())
        self._closed = threading.Event()
        self._wake = threading.Event()
        self._dispatcher: threading.Thread | None = None
        self._scheduler_thread: threading.Thread | None = None
        self.started = False
        # Who claims a job is recorded with it, so another engine can tell a job that is
        # being started (its claimant lives) from one whose claimant died mid-start.
        self.me = {"pid": os.getpid(), "pid_start": proc_start_time(os.getpid()),
                   "host": os.uname().nodename, "id": secrets.token_hex(4)}

    def start(self) -> "Engine":
        """Run: reconcile what a stopped tfdesk left, follow every active job (whoever
        started it), and schedule queued jobs while this engine holds the scheduler lease
        (one scheduler per state database). Constructing an engine starts nothing."""
        if self.started:
            return self
        self.started = True
        self.local.note_user()
        self._ensure_dispatcher()
        self.reconcile()
        self._tick()
        if self.config.follow:
            self._scheduler_thread = threading.Thread(target=self._scheduler, daemon=True,
                                                      name="jobs-scheduler")
            self._scheduler_thread.start()
        return self

    # -- public API ------------------------------------------------------------------------------
    def submit(self, kind: str, spec: JobSpec | dict[str, Any], owner: str = "local",
               reply_to: dict | None = None, backend: str = "local", max_active: int | None = None,
               also_active: int = 0, grant: Grant = Grant()) -> Job:
        """Queue a job; ``max_active``: the owner's active-job limit (JobStore.create);
        ``grant``: what the asker may give it to read (its ``inputs``: runners/inputs.py)."""
        spec = self._inputs(as_mapping(kind, spec), grant)
        k = get_kind(kind)
        self.backend(backend).accepts(k)  # fails now, clearly, when it cannot run this kind
        choice = self.runtime(kind, spec, backend)  # refused here when nothing fits
        # Prepare in a scratch directory first: bad input is refused before a job exists.
        scratch = self.jobs_dir / f".new-{secrets.token_hex(4)}"
        job_id = new_job_id()  # known while preparing: what the job writes names it
        try:
            scratch.mkdir(parents=True)
            prepared = self._prepare(k, {**spec, "job_id": job_id}, scratch, choice)
            labels = {str(a): str(b) for a, b in dict(spec.get("labels") or {}).items()}
            stored = build(kind, {**prepared, "labels": labels,  # the submitter's, as given
                                  **place_inputs(spec["inputs"], self.jobs_dir, scratch)})
            job, ev = self.store.create(kind, stored, owner, reply_to or {"kind": "terminal"},
                                        backend, self.jobs_dir, max_active, also_active,
                                        job_id=job_id)
            scratch.rename(job.workdir)
        except BaseException:
            shutil.rmtree(scratch, ignore_errors=True)
            raise
        self._publish(ev)
        if choice.why:
            self._publish(self.store.append_event(Event(
                job.id, "info", f"environment: {choice.why}", {"runtime": choice.summary})))
        self._kick(job.id)
        return self.store.get(job.id)

    def runtime(self, kind: str, spec: dict[str, Any], backend: str = "local"):
        """The job's environment (runners/runtimes.py Choice): the one named, else the one
        that fits what the work needs; raises JobError when none fits."""
        from runners.runtimes import resolve
        return resolve(get_kind(kind), spec, backend, self.config.environments)

    def _inputs(self, spec: dict[str, Any], grant: Grant) -> dict[str, Any]:  # never our folders
        g = grant.of_engine(self.jobs_dir, Path(self.config.state_path).parent)
        return {**spec, "inputs": list(resolve_inputs(spec.get("inputs"), g))}

    def _prepare(self, k: JobKind, spec: dict, workdir: Path, choice) -> dict[str, Any]:
        """What the kind prepared, with its environment: the stored spec's own fields."""
        return choice.stamp(k.prepare(choice.job_spec(spec), workdir,
                                      self.runner_env(runtime_of(choice.summary))))

    def runner_env(self, runtime: Runtime | None) -> RunnerEnv:
        """The interpreter a local job runs with: its environment's, else the configured one."""
        if runtime is not None and runtime.kind == "local" and runtime.python:
            return RunnerEnv(Path(runtime.python))
        return self.env

    def dry_run(self, kind: str, spec: JobSpec | dict[str, Any], backend: str = "local",
                grant: Grant = Grant()) -> dict[str, Any]:
        """What ``submit`` would run, not running it: local command lines or manifests."""
        spec = self._inputs(as_mapping(kind, spec), grant)
        k = get_kind(kind)
        if backend not in BACKENDS:
            raise JobError(f"unknown backend {backend!r}; use one of {', '.join(BACKENDS)}")
        choice = self.runtime(kind, spec, backend)
        scratch = self.jobs_dir / f".dry-{secrets.token_hex(4)}"
        try:
            scratch.mkdir(parents=True)
            stored = build(kind, {**self._prepare(k, spec, scratch, choice), "inputs": spec["inputs"]})
            # Rendered from configuration alone: a dry run needs no cluster and no credentials.
            plan = backend_class(backend).render(k, stored, scratch, self.runner_env(stored.runtime),
                                                 self.settings(backend))
            if choice.why:
                plan["text"] = f"# environment: {choice.why}\n" + plan["text"]
            return {"backend": backend, "spec": stored, **plan}
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    def get(self, job_id: str, strict: bool = True) -> Job:  # strict=False: spec may be None
        return self.store.get(job_id, strict)

    def list(self, **filters) -> list[Job]:  # states, owner, limit, skipped: JobStore.list
        return self.store.list(**filters)

    def events(self, job_id: str) -> list[Event]:
        self.store.get(job_id, strict=False)  # UnknownJob; a job that cannot be read has some
        return self.store.events(job_id)

    def metrics(self, job_id: str) -> list[dict[str, Any]]:
        return self.store.metrics(job_id)

    def artifacts(self, job_id: str) -> list[dict[str, Any]]:
        return self.store.artifacts(job_id)

    def log_path(self, job_id: str) -> Path:
        return paths(Path(self.store.get(job_id, strict=False).workdir))["log"]

    def read_log(self, job_id: str, tail: int | None = None) -> str:
        """The job's log, also when its spec cannot be read (what it wrote is outside it)."""
        job = self.store.get(job_id, strict=False)
        if job.active and job.spec is not None:
            self._catch_up(job)  # a cluster job's log is fetched by looking at it
        try:
            text = self.log_path(job_id).read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return ""
        if tail:
            text = "\n".join(text.splitlines()[-tail:]) + ("\n" if text else "")
        return text

    def subscribe(self, callback: Subscriber, job_id: str | None = None) -> int:
        """Call ``callback(event)`` for every event (or one job's), on the engine's event
        thread, in order. Events: state, metric, log (a line of output), info, warning, error,
        artifact. Returns a token for :meth:`unsubscribe`."""
        token = next(self._sub_ids)
        self._subs[token] = (callback, job_id)
        self._ensure_dispatcher()
        return token

    def unsubscribe(self, token: int) -> None:
        self._subs.pop(token, None)

    def cancel(self, job_id: str, wait: float | None = None) -> Job:
        try:
            job = self.store.get(job_id)
        except UnreadableSpec as exc:
            return self._cancel_unreadable(job_id, str(exc))
        if job.state in TERMINAL and job.state != WAITING_GPU:
            raise JobError(f"job {job_id} already {job.state}; there is nothing to cancel")
        self.store.request_cancel(job_id)
        if job.state in (QUEUED, WAITING_GPU):  # nothing runs: it only stops waiting
            why = "before it started" if job.state == QUEUED else "while it waited for a GPU"
            self._announcing_end(job_id)
            ev = self.store.transition(job_id, CANCELLED, f"cancelled {why}", strict=False)
            if ev:
                self._publish(ev)
                return self.store.get(job_id)
            self._end_announced(job_id)
            job = self.store.get(job_id)  # it started meanwhile: cancel the running job
        self._publish(Event(job_id, "info", "cancel requested", ts=time.time()))
        seen = self.backend(job.backend).cancel(job)
        if seen is not None:
            self._apply(job, seen)
        if wait is None:
            wait = self.config.grace_s + 5
        return self.wait(job_id, timeout=wait) if wait else self.store.get(job_id)

    def delete(self, job_id: str, force: bool = False) -> None:
        """Delete a job's files, cluster objects and record. Refused while anything a guard
        knows of (the catalog's entries) points at the job's files, ``force`` or not."""
        job = self.store.get(job_id, strict=False)  # a job whose spec is unreadable goes too
        held = [entry for guard in self.delete_guards for entry in guard(job)]
        if held:
            raise JobError(f"job {job_id} holds the files of {', '.join(held)}; the catalog "
                           "points there, so the job is kept. Delete those entries first "
                           "(e.g. `tfdesk models delete NAME:VERSION`) or keep the job")
        if job.active:
            if not force:
                raise JobError(f"job {job_id} is {job.state}; cancel it first or delete with --force")
            job = self.cancel(job_id)
        self.backend(job.backend).delete(job)
        if job.active:
            self._catch_up(job)
        shutil.rmtree(job.workdir, ignore_errors=True)
        shutil.rmtree(paths(Path(job.workdir))["records"], ignore_errors=True)  # tfdesk's own
        self.store.delete(job_id)
        self._readers.pop(job_id, None)
        self._publish(Event(job_id, "info", "deleted", {"deleted": True}, time.time()))

    def wait(self, job_id: str, timeout: float | None = None) -> Job:
        """Block until the job is finished (or ``timeout``); woken by state events, not by
        polling the database. Catches up by itself when no thread follows the job."""
        end = None if timeout is None else time.monotonic() + timeout
        while True:
            try:
                job = self.store.get(job_id)
            except UnreadableSpec as exc:  # it cannot be followed: ended as _active ends one
                self._end_unreadable(job_id, str(exc))
                return self.store.get(job_id, strict=False)
            if job.state in TERMINAL:
                self._await_announced(job_id, end)
                return job
            followed = job_id in self._followers and self._followers[job_id].is_alive()
            if not followed and job.state == RUNNING:
                if self._catch_up(job):
                    continue
            elif job.state == QUEUED:
                self._kick(job_id)  # no scheduler runs: the waiting process starts its job
            left = None if end is None else end - time.monotonic()
            if left is not None and left <= 0:
                return job
            with self._changed:
                self._changed.wait(min(left if left is not None else 1.0,
                                       5.0 if followed else self.config.poll_s))

    def close(self) -> None:
        """Stop following; running jobs keep running and are re-attached by the next engine."""
        self._closed.set()
        self._wake.set()
        self._events.put(None)
        for t in list(self._followers.values()):
            t.join(timeout=2)
        if self._scheduler_thread is not None:
            self._scheduler_thread.join(timeout=2)
        if self.started:
            self.store.release_lease(self.me["id"])
        if self._dispatcher is not None:
            self._dispatcher.join(timeout=2)

    # -- scheduling ------------------------------------------------------------------------------
    def schedule(self) -> None:
        """Start queued jobs while the pools have room (the scheduler's work)."""
        if self._closed.is_set():
            return
        with self._lock:
            for backend, limit in self._limits():
                while not self._closed.is_set():
                    try:
                        job = self.store.claim_next(backend, limit, self.config.per_owner,
                                                    self.me)
                    except UnreadableSpec as exc:  # claimed, and it cannot be read: ended
                        self._end_unreadable(exc.job_id, str(exc))
                        continue
                    if job is None:
                        break
                    self._publish(job._claim_event)
                    self._start(job)

    def _limits(self):
        return (("local", self.config.local_workers),
                ("kubernetes", self.config.kubernetes_workers))

    def scheduler(self) -> dict[str, Any] | None:
        """The engine holding the scheduler lease, when one is alive."""
        lease = self.store.lease()
        if lease is None or time.time() - lease["heartbeat"] > self.config.lease_s:
            return None
        if lease["host"] == self.me["host"] and not pid_alive(lease["pid"], lease["pid_start"]):
            return None  # its process is gone: no need to wait for the lease to go stale
        return lease

    def _kick(self, job_id: str) -> None:
        """A job was submitted (or is waited for): the scheduler starts it; with no scheduler
        running, this process starts it itself, within the same limits."""
        lease = self.scheduler()
        if lease is not None and lease["holder"] != self.me["id"]:
            return  # the running scheduler sees it within schedule_s
        if lease is not None:
            self.schedule()
            return
        job = self.store.get(job_id)
        limit = dict(self._limits())[job.backend]
        with self._lock:
            ev = self.store.claim(job_id, job.backend, limit, self.config.per_owner, job.owner,
                                  self.me)
            if ev is not None:
                self._publish(ev)
                self._start(self.store.get(job_id))

    def _tick(self) -> None:
        """One round of the scheduler: hold the lease and start what fits; see every active
        job (whoever started it) and follow it to its end."""
        if self.store.take_lease(self.me, self.config.lease_s, pid_alive):
            self.schedule()
        if self.config.follow:
            for job in self._active([STARTING, RUNNING]):
                if job.id not in self._followers:
                    self._look_at(job)

    def _scheduler(self) -> None:
        while not self._closed.is_set():
            self._wake.wait(self.config.schedule_s)
            self._wake.clear()
            try:
                self._tick()
            except Exception:  # noqa: BLE001 - keep scheduling whatever one job did
                log.exception("scheduling failed")

    def _start(self, job: Job) -> None:
        kind = get_kind(job.kind)
        try:
            handle, notes = self.backend(job.backend).start(
                job, kind, self.runner_env(job.spec.runtime))
            for note in notes:
                self._note(job.id, *note)
        except Exception as exc:  # noqa: BLE001 - a job that cannot start fails with the reason
            reason = str(exc) if getattr(exc, "user_facing", False) else f"{type(exc).__name__}: {exc}"
            self._finish(job, FAILED, f"could not start: {reason}")
            return
        self.store.update_handle(job.id, **handle)
        ev = self.store.transition(job.id, RUNNING, data={"handle": handle}, strict=False)
        if ev:
            self._publish(ev)
        if self.store.get(job.id).cancel_requested:  # cancelled while starting
            self.cancel(job.id, wait=0)
        self._follow(job.id)

    def _follow(self, job_id: str) -> None:
        # Only a started engine follows in threads; a one-shot command that waits for its job
        # catches up in wait() instead.
        if not (self.started and self.config.follow) or self._closed.is_set():
            return
        with self._lock:
            t = self._followers.get(job_id)
            if t is not None and t.is_alive():
                return
            t = threading.Thread(target=self._follow_loop, args=(job_id,), daemon=True,
                                 name=f"job-{job_id}")
            self._followers[job_id] = t
            t.start()

    def _follow_loop(self, job_id: str) -> None:
        try:
            job = self.store.get(job_id)
            self.backend(job.backend).follow(job, self._closed, lambda seen: self._apply(job, seen))
        except Exception:  # noqa: BLE001
            log.exception("following job %s failed", job_id)
        finally:
            self._followers.pop(job_id, None)
            self._wake.set()

    # -- events ----------------------------------------------------------------------------------
    def _ensure_dispatcher(self) -> None:
        # Events are delivered on a thread of their own, started when first needed.
        with self._lock:
            if self._dispatcher is None and not self._closed.is_set():
                self._dispatcher = threading.Thread(target=self._dispatch, name="jobs-events",
                                                    daemon=True)
                self._dispatcher.start()

    def _publish(self, ev: Event) -> None:
        if self._subs:
            self._ensure_dispatcher()
        self._events.put(ev)
        if ev.type == "state":
            with self._changed:
                self._changed.notify_all()

    def _dispatch(self) -> None:
        while True:
            ev = self._events.get()
            if ev is None:
                return
            for token, (cb, job_id) in list(self._subs.items()):
                if job_id is not None and job_id != ev.job_id:
                    continue
                try:
                    cb(ev)
                except Exception:  # noqa: BLE001 - one bad subscriber must not stop the others
                    log.exception("job event subscriber %s failed", token)
            if ev.type == "state" and ev.data.get("state") in TERMINAL:
                self._end_announced(ev.job_id)

    # -- backends --------------------------------------------------------------------------------
    def settings(self, backend: str) -> dict[str, Any]:
        return self.config.kubernetes if backend == "kubernetes" else {}

    def backend(self, name: str) -> Backend:
        """The backend ``name``, made when first used (a cluster's client needs its settings)."""
        if name not in BACKENDS:
            raise JobError(f"unknown backend {name!r}; use one of {', '.join(BACKENDS)}")
        with self._lock:
            if name not in self._backends:
                self._backends[name] = backend_class(name)(self.settings(name))
            return self._backends[name]


__all__ = ["Engine", "EngineConfig", "default_runner_python"]
