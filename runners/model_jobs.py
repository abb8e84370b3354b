"""Job kinds ``convert-model``, ``infer`` and ``evaluate``: the work is converters.model's
worker, run in the runner environment in the job's folder. Registered on import (the models
handler imports this module)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from converters.model import jobspec
from runners.isolation import job_env
from runners.kinds import JobKind, LocalPlan, Proc, RunnerEnv, register_kind
from runners.stored import StoredModelJob


def _prepare(mode: str):
    def prepare(spec: dict, workdir: Path, env: RunnerEnv) -> dict:
        settings = spec.pop("settings", None) or {}
        # The id the user sees names the work in the hand-offs it writes (trt-build.yaml).
        job_id = spec.pop("job_id", None)
        stored = jobspec.prepare({**spec, "mode": mode, **({"id": job_id} if job_id else {})},
                                 workdir, env.runner_python, settings)
        return copy_in(stored, workdir)
    return prepare


def copy_in(stored: dict, workdir: Path) -> dict:
    """The models the asker named, copied into the job folder (the only files its sandbox
    sees besides the runtime): source/ and against/, which are never artifacts. Links are
    copied as links, never followed; the worker's spec file says where they are now."""
    moved = False
    for key in ("source", "against"):
        src = Path((stored.get(key) or {}).get("path") or "")
        if not src.is_absolute():
            continue
        dest = Path(workdir) / key / src.name
        dest.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir() and not src.is_symlink():
            shutil.copytree(src, dest, symlinks=True)
        else:
            shutil.copyfile(src, dest, follow_symlinks=False)
        stored[key] = {**stored[key], "path": str(dest.relative_to(workdir))}
        moved = True
    if moved:
        (Path(workdir) / jobspec.SPEC_FILE).write_text(json.dumps(stored, indent=2))
    return stored


# tfdesk's code the model worker imports, mounted read-only in the job's sandbox.
WORKER_CODE = ("converters", "core")


def local_plan(spec: StoredModelJob, workdir: Path, env: RunnerEnv) -> LocalPlan:
    extra = {"PYTHONPATH": str(jobspec.REPO_ROOT)}
    if spec.target == "onnx":
        extra["CUDA_VISIBLE_DEVICES"] = ""
    return LocalPlan([Proc(jobspec.worker_command(env.runner_python),
                           env=job_env(workdir, env.runner_python, extra), name="model")],
                     code=[jobspec.REPO_ROOT / name for name in WORKER_CODE])


def describe(spec: StoredModelJob) -> str:
    if spec.mode == "infer":
        return f"{spec.name}, batches {','.join(map(str, spec.batches))}"
    if spec.mode == "evaluate":
        against = spec.against_origin
        return (f"{spec.name} on {Path(spec.data_origin or '?').name}"
                + (f" vs {Path(against).name}" if against else ""))
    return f"{spec.name} -> {spec.target} {spec.precision}"


def settle(workdir: Path, log: Path | None, state: str, reason: str) -> tuple[str, str]:
    """The worker's report decides: a failure keeps the worker's own error (the log's last
    line is only progress); a TensorRT conversion without a GPU waits for a GPU runner."""
    from converters.model.report import load_report
    from runners.models import FAILED, SUCCEEDED, WAITING_GPU
    report = load_report(workdir)
    if state == FAILED and report.error_text and report.status != "succeeded":
        status = reason.split(":", 1)[0].strip()
        return FAILED, report.error_text + (f" ({status})" if status else "")
    if state == SUCCEEDED and report.status == "needs_gpu":
        why = (report.needs_gpu or {}).get("message") or (report.needs_gpu or {}).get("reason")
        return WAITING_GPU, ("the TensorRT engine needs a GPU runner"
                             + (f": {why}" if why else "")
                             + "; trt-build.yaml (attached) builds it on a GPU cluster")
    return state, reason


def collect(workdir: Path) -> list[dict]:
    """The job's files for the catalog, its chart first drawn from its report: the one place
    a model chart is drawn (the worker draws none)."""
    from converters.model.report import ensure_chart
    ensure_chart(workdir)
    return jobspec.artifacts(workdir)


def _needs(spec: dict):
    from runners.needs import model_needs
    return model_needs(spec)


CONVERT = register_kind(JobKind(name="convert-model", prepare=_prepare("convert"), needs=_needs,
                                local_plan=local_plan, describe=describe,
                                collect_artifacts=collect, settle=settle))
INFER = register_kind(JobKind(name="infer", prepare=_prepare("infer"), local_plan=local_plan, needs=_needs,
                              describe=describe, collect_artifacts=collect,
                              settle=settle))
