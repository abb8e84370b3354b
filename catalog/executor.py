"""The interface pipeline runs use to execute a step. The job engine implements it (directly or
through a thin adapter in the bot), tests implement it with trivial real job kinds.

A step is one job: ``submit`` starts it and returns its id at once; ``wait`` blocks until the
job is in a terminal state and returns what it produced.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

SUCCEEDED = "succeeded"


@dataclass
class StepOutcome:
    state: str                      # succeeded | failed | cancelled | lost
    # Named outputs later steps can use as ${steps.NAME.outputs.KEY}: paths, numbers, strings.
    outputs: dict[str, Any] = field(default_factory=dict)
    error: str = ""                 # why it did not succeed, for the run's report
    # Files the job kept, as {"name", "path"} dicts; models among them are registered.
    artifacts: list[dict[str, Any]] = field(default_factory=list)
    # Validation and benchmark reports and the like ({"validation": {...}, "benchmark": {...}}).
    results: dict[str, Any] = field(default_factory=dict)
    tf_version: str = ""

    @property
    def ok(self) -> bool:
        return self.state == SUCCEEDED


@runtime_checkable
class StepExecutor(Protocol):
    def submit(self, kind: str, spec: dict[str, Any], owner: str,
               reply_to: dict[str, Any]) -> str:
        """Start a job; return its id. Raise a user-facing error for a spec it cannot take."""

    def wait(self, job_id: str, timeout: float | None = None) -> StepOutcome:
        """Block until the job ends (or ``timeout`` passes: then cancel it and report so)."""
