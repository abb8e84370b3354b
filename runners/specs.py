"""What a job of each kind is submitted with, typed: the contract between the faces (bot
handlers) and the engine. The engine stores the prepared spec as JSON (``Job.spec``); these
are what comes in. Pipeline steps, whose parameters come from YAML, still arrive as mappings
(the kind's ``prepare`` checks them).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class TrainSpec:
    script_path: str
    workers: int = 1
    gpus_per_worker: int = 0
    convert: str = "auto"
    epochs: int | None = None
    timeout: float | None = None
    tf_version: str | None = None      # what the script needs (picks an image); not a runtime
    environment: str | None = None     # a catalog environment, else the one that fits
    args: tuple[str, ...] = ()         # the script's own arguments (`train ... -- ARGS`)
    cpu: str | None = None             # Kubernetes requests/limits per worker
    memory: str | None = None
    # Read-only inputs outside the job folder (a catalog dataset's or model's path, a file the
    # operator named), checked at submit against what the asker may read (runners/inputs.py).
    inputs: tuple[str, ...] = ()
    kind = "train"


@dataclass(frozen=True)
class _ModelSpec:
    model: str
    signature: str = "serving_default"
    environment: str | None = None
    allow_code: bool = False
    settings: dict[str, Any] = field(default_factory=dict)  # [models] of tfdesk.toml


@dataclass(frozen=True)
class ConvertSpec(_ModelSpec):
    target: str = "onnx"
    precision: str = "fp32"
    calibration: str | None = None
    tolerance: str | None = None
    batch: str | None = None
    input: str | None = None
    opset: int | None = None
    shape: tuple[str, ...] = ()
    kind = "convert-model"


@dataclass(frozen=True)
class InferSpec(_ModelSpec):
    batch: str | None = None
    input: str | None = None
    gpus: int = 1
    kind = "infer"


@dataclass(frozen=True)
class EvaluateSpec(_ModelSpec):
    data: str = ""
    metrics: str | None = None
    against: str | None = None
    label: str | None = None
    output: str | None = None
    tolerance: str | None = None
    kind = "evaluate"


JobSpec = TrainSpec | ConvertSpec | InferSpec | EvaluateSpec
SPECS: dict[str, type] = {s.kind: s for s in (TrainSpec, ConvertSpec, InferSpec, EvaluateSpec)}


def as_mapping(kind: str, spec: JobSpec | dict[str, Any]) -> dict[str, Any]:
    """The spec as the kind's ``prepare`` reads it; a typed spec must be of its kind."""
    if isinstance(spec, dict):
        return dict(spec)
    if getattr(spec, "kind", None) != kind:
        raise TypeError(f"a {type(spec).__name__} is not a {kind!r} job's spec")
    out = asdict(spec)
    for key, value in out.items():
        if isinstance(value, tuple):
            out[key] = list(value)
    return out
