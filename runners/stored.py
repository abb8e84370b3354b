"""A job's spec as the engine stores it (``Job.spec``): typed per kind, and the one codec that
writes it to the state database and reads it back.

What comes in is a request (runners/specs.py); the job kind's ``prepare`` turns it into what
the work runs with, and the engine makes a :class:`StoredTrain` or :class:`StoredModelJob` of
that, with what every job has (:class:`Stored`: inputs, labels, runtime). Backends, kinds,
handlers and the catalog read its attributes.

The row is JSON: the fields at top level (SQL and old readers look at ``$.labels`` and
``$.runtime``), tagged with ``kind`` and the format's version ``v``. The invariant, enforced in
:func:`load` alone: a spec handed out is valid for its kind. A row of the current version must
match exactly (unknown keys are an error); a row without a version was written by tfdesk before
specs were typed and is read tolerantly (keys that version did not have are dropped, missing
ones take their defaults); anything else is refused with :class:`UnreadableSpec`, naming the
job and the fault.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field, fields, replace
from typing import Any, Literal, Mapping, Union

from pydantic import ConfigDict, Field, TypeAdapter, ValidationError
from typing_extensions import Annotated

from runners.models import JobError

VERSION = 2  # 1: the untyped dicts before this module (rows without "v")
MODEL_KINDS = ("convert-model", "infer", "evaluate")


class UnreadableSpec(JobError):
    """A stored job row that cannot be read: its spec is not a valid spec of its kind, or its
    handle or reply address is not a JSON object (damaged, or from another tfdesk).
    ``job_id``: the job, when the store knows it (the engine ends that job)."""

    def __init__(self, message: str, job_id: str = ""):
        super().__init__(message)
        self.job_id = job_id


@dataclass(frozen=True)
class Labels:
    """The submitter's context, kept as given: which pipeline run and step a job is, which
    project it belongs to, the catalog name its model is registered under, its dataset."""
    __pydantic_config__ = ConfigDict(extra="forbid")
    pipeline_run: str | None = None
    step: str | None = None
    project: str | None = None
    register: str | None = None
    dataset: str | None = None


@dataclass(frozen=True)
class Runtime:
    """The environment a job runs in (runners/runtimes.py summary), enough to run it again."""
    __pydantic_config__ = ConfigDict(extra="forbid")
    name: str | None = None
    kind: str | None = None            # "local" (an interpreter) or "image"
    python: str | None = None
    image: str | None = None
    tf_version: str | None = None
    keras_version: str | None = None
    horovod_version: str | None = None


@dataclass(frozen=True)
class Stored:
    """What every stored job has besides its kind's own fields."""
    __pydantic_config__ = ConfigDict(extra="forbid")
    v: Literal[2] = 2                  # the format's version (VERSION)
    # Read-only inputs outside the job folder (runners/inputs.py), and the private copies of
    # those inside job folders: input -> copy relative to the job folder.
    inputs: tuple[str, ...] = ()
    input_copies: dict[str, str] = field(default_factory=dict)
    labels: Labels = Labels()
    runtime: Runtime | None = None
    runtime_why: str = ""
    tf_version: str | None = None      # the TensorFlow the work needs (picks an image)
    timeout: float | None = None       # wall-clock seconds, then the job is stopped

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, as the row holds it (``--json`` shows this)."""
        return dump(self)  # type: ignore[arg-type]


@dataclass(frozen=True)
class StoredTrain(Stored):
    kind: Literal["train"] = "train"
    script: str = "script.py"          # the script as run, in the job folder
    script_name: str = "script.py"     # the user's file name
    workers: int = 1
    launcher: str = "python"           # python | horovod | tf-distribute
    converted_to: str | None = None
    conversion_report: str = ""
    script_sha256: str = ""            # the script as given, before any conversion
    epochs: int | None = None
    gpus_per_worker: int = 0
    args: tuple[str, ...] = ()
    cpu: str | None = None             # Kubernetes requests/limits per worker
    memory: str | None = None

    def resources(self) -> dict[str, str]:
        """Requests and limits given for this job (core/pods.py reads them)."""
        return {k: v for k, v in (("cpu", self.cpu), ("memory", self.memory)) if v}


# The model worker's spec (converters/model/jobspec.py writes it as spec.json): these fields.
@dataclass(frozen=True)
class StoredModelJob(Stored):
    kind: Literal["convert-model", "infer", "evaluate"] = "convert-model"
    id: str = ""
    mode: str = "convert"
    name: str = ""
    model: str = ""                    # as the asker named it (a path or catalog model)
    source: dict[str, Any] = field(default_factory=dict)   # the model as identified (intake)
    target: str = "onnx"
    precision: str = "fp32"
    tolerance: dict[str, float] = field(default_factory=dict)
    batches: tuple[int, ...] = ()
    input: str | None = None
    calibration: str | None = None
    signature: str = "serving_default"
    allow_code: bool = False
    opset: int | None = None
    gpus: int | None = None            # None: [kubernetes] infer_gpus decides
    input_origin: str | None = None
    dim_default: int = 16
    threads: int = 0
    min_agreement: float = 0.99
    bench: dict[str, Any] = field(default_factory=dict)
    kubernetes: dict[str, Any] = field(default_factory=dict)
    trt_shapes: dict[str, Any] = field(default_factory=dict)
    # evaluate
    data: str | None = None
    data_origin: str | None = None
    metrics: tuple[str, ...] = ()
    label_key: str | None = None
    output: str | None = None
    eval_batch: int = 256
    against: dict[str, Any] | None = None
    against_origin: str | None = None

    def worker_spec(self) -> dict[str, Any]:
        """What the model worker reads (spec.json): the fields that are not the engine's."""
        mine = {f.name for f in fields(Stored)} | {"kind"}
        return {k: v for k, v in dump(self).items() if k not in mine}


