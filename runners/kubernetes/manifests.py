"""Kubernetes objects for tfdesk jobs. Settings come from the ``[kubernetes]`` section of
tfdesk.toml (see site_docs/guides/running-jobs.md); every object carries labels tying it to
its tfdesk job id."""
from __future__ import annotations

from typing import Any

from core import pods
from runners.kinds import K8sPlan
from runners.models import JobError
from runners.stored import StoredTrain
from runners.tracking import STEP_EVERY, hook_files

MANAGED_BY = {"app.kubernetes.io/managed-by": "tfdesk"}
JOB_LABEL = "tfdesk.io/job-id"
SCRIPT_DIR = "/tfdesk/script"
CONFIGMAP_LIMIT = 900 * 1024  # a ConfigMap holds 1 MiB with its metadata
# Images by TensorFlow major.minor; Horovod's last release pins its stack to TF <= 2.15.
DEFAULT_IMAGES = {"2.15": "horovod/horovod:0.28.1", "2.21": "tensorflow/tensorflow:2.21.0",
                  "default": "tensorflow/tensorflow:2.15.0"}
# mpi-operator v2 as its own non-root examples run it (examples/v2beta1/pi/pi.yaml): workers
# run sshd as the MPI user on an unprivileged port; the operator mounts the ssh keys it makes
# at sshAuthMountPath; the launcher starts once every worker is Ready.
MPI_HOME = "/home/mpiuser"
MPI_SSH_PORT = 2222
HOSTFILE = "/etc/mpi/hostfile"  # written by the operator


def labels(job_id: str) -> dict[str, str]:
    return {**MANAGED_BY, JOB_LABEL: job_id}


def object_name(job_id: str) -> str:
    return f"tfdesk-{job_id}".lower()


def image_for(spec: StoredTrain, settings: dict) -> str:
    runtime = spec.runtime
    if runtime is not None and runtime.kind == "image" and runtime.image:
        return runtime.image  # the catalog environment chosen for the job
    images = {**DEFAULT_IMAGES, **settings.get("images", {})}
    if settings.get("image"):
        images["default"] = settings["image"]
    version = spec.tf_version
    if version and version in images:
        return images[version]
    return images["default"]


def service_account(settings: dict) -> dict[str, Any]:
    """Pods run members' code: no Kubernetes API token in them unless the operator asks for
    one (``[kubernetes] automount_service_account_token = true``); see core/pods.py."""
    return {k: v for k, v in pods.harden({"containers": []}, settings).items()
            if k in ("automountServiceAccountToken", "serviceAccountName")}


def _pod_spec(containers: list[dict], settings: dict, volumes: list[dict], restart: str,
              spec: StoredTrain | None = None, gpus: int = 0) -> dict:
    """A pod of this job: hardened (core/pods.py: no API token, restricted security context,
    requests and limits), scheduled where the configuration says."""
    pod: dict[str, Any] = {"containers": containers, "volumes": volumes, "restartPolicy": restart}
    try:
        pods.harden(pod, settings, spec.resources() if spec is not None else None, gpus)
    except pods.PodError as exc:
        raise JobError(str(exc)) from None
    if settings.get("node_selector"):
        pod["nodeSelector"] = {str(k): str(v) for k, v in settings["node_selector"].items()}
    if settings.get("tolerations"):
        pod["tolerations"] = [dict(t) for t in settings["tolerations"]]
    if settings.get("image_pull_secrets"):
        pod["imagePullSecrets"] = [{"name": n} for n in settings["image_pull_secrets"]]
    return pod


def output_warning(settings: dict) -> str | None:
    """Said by a dry run and at start when pods have no output volume: what they save is lost."""
    if settings.get("pvc"):
        return None
    return ("no output volume ([kubernetes] pvc): the pods' files, saved models included, "
            "are lost when the pods end; set pvc (and pvc_mount) to keep them")


def _volumes(job_id: str, settings: dict) -> tuple[list[dict], list[dict]]:
    volumes = [{"name": "script", "configMap": {"name": object_name(job_id) + "-script"}}]
    mounts = [{"name": "script", "mountPath": SCRIPT_DIR, "readOnly": True}]
    if settings.get("pvc"):
        volumes.append({"name": "data", "persistentVolumeClaim": {"claimName": settings["pvc"]}})
        mounts.append({"name": "data", "mountPath": settings.get("pvc_mount", "/data")})
    return volumes, mounts


def _env(job_id: str, spec: StoredTrain, settings: dict, home: str | None = None) -> list[dict]:
    """The pods' environment; HOME where the non-root uid may write (the job's folder on the
    volume, else /tmp), or the MPI user's home that holds its ssh keys."""
    workdir = f"{settings.get('pvc_mount', '/data')}/{job_id}" if settings.get("pvc") else None
    env = [{"name": "TFDESK_JOB_ID", "value": job_id}, {"name": "PYTHONUNBUFFERED", "value": "1"},
           {"name": "HOME", "value": home or workdir or "/tmp"}]
    if spec.epochs:
        env.append({"name": "TFDESK_EPOCHS", "value": str(spec.epochs)})
    # run tracking: the hook rides in the script's ConfigMap (runners/tracking.py)
    env += [{"name": "PYTHONPATH", "value": SCRIPT_DIR},
            {"name": "TFDESK_TRACK_EVERY", "value": str(STEP_EVERY)}]
    if workdir:
        env.append({"name": "TFDESK_WORKDIR", "value": workdir})
    return env


