"""The job kind registry: what a kind of job runs, locally and on Kubernetes.

Training registers itself here; other packages add kinds (``convert-model``, ``infer``) the
same way::

    register_kind(JobKind(
        name="infer",
        prepare=lambda spec, workdir, env: spec,          # validate, write inputs, return spec
        local_plan=lambda spec, workdir, env: LocalPlan([Proc([env.runner_python, "-m", ...])]),
        k8s_manifests=None,                                # or a builder -> list of manifests
    ))
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from runners.metrics import MetricReader
from runners.models import JobError


@dataclass
class RunnerEnv:
    """Where work runs: the runner environment's interpreter and its bin directory."""
    runner_python: Path

    @property
    def bin_dir(self) -> Path:
        return Path(self.runner_python).parent


@dataclass
class Proc:
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    name: str = ""


@dataclass
class LocalPlan:
    """Processes to start together in one process group; with more than one, each output line
    is prefixed with the process's rank (``[0] ...``) and any failure stops the others.
    ``code``: folders of tfdesk's own code the processes import, mounted read-only in the
    job's sandbox (the runtime of ``argv[0]`` is found by the sandbox itself)."""
    procs: list[Proc]
    code: list[Path] = field(default_factory=list)
    # The job's read-only inputs (its spec's ``inputs``, checked at submit: runners/inputs.py),
    # bound at the same paths; set by the local backend for every kind.
    inputs: list[Path] = field(default_factory=list)
    # Inputs from job folders: path shown in the sandbox -> its private copy in this job's folder.
    input_copies: dict[str, Path] = field(default_factory=dict)


@dataclass
class K8sPlan:
    """Objects to create, in order; ``main`` is the one whose status decides the job's state
    (an MPIJob or a batch Job); ``log_selector`` picks the pod whose log is the job's log."""
    manifests: list[dict[str, Any]]
    main: dict[str, Any]
    log_selector: str
    # Pods of every worker, when there are several whose failure should be reported by name.
    worker_selector: str = ""
    # The job's inputs, placed on the shared volume before the objects are made (a dry run
    # places nothing): local file or folder -> its path where that volume is mounted here.
    volume_files: dict[str, str] = field(default_factory=dict)


@dataclass
class JobKind:
    name: str
    # Validate the request (a mapping), write what the job needs into its working directory,
    # return the fields of its stored spec (runners/stored.py builds it). Raise JobError for
    # bad input. Every other callable here is given the typed stored spec.
    prepare: Callable[[dict, Path, RunnerEnv], dict]
    local_plan: Callable[[dict, Path, RunnerEnv], LocalPlan]
    metric_reader: Callable[[], MetricReader] = MetricReader
    # Files in the working directory worth listing; the default lists everything the job wrote.
    collect_artifacts: Callable[[Path], list[dict[str, Any]]] | None = None
    # (job_id, spec, workdir, k8s settings) -> K8sPlan; None: this kind runs only locally.
    k8s_manifests: Callable[..., K8sPlan] | None = None
    # A one-line summary for listings, e.g. "train.py, 2 workers, horovod".
    describe: Callable[[dict], str] = lambda spec: ""
    # What the work needs of its runtime (runners/runtimes.py Needs), from the submitted spec,
    # read statically; None: anything fits.
    needs: Callable[[dict], Any] | None = None
    # How the job ended in the work's own words, read once its processes are gone:
    # (workdir, its log in tfdesk's records, state, reason) -> (state, reason). A failed job's real cause (a worker's
    # report) instead of "exit status N"; a job that exited 0 without the result it was asked
    # for (a TensorRT engine without a GPU) waiting. None: the backend's word stands.
    settle: Callable[[Path, Path | None, str, str], tuple[str, str]] | None = None


KINDS: dict[str, JobKind] = {}


def register_kind(kind: JobKind) -> JobKind:
    KINDS[kind.name] = kind
    return kind


def get_kind(name: str) -> JobKind:
    """A registered kind (the built-in ones are registered by runners.builtins.load_kinds,
    which the engine calls when it is made)."""
    try:
        return KINDS[name]
    except KeyError:
        raise JobError(f"unknown job kind {name!r}; known: {', '.join(sorted(KINDS))}") from None
