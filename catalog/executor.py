"""The interface pipeline runs use to execute a step. The job engine implements it (directly or
through a thin adapter in the bot), tests implement it with trivial real job kinds.

A step is one job: ``submit`` starts it and returns its id at once; ``wait`` blocks until the
job is in a terminal state and returns what it produced. What a step submits is typed, the same
spec a face submits (runners/specs.py): :func:`request` makes it from the step's resolved
``with:`` and the run's context.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from runners import specs
from runners.stored import Labels

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


def request(definition: dict[str, Any], step: dict[str, Any], resolved: dict[str, Any],
            run_id: str) -> specs.StepSpec:
    """A step's typed spec: its resolved ``with:`` (its ``inputs`` included), the step's
    environment, and the run's context as labels (pipeline run, step, project, register)."""
    values = dict(resolved)
    if step.get("environment"):
        values.setdefault("environment", step["environment"])
    labels = Labels(pipeline_run=run_id, step=step["name"], project=definition.get("project"),
                    register=step.get("register"))
    return specs.from_step(step["kind"], values, labels, step["name"])


def record(kind: str, spec: specs.StepSpec) -> dict[str, Any]:
    """The spec as the run's record keeps it (JSON); :func:`from_record` reads it back."""
    return specs.as_mapping(kind, spec)


def from_record(kind: str, data: dict[str, Any]) -> specs.StepSpec | None:
    """None for a step recorded without its spec (nothing to read back)."""
    if not data:
        return None
    values = dict(data)
    labels = {k: v for k, v in (values.pop("labels", None) or {}).items() if v is not None}
    for key in ("pipeline_run", "step", "project", "register"):  # a record before typed specs
        if key in values:
            labels.setdefault(key, values.pop(key))
    return specs.from_step(kind, values, Labels(**labels))


@runtime_checkable
class StepExecutor(Protocol):
    def submit(self, kind: str, spec: specs.StepSpec, owner: str, reply_to: dict[str, Any],
               readable: tuple[str, ...] = ()) -> str:
        """Start a job; return its id. Raise a user-facing error for a spec it cannot take.
        ``readable``: the earlier steps' outputs among its ``inputs``, which its job is given
        besides catalog entries (catalog/step_outputs.py)."""

    def wait(self, job_id: str, timeout: float | None = None) -> StepOutcome:
        """Block until the job ends (or ``timeout`` passes: then cancel it and report so)."""