EVALUATE = register_kind(JobKind(name="evaluate", prepare=_prepare("evaluate"), needs=_needs,
                                 local_plan=local_plan, describe=describe,
                                 collect_artifacts=collect, settle=settle))


# -- Kubernetes: infer as a batch/v1 Job with GPUs --------------------------------------------
CODE_DIR = "/tfdesk/code"
DEFAULT_INFER_IMAGE = "tensorflow/tensorflow:2.15.0-gpu"


def _volume(settings: dict) -> Path:
    """Where the shared volume ([kubernetes] pvc) is mounted here (``pvc_local_path``): the
    cluster reads a job's inputs from it."""
    from runners.models import JobError
    local = settings.get("pvc_local_path")
    if not settings.get("pvc") or not local:
        raise JobError("infer on Kubernetes reads the model from the shared volume: set pvc and "
                       "pvc_local_path (where that volume is mounted here) under [kubernetes]")
    return Path(local).expanduser()


def infer_k8s(job_id: str, spec: StoredModelJob, workdir: Path, settings: dict):
    import json

    from core import pods
    from runners.kinds import K8sPlan
    from runners.kubernetes.manifests import labels, object_name
    from runners.models import JobError

    ns = settings.get("namespace", "default")
    name = object_name(job_id)
    mount = settings.get("pvc_mount", "/data")
    worker = spec.worker_spec()  # what the pod's worker reads, as spec.json
    pod_spec = dict(worker, workdir=f"{mount}/{job_id}")
    # What prepare copied into the job folder (the model, --input samples) goes onto the
    # shared volume, into the job's folder there, where the pod reads it.
    volume, placed = _volume(settings), {}
    for key in ("source", "input"):
        given = (worker.get(key) or {}).get("path") if key == "source" else worker.get(key)
        if not given:
            continue
        src = Path(workdir) / given  # relative to the job folder, as prepare leaves it
        rel = Path(given) if not Path(given).is_absolute() else Path(key) / src.name
        placed[str(src)] = str(volume / job_id / rel)
        on_pod = f"{mount}/{job_id}/{rel}"
        pod_spec[key] = {**worker[key], "path": on_pod} if key == "source" else on_pod
    root = jobspec.REPO_ROOT
    files = [root / "converters" / "__init__.py", *sorted((root / "converters" / "model").glob("*.py"))]
    data = {str(f.relative_to(root)).replace("/", "__"): f.read_text() for f in files}
    data["spec.json"] = json.dumps(pod_spec, indent=2)
    items = [{"key": k, "path": k.replace("__", "/")} for k in data]
    cm = {"apiVersion": "v1", "kind": "ConfigMap",
          "metadata": {"name": name + "-code", "namespace": ns, "labels": labels(job_id)},
          "data": data}
    gpus = spec.gpus if spec.gpus is not None else int(settings.get("infer_gpus", 1))
    if gpus < 0:
        from runners.models import JobError
        raise JobError(f"--gpus cannot be negative (got {gpus})")
    runtime = spec.runtime  # the image environment chosen for the job, if any
    image = (runtime and runtime.image) or settings.get("infer_image", DEFAULT_INFER_IMAGE)
    container = {"name": "infer", "image": image,
                 "command": ["python", "-m", "converters.model.worker", f"{CODE_DIR}/spec.json"],
                 "env": [{"name": "PYTHONPATH", "value": CODE_DIR},
                         {"name": "PYTHONUNBUFFERED", "value": "1"},
                         {"name": "TF_CPP_MIN_LOG_LEVEL", "value": "2"}],
                 "volumeMounts": [{"name": "code", "mountPath": CODE_DIR, "readOnly": True},
                                  {"name": "data", "mountPath": mount}]}
    pod = {"restartPolicy": "Never", "containers": [container],
           "volumes": [{"name": "code", "configMap": {"name": name + "-code", "items": items}},
                       {"name": "data", "persistentVolumeClaim": {"claimName": settings["pvc"]}}]}
    try:  # every tfdesk pod: no API token, restricted, requests and limits (core/pods.py)
        pods.harden(pod, settings, None, gpus)
    except pods.PodError as exc:
        raise JobError(str(exc)) from None
    if settings.get("node_selector"):
        pod["nodeSelector"] = {str(k): str(v) for k, v in settings["node_selector"].items()}
    if gpus:
        pod["tolerations"] = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    main = {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": ns, "labels": labels(job_id)},
            "spec": {"backoffLimit": 0,
                     "ttlSecondsAfterFinished": int(settings.get("ttl_seconds_after_finished", 86400)),
                     "template": {"metadata": {"labels": labels(job_id)}, "spec": pod}}}
    return K8sPlan(manifests=[cm, main], main=main, log_selector=f"job-name={name}",
                   volume_files=placed)


INFER.k8s_manifests = infer_k8s
