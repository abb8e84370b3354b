"""The engine's look at what is active: when it starts (reconcile), on every scheduler round,
and for a read-only command (refresh). Each job found is followed, marked lost, or, when its
stored row cannot be read, ended here.

The invariant: every job the engine finds queued, starting or running ends in a final state
or is watched. A row this tfdesk cannot read (runners/stored.py UnreadableSpec: damaged, or
written by another tfdesk) cannot be followed, so :meth:`Reattaching._active`, the one place
the engine gathers active jobs, ends each such job with the reason naming it and the fault;
what the job started is stopped through its handle, which the row keeps outside the spec.
"""
from __future__ import annotations

import logging
import time

from runners.builtins import backend_class
from runners.local import pid_alive
from runners.models import (CANCELLED, FAILED, LOST, QUEUED, RUNNING, STARTING, TERMINAL,
                            Event, Job, JobError)

log = logging.getLogger(__name__)


class Reattaching:
    """Mixed into :class:`runners.engine.Engine` (it has ``store``, ``me``, ``backend``,
    ``_publish``, ``_finish``, ``_catch_up`` and ``_follow``)."""

    def _active(self, states, backend: str | None = None) -> list[Job]:
        """The readable jobs in ``states``; every one that cannot be read is ended first."""
        unreadable: list[tuple[str, str]] = []
        jobs = self.store.list(states=states, backend=backend, skipped=unreadable)
        for job_id, why in unreadable:
            self._end_unreadable(job_id, why)
        return jobs

    def reconcile(self) -> None:
        """Look at every job that was starting or running when tfdesk last stopped, and end
        every queued one this tfdesk cannot read (it could never start)."""
        for job in self._active([QUEUED, STARTING, RUNNING]):
            if job.state == QUEUED:
                continue
            note = backend_class(job.backend).reattach_note
            if note and job.state == RUNNING:
                self._publish(Event(job.id, "info", note, ts=time.time()))
            self._look_at(job)

    def refresh(self) -> None:
        """Notice local jobs that ended while nobody followed them (a read-only look: starts
        nothing, follows nothing); end queued jobs that cannot be read, which no engine could
        ever start (with no scheduler running, nothing else would)."""
        self._active([QUEUED])
        for job in self._active([STARTING, RUNNING], backend="local"):
            try:
                if not self._starting(job):
                    self._catch_up(job)
            except JobError as exc:
                log.warning("job %s: %s", job.id, exc)

    def _claimed_elsewhere(self, job: Job) -> bool:
        """A starting job whose claimant, another engine, lives and has made nothing yet."""
        claimant = job.handle.get("engine") or {}
        if job.state != STARTING or set(job.handle) - {"engine"} or not claimant \
                or claimant.get("id") == self.me["id"]:
            return False
        return claimant.get("host") != self.me["host"] \
            or pid_alive(claimant.get("pid"), claimant.get("pid_start"))

    def _starting(self, job: Job) -> bool:
        """True while ``job`` is still being started by a live engine; a job whose claimant
        died before its process or cluster objects existed is marked lost."""
        if job.state != STARTING or set(job.handle) - {"engine"}:  # the backend made it
            return False
        claimant = job.handle.get("engine") or {}
        if claimant.get("id") == self.me["id"] or self._claimed_elsewhere(job):
            return True
        if not claimant and time.time() - (job.started_at or 0) < 60:
            return True  # claimed by an engine that records no claimant: give it time
        self._finish(job, LOST, "tfdesk stopped before the job's process or cluster objects "
                                "existed")
        return True

    def _look_at(self, job: Job) -> None:
        try:
            if self._starting(job):
                return
            if not self._catch_up(job):
                self._follow(job.id)
        except JobError as exc:
            self._publish(Event(job.id, "error", str(exc), ts=time.time()))

    # -- jobs this tfdesk cannot read ---------------------------------------------------------
    def _end_unreadable(self, job_id: str, why: str) -> None:
        """End an active job whose row cannot be read (``why``: the store's words, naming
        the job): one never started fails; one that was started is stopped and lost. A job
        another live engine is starting is left to it (it ends the job if it cannot read it
        either)."""
        job = self.store.get(job_id, strict=False)
        if job.state in TERMINAL or self._claimed_elsewhere(job):
            return
        # Claimed, and nothing but the claim recorded: no process or object was made yet.
        if job.state == QUEUED or set(job.handle) == {"engine"}:
            state, reason = FAILED, f"tfdesk cannot read this job, so it never started: {why}"
        else:
            state = LOST
            reason = (f"tfdesk cannot read this job, so it cannot follow it: {why}; "
                      f"{self._stop_unreadable(job)}")
        if job.cancel_requested:
            state = CANCELLED
        self._finish(job, state, reason)

    def _cancel_unreadable(self, job_id: str, why: str) -> Job:
        """``cancel`` of a job that cannot be read: ended now (cancelled), as nothing could
        follow it to the end a cancel otherwise waits for."""
        job = self.store.get(job_id, strict=False)
        if job.state in TERMINAL:
            raise JobError(f"job {job_id} already {job.state}; there is nothing to cancel")
        self.store.request_cancel(job_id)
        self._end_unreadable(job_id, why)
        return self.store.get(job_id, strict=False)

    def _stop_unreadable(self, job: Job) -> str:
        """Stop what a started job runs, through its handle alone; what happened, in words."""
        h = job.handle
        if job.backend == "local" and h.get("pid"):
            what = f"its process (pid {h['pid']})"
            if not pid_alive(h.get("pid"), h.get("pid_start")):
                return f"{what} had already ended"
        elif h.get("objects"):
            what = "its cluster objects " + ", ".join(f"{k}/{n}" for k, n in h["objects"])
        else:
            return ("its handle names no process or cluster objects, so nothing was stopped: "
                    "whatever it started may still run")
        try:
            self.backend(job.backend).cancel(job)
        except Exception as exc:  # noqa: BLE001 - said in the reason; the job still ends
            return f"stopping {what} failed ({exc}): it may still run"
        return f"{what} was told to stop" if job.backend == "local" else f"{what} were deleted"
