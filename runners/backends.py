"""What the engine asks of a backend, and what a backend tells it back.

A backend (local processes, a Kubernetes cluster) starts a job's work, looks at it and stops
it; it reports what it saw as an :class:`Observation`. The engine alone turns observations
into state changes, events, metrics and artifacts, whichever backend made them.

Every backend has::

    name: str
    reattach_note: str | None            # said when a new engine picks up a running job
    render(kind, spec, workdir, env, settings) -> dict   # dry run; a staticmethod: needs no
                                                         # credentials and sends nothing
    accepts(kind) -> None                 # raises JobError when the kind cannot run there
    start(job, kind, env) -> (handle, [Note])
    observe(job) -> Observation           # one look
    follow(job, closed, report)           # look until report(observation) returns True
    cancel(job) -> Observation | None     # None: the end comes with a later observation
    delete(job) -> None                   # remove what the job left on the backend
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.vocabulary import BACKENDS  # noqa: F401

# (event type, message, data): "info" or "warning" lines for the job's history.
Note = tuple[str, str, dict]


@dataclass
class Observation:
    ended: bool = False
    state: str | None = None               # the final state when ended
    reason: str = ""
    data: dict[str, Any] = field(default_factory=dict)
    notes: list[Note] = field(default_factory=list)
    handle: dict[str, Any] = field(default_factory=dict)  # bookkeeping to remember (phase)
    log: Path | None = None                # the job's log, to read what is new
    collect: bool = False                  # collect artifacts before finishing
