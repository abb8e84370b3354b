"""The engine's half of following a job: turning what a backend observed into state changes,
log lines, metrics and artifacts. Backends only look; every change is made here."""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from runners.backends import Observation
from runners.kinds import JobKind, get_kind
from runners.jobfiles import plain
from runners.local import collect_artifacts
from runners.metrics import read_csv_log
from runners.models import CANCELLED, FAILED, LOST, SUCCEEDED, TERMINAL, Event, Job, JobError
from runners.tracking import record_steps


class Observing:
    """Mixed into :class:`runners.engine.Engine` (it has ``store``, ``_readers``,
    ``_publish``, ``_wake``, ``_lock`` and ``backend``)."""

    def _catch_up(self, job: Job) -> bool:
        """Look at a job once; True when it has ended."""
        job = self.store.get(job.id)  # the stored cancel flag and handle decide
        if job.state in TERMINAL:
            return True
        try:
            seen = self.backend(job.backend).observe(job)
        except JobError as exc:
            self._publish(Event(job.id, "error", str(exc), ts=time.time()))
            return False
        return self._apply(job, seen)

    def _apply(self, job: Job, seen: Observation) -> bool:
        """Record what a backend saw; True when the job has ended."""
        if seen.handle:
            self.store.update_handle(job.id, **seen.handle)
        for note in seen.notes:
            self._note(job.id, *note)
        if seen.log is not None:
            self.ingest_log(job, seen.log)
        if not seen.ended:
            return False
        job = self.store.get(job.id)
        if job.state in TERMINAL:
            return True
        state, reason = seen.state, seen.reason
        if job.cancel_requested and state in (FAILED, LOST):
            state, reason = CANCELLED, "cancelled by request (its processes were stopped)"
        if seen.collect:
            self.collect(job)
        if state in (FAILED, SUCCEEDED):
            state, reason = self._settle(job, state, reason)
        self._finish(job, state, reason, seen.data)
        return True

    def _settle(self, job: Job, state: str, reason: str) -> tuple[str, str]:
        """How the job ended in the work's own words, when its kind can tell (a worker's
        report): kept in the job's record, shown by `job ID`, Slack and the web view."""
        kind = get_kind(job.kind)
        if kind.settle is None or not job.workdir:
            return state, reason
        try:
            log = self.log_path(job.id) if hasattr(self, "log_path") else None
            return kind.settle(Path(job.workdir), log, state, reason)
        except Exception:  # noqa: BLE001 - the backend's word stands
            return state, reason

    def _note(self, job_id: str, type_: str, message: str, data: dict | None = None) -> None:
        self._publish(self.store.append_event(Event(job_id, type_, message, data or {})))

    def ingest_log(self, job: Job, path: Path) -> None:
        """Parse new complete lines of a job's log into metrics (stored once) and log events."""
        reader = self._readers.get(job.id)
        offset = self.store.log_offset(job.id)
        start = offset
        if reader is None:  # a new engine replays the log to rebuild the reader's state
            reader = self._readers[job.id] = get_kind(job.kind).metric_reader()
            start = 0
        try:
            with open(path, "rb") as f:
                f.seek(start)
                data = f.read()
        except FileNotFoundError:
            return
        end = data.rfind(b"\n") + 1
        if end == 0:
            return
        pos = start
        for raw in data[:end].splitlines(keepends=True):
            line = raw.decode("utf-8", errors="replace")
            replay = pos < offset
            pos += len(raw)
            got = reader.feed(line)
            if got and self.store.add_metrics(job.id, got[0], got[1]):
                self._publish(Event(job.id, "metric", "", {"epoch": got[0], **got[1],
                                                           "epochs": reader.total_epochs},
                                    time.time()))
            if not replay and self._subs:
                self._publish(Event(job.id, "log", line.rstrip("\n"), ts=time.time()))
        steps = reader.take_steps() if hasattr(reader, "take_steps") else None
        if steps:  # the tracking callback's per-step values (runners/tracking.py)
            record_steps(self.store._db(), job.id, steps)
        self.store.set_log_offset(job.id, start + end)

    def collect(self, job: Job, workdir: Path | None = None) -> None:
        """Artifacts and CSVLogger metrics from the job's directory."""
        workdir = Path(workdir or job.workdir)
        kind: JobKind = get_kind(job.kind)
        if not workdir.is_dir():
            return
        arts = (kind.collect_artifacts or collect_artifacts)(workdir)
        # Whoever listed them: only plain paths of the job folder (no link anywhere on the way).
        arts = [a for a in arts if Path(a["path"]).is_absolute() or plain(workdir, a["path"])]
        self.store.set_artifacts(job.id, arts)
        for a in arts:
            if a["kind"] == "metrics" and a["path"].endswith(".csv"):
                for epoch, values in read_csv_log(workdir / a["path"]):
                    if self.store.add_metrics(job.id, epoch, values):
                        self._publish(Event(job.id, "metric", "", {"epoch": epoch, **values},
                                            time.time()))
        if arts:
            self._note(job.id, "artifact", f"{len(arts)} artifact(s)", {"artifacts": arts})

    def _finish(self, job: Job, state: str, reason: str, data: dict[str, Any] | None = None
                ) -> None:
        # Under the scheduler's lock: the slot this frees is taken (and announced) only after
        # this end is announced, so subscribers never see more jobs running than the pool has.
        with self._lock:
            self._announcing_end(job.id)
            ev = self.store.transition(job.id, state, reason, data, strict=False)
            if ev:
                self._publish(ev)
            else:
                self._end_announced(job.id)
        self._readers.pop(job.id, None)
        self._wake.set()
