"""Creating, following, cancelling and deleting tfdesk jobs on a cluster through the official
``kubernetes`` client (watch API for status, pod logs for the launcher's output)."""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from runners.backends import Observation
from runners.kinds import JobKind, K8sPlan
from runners.kubernetes.schema import validate
from runners.local import paths
from runners.models import CANCELLED, FAILED, LOST, SUCCEEDED, Job, JobError
from runners.stored import StoredSpec

# Where each kind of object lives in the API, and how its status maps onto job states.
RESOURCES = {
    "MPIJob": {"group": "kubeflow.org", "version": "v2beta1", "plural": "mpijobs"},
    "Job": {"group": "batch", "version": "v1", "plural": "jobs"},
    "JobSet": {"group": "jobset.x-k8s.io", "version": "v1alpha2", "plural": "jobsets"},
}
# (kind, condition type with status True) -> tfdesk state; checked in this order.
CONDITION_STATES = [
    ("MPIJob", "Succeeded", SUCCEEDED), ("MPIJob", "Failed", FAILED),
    ("Job", "Complete", SUCCEEDED), ("Job", "Failed", FAILED),
    ("JobSet", "Completed", SUCCEEDED), ("JobSet", "Failed", FAILED),
]
RETRYABLE = {429, 500, 502, 503, 504}


class ClusterError(JobError):
    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status


def explain(exc: Exception, what: str, settings: dict) -> ClusterError:
    """A sentence a person can act on, for every way the API can say no."""
    from kubernetes.client.exceptions import ApiException
    ns = settings.get("namespace", "default")
    if isinstance(exc, ApiException):
        detail = ""
        try:
            import json
            detail = json.loads(exc.body or "{}").get("message", "")
        except ValueError:
            detail = (exc.body or "")[:200]
        status = exc.status
        if status == 401:
            msg = f"the cluster did not accept tfdesk's credentials (401) while trying to {what}"
        elif status == 403:
            msg = (f"the cluster refused (403 Forbidden) to {what} in namespace {ns}: tfdesk's "
                   f"service account lacks RBAC permission; see 'RBAC' in the running-jobs guide")
        elif status == 404 and "mpijob" in what.lower():
            msg = (f"could not {what}: the MPIJob resource (kubeflow.org/v2beta1) is not installed "
                   f"on this cluster (404); install the mpi-operator")
        elif status == 404 and "jobset" in what.lower():
            msg = (f"could not {what}: the JobSet resource (jobset.x-k8s.io/v1alpha2) is not "
                   f"installed on this cluster (404); install JobSet, or drop tf_distribute = "
                   f"\"jobset\" under [kubernetes] to run an Indexed Job and a Service")
        elif status == 404:
            msg = f"could not {what}: not found (404)"
        elif status == 409:
            msg = f"could not {what}: an object with that name already exists (409 conflict)"
        elif status == 422:
            msg = f"the cluster rejected the manifest (422) when trying to {what}"
        else:
            msg = f"the Kubernetes API failed ({status}) while trying to {what}"
        return ClusterError(msg + (f": {detail}" if detail else ""), status)
    host = settings.get("api_url") or "the configured cluster"
    return ClusterError(f"cannot reach the Kubernetes API at {host} to {what}: "
                        f"{type(exc).__name__}: {str(exc)[:200]}")


def plan(kind: JobKind, job_id: str, spec: StoredSpec, workdir: Path, settings: dict) -> K8sPlan:
    """The job's manifests, validated; from configuration alone (no cluster, no credentials)."""
    if kind.k8s_manifests is None:
        raise JobError(f"{kind.name} jobs run only locally")
    made = kind.k8s_manifests(job_id, spec, Path(workdir), settings)
    for m in made.manifests:
        validate(m)
    return made


def place_on_volume(files: dict[str, str]) -> None:
    """Copy a job's inputs onto the shared volume (links copied as links, never followed)."""
    import shutil
    for src, dest in files.items():
        src_p, dest_p = Path(src), Path(dest)
        dest_p.parent.mkdir(parents=True, exist_ok=True)
        if src_p.is_dir() and not src_p.is_symlink():
            shutil.copytree(src_p, dest_p, symlinks=True, dirs_exist_ok=True)
        else:
            shutil.copyfile(src_p, dest_p, follow_symlinks=False)


