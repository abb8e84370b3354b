"""Every pod tfdesk makes, hardened in one place: members' code runs in it.

- no Kubernetes API token (``automountServiceAccountToken: false``) unless the operator asks
  (``[kubernetes] automount_service_account_token = true``);
- the "restricted" Pod Security Standard: a non-root uid (``run_as_user``, default 1000),
  no privilege escalation, every capability dropped, the runtime's default seccomp profile;
- requests and limits on every container: ``[kubernetes] requests`` / ``limits`` (tables of
  ``cpu``, ``memory``), a job's own ``cpu`` / ``memory`` (``train --cpu --memory``: request
  and limit alike), and its GPUs as a limit.

Used by the training, inference and TensorRT manifests alike (runners and converters), so
no pod is made another way. Plain dicts in, plain dicts out; no imports beyond the stdlib.
"""
from __future__ import annotations

import re
from typing import Any

DEFAULT_REQUESTS = {"cpu": "1", "memory": "2Gi"}
DEFAULT_LIMITS = {"cpu": "4", "memory": "8Gi"}
DEFAULT_UID = 1000
QUANTITY = re.compile(r"^(\d+(?:\.\d+)?)(m|k|Ki|M|Mi|G|Gi|T|Ti)?$")
SCALE = {None: 1, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12,
         "Ki": 2 ** 10, "Mi": 2 ** 20, "Gi": 2 ** 30, "Ti": 2 ** 40}
CONTAINER_SECURITY = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]},
                      "runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}


class PodError(ValueError):
    """A setting or flag that would make a pod the cluster refuses (said before it is sent)."""
    user_facing = True


def quantity(value: Any, what: str) -> float:
    m = QUANTITY.match(str(value).strip())
    if not m:
        raise PodError(f"{what} = {value!r} is not a Kubernetes quantity (e.g. 500m, 2, 4Gi)")
    return float(m.group(1)) * SCALE[m.group(2)]


def resources(settings: dict, spec: dict | None = None, gpus: int = 0) -> dict[str, dict]:
    """A container's requests and limits: configuration, then the job's flags, then GPUs."""
    spec = spec or {}
    requests = {**DEFAULT_REQUESTS, **{str(k): str(v) for k, v in
                                       (settings.get("requests") or {}).items()}}
    limits = {**DEFAULT_LIMITS, **{str(k): str(v) for k, v in
                                   (settings.get("limits") or {}).items()}}
    for key in ("cpu", "memory"):
        if spec.get(key):
            requests[key] = limits[key] = str(spec[key])
    if gpus:
        limits["nvidia.com/gpu"] = str(int(gpus))
    return checked(requests, limits)


def checked(requests: dict, limits: dict) -> dict[str, dict]:
    """Requests and limits a cluster accepts: quantities, and no request above its limit."""
    for key in set(requests) | set(limits):
        req, lim = requests.get(key), limits.get(key)
        if req is not None and lim is not None and \
                quantity(req, f"requests.{key}") > quantity(lim, f"limits.{key}"):
            raise PodError(f"the {key} request ({req}) is above its limit ({lim}); a cluster "
                           f"refuses such a pod: raise [kubernetes] limits.{key} or ask for less")
    return {"requests": requests, "limits": limits}


def harden(pod: dict, settings: dict, spec: dict | None = None, gpus: int = 0) -> dict:
    """``pod`` (a PodSpec) made as every tfdesk pod is; returns it."""
    pod["automountServiceAccountToken"] = bool(settings.get("automount_service_account_token",
                                                            False))
    if settings.get("service_account"):
        pod["serviceAccountName"] = str(settings["service_account"])
    uid = int(settings.get("run_as_user", DEFAULT_UID))
    if uid == 0:
        raise PodError("[kubernetes] run_as_user = 0 would run members' code as root; pods "
                       "run as a non-root uid")
    gid = int(settings.get("run_as_group", uid))
    pod["securityContext"] = {"runAsNonRoot": True, "runAsUser": uid, "runAsGroup": gid,
                              "fsGroup": gid, "seccompProfile": {"type": "RuntimeDefault"}}
    base = resources(settings, spec, gpus)
    for container in [*pod.get("initContainers", []), *pod["containers"]]:
        container["securityContext"] = {**CONTAINER_SECURITY,
                                        "capabilities": {"drop": ["ALL"]}}
        own = container.get("resources") or {}  # what the work itself needs comes first
        container["resources"] = checked({**base["requests"], **(own.get("requests") or {})},
                                         {**base["limits"], **(own.get("limits") or {})})
    return pod
