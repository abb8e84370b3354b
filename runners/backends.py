"""What the engine asks of a backend, and what a backend tells it back.

A backend (local processes, a Kubernetes cluster) starts a job's work, looks at it and stops
it; it reports what it saw as an :class:`Observation`. The engine alone turns observations
into state changes, events, metrics and artifacts, whichever backend made them. What every
backend offers is the :class:`Backend` protocol.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, ClassVar, Protocol, runtime_checkable

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


@runtime_checkable
class Backend(Protocol):
    """A place jobs run. The engine calls these and nothing else."""
    name: ClassVar[str]
    # Said when a new engine picks up a running job (None: nothing to say).
    reattach_note: ClassVar[str | None]

    @staticmethod
    def render(kind: Any, spec: Any, workdir: Path, env: Any, settings: dict) -> dict[str, Any]:
        """A dry run: what would be made (``spec``: runners/stored.py). Needs no credentials
        and sends nothing."""

    def accepts(self, kind: Any) -> None:
        """Raise JobError when ``kind`` cannot run here."""

    def start(self, job: Any, kind: Any, env: Any) -> tuple[dict[str, Any], list[Note]]:
        """Start the work; (handle to remember, notes for the job's history)."""

    def observe(self, job: Any) -> Observation:
        """One look at the job."""

    def follow(self, job: Any, closed: Any, report: Callable[[Observation], bool]) -> None:
        """Look until ``report(observation)`` returns True or ``closed`` is set."""

    def cancel(self, job: Any) -> Observation | None:
        """Stop the work; None: the end comes with a later observation."""

    def delete(self, job: Any) -> None:
        """Remove what the job left on the backend."""