def script_configmap(job_id: str, namespace: str, source: str) -> dict:
    if len(source.encode()) > CONFIGMAP_LIMIT:
        raise JobError(f"the script is {len(source.encode()) // 1024} KiB, more than a ConfigMap "
                       f"holds; put it on the data volume ([kubernetes] pvc) and start it from there")
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": object_name(job_id) + "-script", "namespace": namespace,
                         "labels": labels(job_id)},
            "data": {"script.py": source, **hook_files()}}


def training_plan(job_id: str, spec: StoredTrain, source: str, settings: dict) -> K8sPlan:
    ns = settings.get("namespace", "default")
    name = object_name(job_id)
    image = image_for(spec, settings)
    volumes, mounts = _volumes(job_id, settings)
    pull = settings.get("image_pull_policy", "IfNotPresent")
    script = ["python", f"{SCRIPT_DIR}/script.py", *spec.args]
    run_policy = {"cleanPodPolicy": "Running", "backoffLimit": 0,
                  "ttlSecondsAfterFinished": int(settings.get("ttl_seconds_after_finished", 86400))}
    if spec.timeout:
        run_policy["activeDeadlineSeconds"] = max(1, int(spec.timeout))
    cm = script_configmap(job_id, ns, source)
    workers, gpus = spec.workers, spec.gpus_per_worker
    meta = {"name": name, "namespace": ns, "labels": labels(job_id)}
    if spec.launcher == "horovod":
        main, selector = _mpijob(job_id, spec, settings, image, pull, volumes, mounts, script,
                                 run_policy, meta)
    else:
        container = {"name": "train", "image": image, "imagePullPolicy": pull,
                     "env": _env(job_id, spec, settings), "volumeMounts": mounts,
                     "command": script}
        if workers > 1:
            if spec.launcher != "tf-distribute":
                raise JobError(f"{spec.script_name} is single-process; "
                               f"convert it (--to tf-distribute or --to horovod) to run "
                               f"{workers} workers")
            from runners.kubernetes import tf_distribute
            style = settings.get("tf_distribute", "indexed-job")
            if style not in tf_distribute.STYLES:
                raise JobError(f"[kubernetes] tf_distribute must be one of "
                               f"{', '.join(tf_distribute.STYLES)}, not {style!r}")
            build = tf_distribute.jobset_plan if style == "jobset" else tf_distribute.plan
            return build(job_id, name, ns, spec, cm, container,
                         _pod_spec([container], settings, volumes, "Never", spec, gpus),
                         labels(job_id), run_policy["ttlSecondsAfterFinished"])
        job_spec = {"backoffLimit": 0, "ttlSecondsAfterFinished": run_policy["ttlSecondsAfterFinished"],
                    "template": {"metadata": {"labels": labels(job_id)},
                                 "spec": _pod_spec([container], settings, volumes, "Never",
                                                   spec, gpus)}}
        if spec.timeout:
            job_spec["activeDeadlineSeconds"] = run_policy["activeDeadlineSeconds"]
        main = {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": job_spec}
        selector = f"job-name={name}"
    return K8sPlan(manifests=[cm, main], main=main, log_selector=selector)


def _mpijob(job_id: str, spec: StoredTrain, settings: dict, image: str, pull: str, volumes: list,
            mounts: list, script: list, run_policy: dict, meta: dict) -> tuple[dict, str]:
    """The MPIJob (kubeflow.org/v2beta1) for Horovod, set up as mpi-operator v2 runs it: the
    image holds sshd and a non-root MPI user (``[kubernetes] mpi_home``, its uid
    ``run_as_user``); workers run sshd (``mpi_worker_command``), the launcher runs
    horovodrun over the operator's hostfile once every worker is Ready."""
    workers, gpus = spec.workers, spec.gpus_per_worker
    slots = int(settings.get("slots_per_worker", max(1, gpus)))
    home = str(settings.get("mpi_home", MPI_HOME))
    port = int(settings.get("mpi_ssh_port", MPI_SSH_PORT))
    env = _env(job_id, spec, settings, home)
    sshd = [str(a) for a in settings.get("mpi_worker_command") or
            ["/usr/sbin/sshd", "-De", "-f", f"{home}/.sshd_config"]]
    launcher = {"name": "launcher", "image": image, "imagePullPolicy": pull, "env": env,
                "volumeMounts": mounts,
                "command": ["horovodrun", "-np", str(workers * slots), "--hostfile", HOSTFILE,
                            "--ssh-port", str(port), *script]}
    worker = {"name": "worker", "image": image, "imagePullPolicy": pull, "env": env,
              "volumeMounts": mounts, "command": sshd,
              "ports": [{"name": "ssh", "containerPort": port, "protocol": "TCP"}],
              "readinessProbe": {"tcpSocket": {"port": port}, "periodSeconds": 2}}
    tmpl = {"metadata": {"labels": labels(job_id)}}
    name = meta["name"]
    main = {"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob", "metadata": meta,
            "spec": {"slotsPerWorker": slots, "runPolicy": run_policy,
                     "mpiImplementation": "OpenMPI", "sshAuthMountPath": f"{home}/.ssh",
                     "launcherCreationPolicy": "WaitForWorkersReady",
                     "mpiReplicaSpecs": {
                         "Launcher": {"replicas": 1, "restartPolicy": "Never", "template": {
                             **tmpl, "spec": _pod_spec([launcher], settings, volumes, "Never",
                                                       spec)}},
                         "Worker": {"replicas": workers, "restartPolicy": "Never", "template": {
                             **tmpl, "spec": _pod_spec([worker], settings, volumes, "Never",
                                                       spec, gpus)}}}}}
    return main, f"training.kubeflow.org/job-name={name},training.kubeflow.org/job-role=launcher"
