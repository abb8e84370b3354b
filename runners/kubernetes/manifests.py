"""Kubernetes objects for tfdesk jobs. Settings come from the ``[kubernetes]`` section of
tfdesk.toml (see site_docs/guides/running-jobs.md); every object carries labels tying it to
its tfdesk job id."""
from __future__ import annotations

from typing import Any

from runners.kinds import K8sPlan
from runners.models import JobError

MANAGED_BY = {"app.kubernetes.io/managed-by": "tfdesk"}
JOB_LABEL = "tfdesk.io/job-id"
SCRIPT_DIR = "/tfdesk/script"
CONFIGMAP_LIMIT = 900 * 1024  # a ConfigMap holds 1 MiB with its metadata
# Images by TensorFlow major.minor; Horovod's last release pins its stack to TF <= 2.15.
DEFAULT_IMAGES = {"2.15": "horovod/horovod:0.28.1", "2.21": "tensorflow/tensorflow:2.21.0",
                  "default": "tensorflow/tensorflow:2.15.0"}


def labels(job_id: str) -> dict[str, str]:
    return {**MANAGED_BY, JOB_LABEL: job_id}


def object_name(job_id: str) -> str:
    return f"tfdesk-{job_id}".lower()


def image_for(spec: dict, settings: dict) -> str:
    runtime = spec.get("runtime") or {}
    if runtime.get("kind") == "image" and runtime.get("image"):
        return runtime["image"]  # the catalog environment chosen for the job
    images = {**DEFAULT_IMAGES, **settings.get("images", {})}
    if settings.get("image"):
        images["default"] = settings["image"]
    version = spec.get("tf_version")
    if version and version in images:
        return images[version]
    if version and spec.get("tf_version_strict"):
        raise JobError(f"no image configured for TensorFlow {version}; add it under [kubernetes.images]")
    return images["default"]


def service_account(settings: dict) -> dict[str, Any]:
    """Pods run members' code: no Kubernetes API token in them unless the operator asks for
    one (``[kubernetes] automount_service_account_token = true``)."""
    out: dict[str, Any] = {"automountServiceAccountToken":
                           bool(settings.get("automount_service_account_token", False))}
    if settings.get("service_account"):
        out["serviceAccountName"] = settings["service_account"]
    return out


def _pod_spec(containers: list[dict], settings: dict, volumes: list[dict], restart: str) -> dict:
    spec: dict[str, Any] = {"containers": containers, "volumes": volumes, "restartPolicy": restart,
                            **service_account(settings)}
    if settings.get("node_selector"):
        spec["nodeSelector"] = {str(k): str(v) for k, v in settings["node_selector"].items()}
    if settings.get("tolerations"):
        spec["tolerations"] = [dict(t) for t in settings["tolerations"]]
    if settings.get("image_pull_secrets"):
        spec["imagePullSecrets"] = [{"name": n} for n in settings["image_pull_secrets"]]
    return spec


def _volumes(job_id: str, settings: dict) -> tuple[list[dict], list[dict]]:
    volumes = [{"name": "script", "configMap": {"name": object_name(job_id) + "-script"}}]
    mounts = [{"name": "script", "mountPath": SCRIPT_DIR, "readOnly": True}]
    if settings.get("pvc"):
        volumes.append({"name": "data", "persistentVolumeClaim": {"claimName": settings["pvc"]}})
        mounts.append({"name": "data", "mountPath": settings.get("pvc_mount", "/data")})
    return volumes, mounts


def _env(job_id: str, spec: dict, settings: dict) -> list[dict]:
    env = [{"name": "TFDESK_JOB_ID", "value": job_id}, {"name": "PYTHONUNBUFFERED", "value": "1"}]
    if spec.get("epochs"):
        env.append({"name": "TFDESK_EPOCHS", "value": str(spec["epochs"])})
    if settings.get("pvc"):
        env.append({"name": "TFDESK_WORKDIR", "value": f"{settings.get('pvc_mount', '/data')}/{job_id}"})
    return env


def _resources(gpus: int) -> dict:
    return {"limits": {"nvidia.com/gpu": str(gpus)}} if gpus else {}


