"""What a job of each kind is submitted with, typed: the contract between the faces (bot
handlers, pipeline steps) and the engine. The engine stores what the kind prepared from it as
a typed stored spec (runners/stored.py, ``Job.spec``); these are what comes in.

A pipeline step's ``with:`` (YAML) becomes one of these through :func:`from_step`, which
names the step, the key and the kind's parameters when a key is not one of them.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any, Mapping

from pydantic import BeforeValidator, ConfigDict, TypeAdapter, ValidationError
from typing_extensions import Annotated

from runners.models import JobError
from runners.stored import Labels


_STRICT = ConfigDict(extra="forbid")
# A number written where text is expected (YAML reads ``tolerance: 0.001`` as a float).
Text = Annotated[str, BeforeValidator(lambda v: str(v) if isinstance(v, (int, float)) else v)]


@dataclass(frozen=True)
class TrainSpec:
    __pydantic_config__ = _STRICT
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
    labels: Labels = Labels()          # the catalog's context: pipeline run, step, project
    kind = "train"


@dataclass(frozen=True)
class _ModelSpec:
    # Model jobs copy what they read into their own folder: no ``inputs`` to bind.
    __pydantic_config__ = _STRICT
    model: str
    signature: str = "serving_default"
    environment: str | None = None
    allow_code: bool = False
    settings: dict[str, Any] = field(default_factory=dict)  # [models] of tfdesk.toml
    threads: int | None = None
    bench: dict[str, Any] = field(default_factory=dict)     # warmup, iterations, budget_s
    # TensorRT hand-off for a GPU cluster (tensorrt_image, environment): the operator's to set
    # (bot/handlers/pipeline_gate.py refuses it from Slack).
    kubernetes: dict[str, Any] = field(default_factory=dict)
    labels: Labels = Labels()


@dataclass(frozen=True)
class ConvertSpec(_ModelSpec):
    target: str = "onnx"
    precision: str = "fp32"
    calibration: str | None = None
    tolerance: Text | None = None
    batch: str | tuple[int, ...] | None = None   # "1,8,32" or the sizes
    input: str | None = None
    opset: int | None = None
    shape: tuple[str, ...] = ()
    kind = "convert-model"


@dataclass(frozen=True)
class InferSpec(_ModelSpec):
    batch: str | tuple[int, ...] | None = None
    input: str | None = None
    gpus: int | None = None   # None: [kubernetes] infer_gpus decides
    kind = "infer"


@dataclass(frozen=True)
class EvaluateSpec(_ModelSpec):
    data: str = ""
    metrics: str | tuple[str, ...] | None = None
    against: str | None = None
    label: str | None = None
    output: str | None = None
    tolerance: Text | None = None
    eval_batch: int | None = None
    kind = "evaluate"


@dataclass(frozen=True)
class ConvertScriptSpec:
    """A pipeline's ``convert-script`` step: no job (the converter only parses the script)."""
    __pydantic_config__ = _STRICT
    script: str
    target: str = "horovod"
    labels: Labels = Labels()
    kind = "convert-script"


JobSpec = TrainSpec | ConvertSpec | InferSpec | EvaluateSpec
SPECS: dict[str, type] = {s.kind: s for s in (TrainSpec, ConvertSpec, InferSpec, EvaluateSpec)}
STEP_SPECS: dict[str, type] = {**SPECS, ConvertScriptSpec.kind: ConvertScriptSpec}
StepSpec = JobSpec | ConvertScriptSpec
# A step's ``with:`` key -> the field it fills, where the two differ.
ALIASES: dict[str, dict[str, str]] = {"train": {"script": "script_path"}}
# Set by tfdesk, never by a step's ``with:``: the step's context and what it may read.
RESERVED = ("labels", "settings")
# ``with:`` keys that are the catalog's context, kept as the job's labels.
LABEL_PARAMS = ("dataset",)


def parameters(kind: str) -> list[str]:
    """What a step of ``kind`` may say in ``with:``."""
    cls = STEP_SPECS[kind]
    names = [f.name for f in fields(cls) if f.name not in RESERVED]
    return sorted({*names, *ALIASES.get(kind, {}), *LABEL_PARAMS})


def unknown_parameters(kind: str, given: Mapping[str, Any]) -> list[str]:
    """The ``with:`` keys a step of ``kind`` does not take."""
    known = set(parameters(kind)) | {"inputs"}
    return [k for k in given if k not in known]


def from_step(kind: str, values: Mapping[str, Any], labels: Labels = Labels(),
              name: str = "") -> StepSpec:
    """A pipeline step's resolved ``with:`` as the typed spec of its kind (JobError, naming
    the step and the key, when it does not fit)."""
    cls = STEP_SPECS.get(kind)
    who = f"step {name!r}" if name else f"a {kind} step"
    if cls is None:
        raise JobError(f"{who}: unknown kind {kind!r} (one of: {', '.join(STEP_SPECS)})")
    values = {ALIASES.get(kind, {}).get(k, k): v for k, v in values.items()}
    context = {k: str(values.pop(k)) for k in LABEL_PARAMS if values.get(k) is not None}
    if context:
        labels = Labels(**{**{f.name: getattr(labels, f.name) for f in fields(Labels)},
                           **context})
    bad = [k for k in values if k in RESERVED]
    if bad:
        raise JobError(f"{who}: {bad[0]!r} is set by tfdesk, not in with:")
    if "inputs" in values and "inputs" not in {f.name for f in fields(cls)}:
        values.pop("inputs")  # model jobs copy what they read; nothing is bound
    try:
        return TypeAdapter(cls).validate_python({**values, "labels": labels})
    except ValidationError as exc:
        err = exc.errors()[0]
        key = ".".join(str(p) for p in err["loc"]) or "with"
        key = {v: k for k, v in ALIASES.get(kind, {}).items()}.get(key, key)
        if err["type"] == "unexpected_keyword_argument":
            raise JobError(f"{who}: {key!r} is not a parameter of {kind} (it takes: "
                           f"{', '.join(parameters(kind))})") from None
        if err["type"] in ("missing", "missing_argument"):
            raise JobError(f"{who}: {kind} needs {key!r} in with:") from None
        raise JobError(f"{who}: with: {key}: {err['msg']}") from None


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
    out["labels"] = {k: v for k, v in out.get("labels", {}).items() if v is not None}
    return out