class KubernetesBackend:
    name = "kubernetes"
    reattach_note = "re-attached to the cluster job"

    @staticmethod
    def render(kind: JobKind, spec: StoredSpec, workdir: Path, env, settings: dict) -> dict[str, Any]:
        import json

        import yaml
        from runners.kubernetes.manifests import output_warning
        made = plan(kind, "dry-run", spec, workdir, settings)
        manifests = json.loads(json.dumps(made.manifests))  # no YAML anchors for shared parts
        warning = output_warning(settings)
        return {"manifests": made.manifests, "warnings": [warning] if warning else [],
                "text": (f"# warning: {warning}\n" if warning else "")
                + yaml.safe_dump_all(manifests, sort_keys=False)}

    def accepts(self, kind: JobKind) -> None:
        if kind.k8s_manifests is None:
            raise JobError(f"{kind.name} jobs run only locally")

    def __init__(self, settings: dict[str, Any]):
        if not (settings.get("api_url") or settings.get("kubeconfig") or settings.get("in_cluster")):
            raise JobError("Kubernetes is not configured: set api_url (or kubeconfig, or "
                           "in_cluster = true) under [kubernetes] in tfdesk.toml")
        from kubernetes import client, config as kconfig
        self.settings = settings
        self.namespace = settings.get("namespace", "default")
        self.retries = int(settings.get("retries", 3))
        cfg = client.Configuration()
        if settings.get("in_cluster"):
            kconfig.load_incluster_config(client_configuration=cfg)
        elif settings.get("kubeconfig"):
            kconfig.load_kube_config(config_file=str(Path(settings["kubeconfig"]).expanduser()),
                                     context=settings.get("context"), client_configuration=cfg)
        if settings.get("api_url"):
            cfg.host = settings["api_url"].rstrip("/")
        if settings.get("token"):
            cfg.api_key = {"authorization": "Bearer " + settings["token"]}
        cfg.verify_ssl = bool(settings.get("verify_ssl", True))
        cfg.retries = 0  # tfdesk retries itself, with messages; urllib3's silent retries hide outages
        self.api = client.ApiClient(cfg)
        self.core = client.CoreV1Api(self.api)
        self.custom = client.CustomObjectsApi(self.api)
        self.request_timeout = float(settings.get("request_timeout", 10))

    # -- calls with retries -------------------------------------------------------------------
    def _call(self, what: str, fn, *args, **kwargs):
        from kubernetes.client.exceptions import ApiException
        delay = 0.2
        for attempt in range(self.retries + 1):
            try:
                return fn(*args, _request_timeout=self.request_timeout, **kwargs)
            except ApiException as exc:
                if exc.status not in RETRYABLE or attempt == self.retries:
                    raise explain(exc, what, self.settings) from None
            except Exception as exc:  # noqa: BLE001 - connection refused, DNS, TLS, timeouts
                if attempt == self.retries:
                    raise explain(exc, what, self.settings) from None
            time.sleep(delay)
            delay *= 2

    def plan(self, kind: JobKind, job_id: str, spec: StoredSpec, workdir: Path) -> K8sPlan:
        return plan(kind, job_id, spec, workdir, self.settings)

    def _create(self, m: dict) -> None:
        name = m["metadata"]["name"]
        if m["kind"] == "ConfigMap":
            self._call(f"create ConfigMap {name}", self.core.create_namespaced_config_map,
                       self.namespace, m)
        elif m["kind"] == "Service":
            self._call(f"create Service {name}", self.core.create_namespaced_service,
                       self.namespace, m)
        else:
            r = RESOURCES[m["kind"]]
            self._call(f"create {m['kind']} {name}", self.custom.create_namespaced_custom_object,
                       r["group"], r["version"], self.namespace, r["plural"], m)

    def start(self, job: Job, kind: JobKind, env=None) -> tuple[dict[str, Any], list]:
        made = self.plan(kind, job.id, job.spec, Path(job.workdir))
        place_on_volume(made.volume_files)
        created = []
        try:
            for m in made.manifests:
                self._create(m)
                created.append([m["kind"], m["metadata"]["name"]])
        except ClusterError:
            for k, n in created:  # leave nothing half-made behind
                self._delete_object(k, n, quiet=True)
            raise
        note = ("info", f"created {', '.join(f'{k}/{n}' for k, n in created)} in {self.namespace}",
                {"objects": created})
        from runners.kubernetes.manifests import output_warning
        warning = output_warning(self.settings)
        notes = [note] + ([("warning", warning, {})] if warning else [])
        return {"namespace": self.namespace, "kind": made.main["kind"],
                "name": made.main["metadata"]["name"], "objects": created,
                "log_selector": made.log_selector, "worker_selector": made.worker_selector}, notes

    # -- status ------------------------------------------------------------------------------
    def _get(self, job: Job) -> dict | None:
        from kubernetes.client.exceptions import ApiException
        h = job.handle
        r = RESOURCES[h["kind"]]
        try:
            return self.custom.get_namespaced_custom_object(
                r["group"], r["version"], h.get("namespace", self.namespace), r["plural"], h["name"],
                _request_timeout=self.request_timeout)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise explain(exc, f"read {h['kind']} {h['name']}", self.settings) from None
        except Exception as exc:  # noqa: BLE001
            raise explain(exc, f"read {h['kind']} {h['name']}", self.settings) from None

    @staticmethod
    def state_of(kind: str, obj: dict) -> tuple[str | None, str, str]:
        """(final state or None, reason, cluster phase) from an object's status."""
        conds = [c for c in (obj.get("status") or {}).get("conditions") or [] if c.get("status") == "True"]
        types = {c["type"]: c for c in conds}
        for k, ctype, state in CONDITION_STATES:
            if k == kind and ctype in types:
                c = types[ctype]
                return state, c.get("message") or c.get("reason") or "", ctype
        phase = conds[-1]["type"] if conds else "Pending"
        status = obj.get("status") or {}
        if kind == "Job" and status.get("active"):
            phase = "Running"
        if kind == "JobSet" and any(r.get("active") for r in status.get("replicatedJobsStatus") or []):
            phase = "Running"
        return None, "", phase

    def _observation(self, job: Job, obj: dict | None, phase_seen: str | None) -> Observation:
        if obj is None:  # (the engine says "cancelled" when a cancel was asked for)
            return Observation(ended=True, state=LOST, reason=(
                f"its {job.handle['kind']} {job.handle['name']} is gone from the cluster "
                "(deleted outside tfdesk?)"))
        state, reason, phase = self.state_of(job.handle["kind"], obj)
        obs = Observation()
        if phase != phase_seen:
            obs.handle = {"phase": phase}
            obs.notes.append(("info", f"cluster: {phase}", {"phase": phase}))
        if phase in ("Running", "Succeeded", "Failed", "Complete") or state:
            obs.log = self.fetch_logs(job)
        if state:
            if state == FAILED and job.handle.get("worker_selector"):
                reason = self.failed_workers(job, reason)
            obs.ended, obs.state, obs.collect = True, state, True
            obs.reason = reason if state != SUCCEEDED else ""
        return obs

    def observe(self, job: Job) -> Observation:
        return self._observation(job, self._get(job), job.handle.get("phase"))

    def fetch_logs(self, job: Job) -> Path | None:
        """Copy the launcher's (or the Job pod's) log into the job's log file and parse it."""
        from kubernetes.client.exceptions import ApiException
        try:
            pods = self.core.list_namespaced_pod(job.handle.get("namespace", self.namespace),
                                                 label_selector=job.handle["log_selector"],
                                                 _request_timeout=self.request_timeout).items
            if not pods:
                return None
            pod = sorted(pods, key=lambda p: p.metadata.name)[-1]
            text = self.core.read_namespaced_pod_log(pod.metadata.name, pod.metadata.namespace or self.namespace,
                                                     _request_timeout=self.request_timeout)
        except (ApiException, Exception):  # noqa: BLE001 - logs are best effort while it runs
            return None
        log_path = paths(Path(job.workdir))["log"]
        log_path.parent.mkdir(parents=True, exist_ok=True)
        data = text.encode() if isinstance(text, str) else bytes(text)
        # The API returns the whole log each time; write it whole, and the reader continues
        # from its stored offset (it only grows while the pod lives).
        tmp = log_path.with_suffix(".tmp")
        tmp.write_bytes(data)
        tmp.replace(log_path)
        return log_path

    def failed_workers(self, job: Job, reason: str, tail: int = 20) -> str:
        """Name the worker(s) whose pod failed and add each one's log tail to the job's log:
        the job's own log is worker 0's, which may only show the others going away."""
        from runners.kubernetes.tf_distribute import INDEX_LABEL
        ns = job.handle.get("namespace", self.namespace)
        try:
            pods = self.core.list_namespaced_pod(ns, label_selector=job.handle["worker_selector"],
                                                 _request_timeout=self.request_timeout).items
        except Exception:  # noqa: BLE001 - the condition's message still says it failed
            return reason
        failed = [p for p in pods if p.status and p.status.phase == "Failed"]
        found = []
        for pod in sorted(failed, key=lambda p: p.metadata.name):
            index = (pod.metadata.labels or {}).get(INDEX_LABEL, "?")
            try:
                text = self.core.read_namespaced_pod_log(pod.metadata.name, ns, tail_lines=tail,
                                                         _request_timeout=self.request_timeout)
            except Exception:  # noqa: BLE001
                text = ""
            lines = [ln for ln in str(text or "").splitlines() if ln.strip()][-tail:]
            last = next((ln.strip() for ln in reversed(lines) if "Error" in ln or "Exception" in ln),
                        lines[-1].strip() if lines else "no output")
            found.append(f"worker {index} ({pod.metadata.name}) failed: {last[:300]}")
            log_path = paths(Path(job.workdir))["log"]
            with open(log_path, "a", encoding="utf-8") as f:
                f.write(f"--- worker {index} ({pod.metadata.name}) failed; last {len(lines)} "
                        f"lines of its log ---\n" + "\n".join(lines) + "\n")
        if not found:
            return reason
        return "; ".join(found) + (f" ({reason})" if reason else "")

    def follow(self, job: Job, closed, report) -> None:
        """Watch the main object until the job ends; API trouble becomes warning notes and
        the watch starts again (the job is never dropped because the API hiccuped)."""
        from kubernetes import watch
        h = job.handle
        r = RESOURCES[h["kind"]]
        backoff, warned = 0.5, False
        phase = [h.get("phase")]

        def seen(obj) -> bool:
            obs = self._observation(job, obj, phase[0])
            phase[0] = obs.handle.get("phase", phase[0])
            return report(obs)
        while not closed.is_set():
            w = watch.Watch()
            try:
                for ev in w.stream(self.custom.list_namespaced_custom_object, r["group"], r["version"],
                                   h.get("namespace", self.namespace), r["plural"],
                                   field_selector=f"metadata.name={h['name']}",
                                   timeout_seconds=int(self.settings.get("watch_timeout", 5))):
                    obj = ev["object"] if ev["type"] != "DELETED" else None
                    if seen(obj) or closed.is_set():
                        w.stop()
                        return
                backoff, warned = 0.5, False
                # The watch window ended: look once directly (catches deletion and log growth).
                if seen(self._get(job)):
                    return
            except Exception as exc:  # noqa: BLE001
                err = exc if isinstance(exc, ClusterError) else explain(exc, f"watch {h['kind']} {h['name']}", self.settings)
                if not warned:
                    report(Observation(notes=[("warning", f"{err}; retrying", {})]))
                    warned = True
                closed.wait(backoff)
                backoff = min(backoff * 2, 10)

    # -- cancel and delete -----------------------------------------------------------------------
    def _delete_object(self, kind: str, name: str, quiet: bool = False) -> None:
        from kubernetes import client
        from kubernetes.client.exceptions import ApiException
        body = client.V1DeleteOptions(propagation_policy="Foreground")
        try:
            if kind == "ConfigMap":
                self.core.delete_namespaced_config_map(name, self.namespace, body=body,
                                                       _request_timeout=self.request_timeout)
            elif kind == "Service":
                self.core.delete_namespaced_service(name, self.namespace, body=body,
                                                    _request_timeout=self.request_timeout)
            else:
                r = RESOURCES[kind]
                self.custom.delete_namespaced_custom_object(r["group"], r["version"], self.namespace,
                                                            r["plural"], name, body=body,
                                                            _request_timeout=self.request_timeout)
        except ApiException as exc:
            if exc.status != 404 and not quiet:
                raise explain(exc, f"delete {kind} {name}", self.settings) from None
        except Exception as exc:  # noqa: BLE001
            if not quiet:
                raise explain(exc, f"delete {kind} {name}", self.settings) from None

    def cancel(self, job: Job) -> Observation:
        objects = job.handle.get("objects") or []
        for kind, name in reversed(objects):
            self._delete_object(kind, name)
        return Observation(ended=True, state=CANCELLED,
                           reason="cancelled by request; cluster objects deleted (foreground)")

    def delete(self, job: Job) -> None:
        for kind, name in reversed(job.handle.get("objects") or []):
            self._delete_object(kind, name)