def script_configmap(job_id: str, namespace: str, source: str) -> dict:
    if len(source.encode()) > CONFIGMAP_LIMIT:
        raise JobError(f"the script is {len(source.encode()) // 1024} KiB, more than a ConfigMap "
                       f"holds; put it on the data volume ([kubernetes] pvc) and start it from there")
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": object_name(job_id) + "-script", "namespace": namespace,
                         "labels": labels(job_id)},
            "data": {"script.py": source}}


def training_plan(job_id: str, spec: dict, source: str, settings: dict) -> K8sPlan:
    ns = settings.get("namespace", "default")
    name = object_name(job_id)
    image = image_for(spec, settings)
    volumes, mounts = _volumes(job_id, settings)
    env = _env(job_id, spec, settings)
    pull = settings.get("image_pull_policy", "IfNotPresent")
    script = ["python", f"{SCRIPT_DIR}/script.py", *spec.get("args", [])]
    run_policy = {"cleanPodPolicy": "Running", "backoffLimit": 0,
                  "ttlSecondsAfterFinished": int(settings.get("ttl_seconds_after_finished", 86400))}
    if spec.get("timeout"):
        run_policy["activeDeadlineSeconds"] = max(1, int(spec["timeout"]))
    cm = script_configmap(job_id, ns, source)
    workers, gpus = spec["workers"], spec.get("gpus_per_worker", 0)
    meta = {"name": name, "namespace": ns, "labels": labels(job_id)}
    if spec["launcher"] == "horovod":
        slots = int(settings.get("slots_per_worker", max(1, gpus)))
        launcher = {"name": "launcher", "image": image, "imagePullPolicy": pull, "env": env,
                    "volumeMounts": mounts,
                    "command": ["horovodrun", "-np", str(workers * slots), "--hostfile",
                                "/etc/mpi/hostfile", *script]}
        worker = {"name": "worker", "image": image, "imagePullPolicy": pull, "env": env,
                  "volumeMounts": mounts}
        if gpus:
            worker["resources"] = _resources(gpus)
        tmpl = {"metadata": {"labels": labels(job_id)}}
        main = {"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob", "metadata": meta,
                "spec": {"slotsPerWorker": slots, "runPolicy": run_policy,
                         "mpiImplementation": "OpenMPI",
                         "mpiReplicaSpecs": {
                             "Launcher": {"replicas": 1, "restartPolicy": "Never",
                                          "template": {**tmpl, "spec": _pod_spec([launcher], settings, volumes, "Never")}},
                             "Worker": {"replicas": workers, "restartPolicy": "Never",
                                        "template": {**tmpl, "spec": _pod_spec([worker], settings, volumes, "Never")}}}}}
        selector = f"training.kubeflow.org/job-name={name},training.kubeflow.org/job-role=launcher"
    else:
        container = {"name": "train", "image": image, "imagePullPolicy": pull, "env": env,
                     "volumeMounts": mounts, "command": script}
        if gpus:
            container["resources"] = _resources(gpus)
        if workers > 1:
            if spec["launcher"] != "tf-distribute":
                raise JobError(f"{spec.get('script_name', 'the script')} is single-process; "
                               f"convert it (--to tf-distribute or --to horovod) to run "
                               f"{workers} workers")
            from runners.kubernetes import tf_distribute
            style = settings.get("tf_distribute", "indexed-job")
            if style not in tf_distribute.STYLES:
                raise JobError(f"[kubernetes] tf_distribute must be one of "
                               f"{', '.join(tf_distribute.STYLES)}, not {style!r}")
            build = tf_distribute.jobset_plan if style == "jobset" else tf_distribute.plan
            return build(job_id, name, ns, spec, cm, container,
                                      _pod_spec([container], settings, volumes, "Never"),
                                      labels(job_id), run_policy["ttlSecondsAfterFinished"])
        job_spec = {"backoffLimit": 0, "ttlSecondsAfterFinished": run_policy["ttlSecondsAfterFinished"],
                    "template": {"metadata": {"labels": labels(job_id)},
                                 "spec": _pod_spec([container], settings, volumes, "Never")}}
        if spec.get("timeout"):
            job_spec["activeDeadlineSeconds"] = run_policy["activeDeadlineSeconds"]
        main = {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": job_spec}
        selector = f"job-name={name}"
    return K8sPlan(manifests=[cm, main], main=main, log_selector=selector)