StoredSpec = Union[StoredTrain, StoredModelJob]
_ADAPTER: TypeAdapter = TypeAdapter(Annotated[StoredSpec, Field(discriminator="kind")])
_CLASSES = {"train": StoredTrain, **{k: StoredModelJob for k in MODEL_KINDS}}


def _problem(exc: ValidationError) -> str:
    bits = []
    for err in exc.errors()[:5]:
        where = ".".join(str(p) for p in err["loc"][1:] or err["loc"]) or "(top level)"
        bits.append(f"{where}: {err['msg']}")
    return "; ".join(bits)


def build(kind: str, values: Mapping[str, Any]) -> StoredSpec:
    """The stored spec of a new ``kind`` job from what its ``prepare`` and the engine give;
    a key that is no field of the kind is a programming error, said so."""
    if kind not in _CLASSES:
        raise UnreadableSpec(f"no stored spec for job kind {kind!r}")
    try:
        return _ADAPTER.validate_python({**values, "kind": kind})
    except ValidationError as exc:
        raise UnreadableSpec(f"a {kind} job's spec is not valid: {_problem(exc)}") from None


def dump(spec: StoredSpec) -> dict[str, Any]:
    """The spec as JSON-ready data, versioned (the row's content, and what --json shows)."""
    return _ADAPTER.dump_python(spec, mode="json")


def dumps(spec: StoredSpec) -> str:
    if not isinstance(spec, (StoredTrain, StoredModelJob)):
        raise TypeError(f"the job store keeps typed specs, not {type(spec).__name__}")
    return json.dumps(dump(spec))


def legacy(kind: str, data: Mapping[str, Any]) -> StoredSpec:
    """A spec written before specs were typed (a plain dict): the keys this version knows,
    the labels it knows; everything else was never read and is dropped."""
    cls = _CLASSES.get(kind)
    if cls is None:
        raise UnreadableSpec(f"no stored spec for job kind {kind!r}")
    known = {f.name for f in fields(cls)} - {"kind", "v"}
    values = {k: v for k, v in data.items() if k in known and v is not None}
    label_keys = {f.name for f in fields(Labels)}
    given = data.get("labels") if isinstance(data.get("labels"), Mapping) else {}
    # Context once kept at the top (pipeline steps before labels), now always in labels.
    lifted = {k: data[k] for k in label_keys if data.get(k) is not None and k not in known}
    labels = {k: str(v) for k, v in {**lifted, **given}.items()
              if k in label_keys and v is not None}
    if labels or "labels" in values:
        values["labels"] = labels
    if isinstance(values.get("runtime"), Mapping):
        values["runtime"] = {k: v for k, v in values["runtime"].items()
                             if k in {f.name for f in fields(Runtime)}}
    return build(kind, values)


def load(kind: str, text: str | bytes, job_id: str = "") -> StoredSpec:
    """A row's spec, valid for ``kind`` (the jobs table's column), or UnreadableSpec."""
    who = f"job {job_id}" if job_id else f"a {kind} job"
    try:  # a current row, parsed and checked in one pass
        spec = _ADAPTER.validate_json(text)
        if spec.kind == kind:
            return spec
    except ValidationError:
        pass  # an old row, or a bad one: read below, which says what is wrong
    try:
        data = json.loads(text)
    except (TypeError, ValueError) as exc:
        raise UnreadableSpec(f"{who}: its stored spec is not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise UnreadableSpec(f"{who}: its stored spec is not a JSON object")
    version = data.pop("v", None)
    try:
        if version is None:
            return legacy(kind, data)
        if version != VERSION:
            raise UnreadableSpec(f"{who}: its stored spec has format version {version!r}; this "
                                 f"tfdesk reads version {VERSION} and untyped rows")
        data["v"] = version
        if data.get("kind") != kind:
            raise UnreadableSpec(f"{who}: its stored spec is for a {data.get('kind')!r} job, "
                                 f"but the job is {kind!r}")
        return _ADAPTER.validate_python(data)
    except ValidationError as exc:
        raise UnreadableSpec(f"{who}: its stored spec is not valid: {_problem(exc)}") from None
    except UnreadableSpec as exc:
        if str(exc).startswith(who):
            raise
        raise UnreadableSpec(f"{who}: {exc}") from None


def runtime_of(summary: Mapping[str, Any] | None) -> Runtime | None:
    """A runtimes.summary dict as a Runtime."""
    return Runtime(**{f.name: summary.get(f.name) for f in fields(Runtime)}) if summary else None


__all__ = ["Labels", "MODEL_KINDS", "Runtime", "Stored", "StoredModelJob", "StoredSpec",
           "StoredTrain", "UnreadableSpec", "VERSION", "build", "dump", "dumps", "legacy",
           "load", "replace", "runtime_of"]
