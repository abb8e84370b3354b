"""What a job is: its states, the legal moves between them, and the records the store keeps."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

# The states and their state machine are tfdesk's vocabulary, defined once.
from core.vocabulary import (ACTIVE, CANCELLED, FAILED, LOST, QUEUED, RUNNING,  # noqa: F401
                             STARTING, STATES, SUCCEEDED, TERMINAL, TRANSITIONS,
                             WAITING_GPU)


class JobError(Exception):
    """A problem the person asking should read (unknown id, illegal move, bad spec)."""
    user_facing = True


class UnknownJob(JobError):
    def __init__(self, job_id: str):
        super().__init__(f"no job {job_id!r}; 'jobs --all' lists every job")
        self.job_id = job_id


class IllegalTransition(JobError):
    pass


@dataclass
class Job:
    id: str
    kind: str
    spec: Any  # runners/stored.py StoredSpec: typed per kind, validated when read
    owner: str
    reply_to: dict[str, Any]
    backend: str
    state: str
    reason: str = ""
    created_at: float = 0.0
    started_at: float | None = None
    finished_at: float | None = None
    workdir: str = ""
    # Backend bookkeeping (pid/pgid for local, object names for Kubernetes).
    handle: dict[str, Any] = field(default_factory=dict)
    cancel_requested: bool = False

    @property
    def active(self) -> bool:
        return self.state in ACTIVE

    def to_dict(self) -> dict[str, Any]:
        return {**{k: getattr(self, k) for k in self.__dataclass_fields__},
                "spec": self.spec.to_dict() if self.spec is not None else None}  # unreadable


@dataclass
class Event:
    """Something that happened to a job. ``type`` is one of: state, metric, log, info, warning,
    error, artifact. State, info, warning, error and artifact events are stored (append-only);
    metric values are stored in their own table; log lines live in the job's log file."""
    job_id: str
    type: str
    message: str = ""
    data: dict[str, Any] = field(default_factory=dict)
    ts: float = 0.0
    seq: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"job_id": self.job_id, "type": self.type, "message": self.message,
                "data": self.data, "ts": self.ts, "seq": self.seq}

    def __str__(self) -> str:
        return f"{self.type}: {self.message}" if self.message else f"{self.type}: {json.dumps(self.data)}"
