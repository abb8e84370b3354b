"""tf.distribute multi-worker training on Kubernetes without an operator: an Indexed Job (one
pod per worker, each knowing its completion index) and a headless Service that gives every pod
a stable DNS name. Each pod builds its own TF_CONFIG from JOB_COMPLETION_INDEX, so the
manifests hold no per-pod state; a worker that fails fails the whole job (pod failure policy),
because MultiWorkerMirroredStrategy cannot go on without it.

Pod names follow the Indexed Job rule ``<job>-<index>`` and, with ``subdomain`` set to the
Service, resolve as ``<job>-<index>.<service>.<namespace>.svc``.
"""
from __future__ import annotations

import json

from runners.kinds import K8sPlan
from runners.stored import StoredTrain

PORT = 2222
INDEX_LABEL = "batch.kubernetes.io/job-completion-index"
# Runs the user's script with TF_CONFIG made from the pod's completion index; nothing but the
# standard library, so any TensorFlow image runs it.
BOOT = ("import json, os, runpy, sys\n"
        "hosts = json.loads(os.environ['TFDESK_WORKERS'])\n"
        "index = int(os.environ['JOB_COMPLETION_INDEX'])\n"
        "os.environ['TF_CONFIG'] = json.dumps({'cluster': {'worker': hosts},"
        " 'task': {'type': 'worker', 'index': index}})\n"
        "sys.argv = sys.argv[1:]\n"
        "runpy.run_path(sys.argv[0], run_name='__main__')\n")


JOBSET_LABEL = "jobset.sigs.k8s.io/jobset-name"
STYLES = ("indexed-job", "jobset")  # [kubernetes] tf_distribute


def hosts(name: str, namespace: str, workers: int, pod_prefix: str | None = None) -> list[str]:
    prefix = pod_prefix or name
    return [f"{prefix}-{i}.{name}.{namespace}.svc:{PORT}" for i in range(workers)]


def _worker_pod(container: dict, pod_spec: StoredTrain, worker_hosts: list[str]) -> dict:
    container = dict(container)
    container["command"] = ["python", "-c", BOOT, *container["command"][1:]]
    container["env"] = [*container["env"],
                        {"name": "TFDESK_WORKERS", "value": json.dumps(worker_hosts)}]
    container["ports"] = [{"name": "tf-worker", "containerPort": PORT, "protocol": "TCP"}]
    return {**pod_spec, "containers": [container]}


def _indexed_job_spec(workers: int, container_name: str, pod: dict, labels: dict,
                      spec: StoredTrain) -> dict:
    out = {"completionMode": "Indexed", "completions": workers, "parallelism": workers,
           "backoffLimit": 0,
           # One worker's failure ends the job at once (the others would wait forever).
           "podFailurePolicy": {"rules": [
               {"action": "FailJob",
                "onExitCodes": {"containerName": container_name, "operator": "NotIn",
                                "values": [0]}}]},
           "template": {"metadata": {"labels": dict(labels)}, "spec": pod}}
    if spec.timeout:
        out["activeDeadlineSeconds"] = max(1, int(spec.timeout))
    return out


def jobset_plan(job_id: str, name: str, namespace: str, spec: StoredTrain, cm: dict, container: dict,
                pod_spec: StoredTrain, labels: dict, ttl: int) -> K8sPlan:
    """The same workers as one JobSet (jobset.x-k8s.io/v1alpha2), where JobSet is installed:
    JobSet makes the headless Service itself (network.subdomain) and names the pods
    ``<jobset>-worker-0-<index>``."""
    workers = spec.workers
    pod = _worker_pod(container, pod_spec, hosts(name, namespace, workers, f"{name}-worker-0"))
    jobset = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
              "metadata": {"name": name, "namespace": namespace, "labels": labels},
              "spec": {"network": {"enableDNSHostnames": True, "subdomain": name,
                                   "publishNotReadyAddresses": True},
                       "failurePolicy": {"maxRestarts": 0},
                       "ttlSecondsAfterFinished": ttl,
                       "replicatedJobs": [{
                           "name": "worker", "replicas": 1,
                           "template": {"metadata": {"labels": dict(labels)},
                                        "spec": _indexed_job_spec(workers, container["name"],
                                                                  pod, labels, spec)}}]}}
    return K8sPlan(manifests=[cm, jobset], main=jobset,
                   log_selector=f"{JOBSET_LABEL}={name},{INDEX_LABEL}=0",
                   worker_selector=f"{JOBSET_LABEL}={name}")


def plan(job_id: str, name: str, namespace: str, spec: StoredTrain, cm: dict, container: dict,
         pod_spec: StoredTrain, labels: dict, ttl: int) -> K8sPlan:
    """The Service, then the Indexed Job; ``container`` and ``pod_spec`` come from the shared
    builders (image, mounts, env, GPUs, node selection)."""
    workers = spec.workers
    pod = {**_worker_pod(container, pod_spec, hosts(name, namespace, workers)), "subdomain": name}
    service = {"apiVersion": "v1", "kind": "Service",
               "metadata": {"name": name, "namespace": namespace, "labels": labels},
               "spec": {"clusterIP": "None", "selector": dict(labels),
                        # Workers look each other up while starting, before any is ready.
                        "publishNotReadyAddresses": True,
                        "ports": [{"name": "tf-worker", "port": PORT, "targetPort": PORT}]}}
    job_spec = {**_indexed_job_spec(workers, container["name"], pod, labels, spec),
                "ttlSecondsAfterFinished": ttl}
    job = {"apiVersion": "batch/v1", "kind": "Job",
           "metadata": {"name": name, "namespace": namespace, "labels": labels},
           "spec": job_spec}
    return K8sPlan(manifests=[cm, service, job], main=job,
                   log_selector=f"job-name={name},{INDEX_LABEL}=0",
                   worker_selector=f"job-name={name}")
