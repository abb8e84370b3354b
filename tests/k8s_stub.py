"""A stand-in for the Kubernetes API server, over real HTTP, for the few endpoints tfdesk calls.

It stores objects, answers list/get/create/delete, streams watch events (one JSON object per
line, as the API server does), serves pod logs, and lets a test play the mpi-operator:
``stub.set_condition("mpijobs", name, "Running")`` / ``stub.finish(name, "Succeeded", log=...)``.
Faults are injected with ``stub.fail(method, plural, status, message, times)``; a missing
MPIJob CRD with ``stub.crd_installed = False``.
"""
from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

ROUTE = re.compile(r"^/(?:api/v1|apis/(?P<group>[^/]+)/(?P<version>[^/]+))/namespaces/(?P<ns>[^/]+)/"
                   r"(?P<plural>[^/]+)(?:/(?P<name>[^/]+))?(?:/(?P<sub>log))?$")


class KubeStub:
    def __init__(self):
        self.objects: dict[tuple[str, str, str], dict] = {}   # (plural, ns, name) -> object
        self.logs: dict[tuple[str, str], str] = {}           # (ns, pod) -> text
        self.requests: list[tuple[str, str]] = []
        self.deletes: list[tuple[str, str, dict]] = []
        self.faults: list[dict] = []
        self.crd_installed = True
        self.rv = 0
        self.changed = threading.Condition()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def log_message(self, *a):
                pass

            def _send(self, status, body):
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _body(self):
                n = int(self.headers.get("Content-Length") or 0)
                return json.loads(self.rfile.read(n) or b"{}")

            def handle_any(self, method):
                url = urlparse(self.path)
                q = {k: v[0] for k, v in parse_qs(url.query).items()}
                m = ROUTE.match(url.path)
                stub.requests.append((method, url.path))
                if not m:
                    return self._send(404, _status(404, f"no route {url.path}"))
                plural, ns, name = m["plural"], m["ns"], m["name"]
                fault = stub._take_fault(method, plural)
                if fault:
                    return self._send(fault["status"], _status(fault["status"], fault["message"]))
                if plural == "mpijobs" and not stub.crd_installed:
                    return self._send(404, _status(404, "the server could not find the requested resource"))
                if method == "POST":
                    obj = self._body()
                    key = (plural, ns, obj["metadata"]["name"])
                    if key in stub.objects:
                        return self._send(409, _status(409, f'{plural} "{key[2]}" already exists'))
                    stub._put(key, obj)
                    return self._send(201, obj)
                if method == "DELETE":
                    key = (plural, ns, name)
                    if key not in stub.objects:
                        return self._send(404, _status(404, f'{plural} "{name}" not found'))
                    stub.deletes.append((plural, name, self._body()))
                    obj = stub._remove(key)
                    return self._send(200, obj)
                if m["sub"] == "log":
                    return self._send_text(stub.logs.get((ns, name), ""))
                if name:
                    obj = stub.objects.get((plural, ns, name))
                    return self._send(200, obj) if obj else self._send(404, _status(404, f'{plural} "{name}" not found'))
                if q.get("watch") in ("true", "1", "True"):
                    return self._watch(plural, ns, q)
                items = stub._select(plural, ns, q)
                return self._send(200, {"kind": "List", "apiVersion": "v1",
                                        "metadata": {"resourceVersion": str(stub.rv)}, "items": items})

            def _send_text(self, text):
                data = text.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _watch(self, plural, ns, q):
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                end = time.monotonic() + float(q.get("timeoutSeconds", 5))
                seen: dict[str, str] = {}
                try:
                    while time.monotonic() < end:
                        current = {o["metadata"]["name"]: o for o in stub._select(plural, ns, q)}
                        for n, o in current.items():
                            rv = o["metadata"]["resourceVersion"]
                            if seen.get(n) != rv:
                                self._line({"type": "ADDED" if n not in seen else "MODIFIED", "object": o})
                                seen[n] = rv
                        for n in list(seen):
                            if n not in current:
                                self._line({"type": "DELETED", "object": {"metadata": {"name": n, "resourceVersion": str(stub.rv)}}})
                                del seen[n]
                        with stub.changed:
                            stub.changed.wait(min(0.5, max(0.01, end - time.monotonic())))
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def _line(self, obj):
                self.wfile.write(json.dumps(obj).encode() + b"\n")
                self.wfile.flush()

            def do_GET(self):
                self.handle_any("GET")

            def do_POST(self):
                self.handle_any("POST")

            def do_DELETE(self):
                self.handle_any("DELETE")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()

    # -- state ----------------------------------------------------------------------------------
    def _put(self, key, obj):
        with self.changed:
            self.rv += 1
            obj.setdefault("metadata", {})["resourceVersion"] = str(self.rv)
            obj["metadata"].setdefault("namespace", key[1])
            self.objects[key] = obj
            self.changed.notify_all()

    def _remove(self, key):
        with self.changed:
            self.rv += 1
            obj = self.objects.pop(key)
            # Foreground deletion removes what the object owns: here, its pods.
            name = key[2]
            for k in [k for k, o in self.objects.items() if k[0] == "pods" and
                      name in (o["metadata"].get("labels") or {}).values()]:
                self.objects.pop(k)
            self.changed.notify_all()
            return obj

    def _select(self, plural, ns, q):
        out = []
        for (p, n, name), o in sorted(self.objects.items()):
            if p != plural or n != ns:
                continue
            fs = q.get("fieldSelector")
            if fs and fs.startswith("metadata.name=") and name != fs.split("=", 1)[1]:
                continue
            ls = q.get("labelSelector")
            if ls:
                labels = o["metadata"].get("labels") or {}
                if any(labels.get(k) != v for k, v in (part.split("=", 1) for part in ls.split(","))):
                    continue
            out.append(o)
        return out

    def _take_fault(self, method, plural):
        for f in self.faults:
            if f["method"] == method and f["plural"] == plural and f["times"] > 0:
                f["times"] -= 1
                return f
        return None

    def fail(self, method, plural, status, message="injected", times=1):
        self.faults.append({"method": method, "plural": plural, "status": status,
                            "message": message, "times": times})

    def get(self, plural, name, ns="default"):
        return self.objects.get((plural, ns, name))

    def set_condition(self, plural, name, ctype, message="", ns="default", log=None):
        """Play the operator: add a True condition and, for MPIJobs, make the launcher pod."""
        key = (plural, ns, name)
        obj = json.loads(json.dumps(self.objects[key]))
        conds = obj.setdefault("status", {}).setdefault("conditions", [])
        conds.append({"type": ctype, "status": "True", "reason": ctype, "message": message,
                      "lastTransitionTime": "2025-01-01T00:00:00Z"})
        if plural == "jobs" and ctype not in ("Complete", "Failed"):
            obj["status"]["active"] = 1
        self._put(key, obj)
        pod = f"{name}-launcher" if plural == "mpijobs" else f"{name}-abcde"
        labels = ({"training.kubeflow.org/job-name": name, "training.kubeflow.org/job-role": "launcher"}
                  if plural == "mpijobs" else {"job-name": name})
        if ("pods", ns, pod) not in self.objects:
            self._put(("pods", ns, pod), {"apiVersion": "v1", "kind": "Pod",
                                          "metadata": {"name": pod, "namespace": ns, "labels": labels},
                                          "status": {"phase": "Running"}})
        if log is not None:
            self.logs[(ns, pod)] = log

    def run_indexed(self, name, ns="default", logs=None):
        """Play the Job controller for an Indexed Job: one running pod per completion index,
        named and labelled as Kubernetes does; ``logs`` maps index -> log text."""
        job = self.objects[("jobs", ns, name)]
        for i in range(int(job["spec"]["completions"])):
            pod = f"{name}-{i}-x{i:04d}"
            self._put(("pods", ns, pod), {
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": pod, "namespace": ns, "labels": {
                    "job-name": name, "batch.kubernetes.io/job-completion-index": str(i)}},
                "status": {"phase": "Running"}})
            self.logs[(ns, pod)] = (logs or {}).get(i, "")
        obj = json.loads(json.dumps(job))
        obj.setdefault("status", {})["active"] = int(job["spec"]["completions"])
        self._put(("jobs", ns, name), obj)

    def pod_failed(self, name, index, log, ns="default"):
        """Worker ``index`` of an Indexed Job exits non-zero: its pod fails and, as the pod
        failure policy says (FailJob), the Job fails with the FailJob condition's message."""
        pod = f"{name}-{index}-x{index:04d}"
        obj = json.loads(json.dumps(self.objects[("pods", ns, pod)]))
        obj["status"]["phase"] = "Failed"
        self.logs[(ns, pod)] = log
        self._put(("pods", ns, pod), obj)
        self.finish("jobs", name, "Failed", ns=ns, message=(
            f"Container train for pod {ns}/{pod} failed with exit code 1 matching FailJob rule "
            f"at index 0"))

    def finish(self, plural, name, ctype="Succeeded", message="", log=None, ns="default"):
        self.set_condition(plural, name, ctype, message, ns, log)


def _status(code, message):
    reasons = {403: "Forbidden", 404: "NotFound", 409: "AlreadyExists", 500: "InternalError",
               503: "ServiceUnavailable"}
    return {"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message,
            "reason": reasons.get(code, "Unknown"), "code": code}
