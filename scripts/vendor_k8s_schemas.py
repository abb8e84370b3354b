"""Vendor the Kubernetes JSON schemas tfdesk validates its manifests against.

Reads the strict schemas shipped by the `kubernetes-validate` package (test extra) and keeps only
the definitions reachable from the kinds tfdesk produces, so the bot needs no extra dependency
at run time. Run again to move to a newer Kubernetes version:

    .venv/bin/python scripts/vendor_k8s_schemas.py 1.30.0
"""
import json
import sys
from pathlib import Path

import kubernetes_validate

VERSION = sys.argv[1] if len(sys.argv) > 1 else "1.30.0"
ROOTS = ["io.k8s.api.batch.v1.Job", "io.k8s.api.core.v1.ConfigMap", "io.k8s.api.core.v1.Service",
         "io.k8s.api.core.v1.PodTemplateSpec"]
src = Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema" / f"v{VERSION}-local-strict"
defs = json.loads((src / "_definitions.json").read_text())["$defs"]
PREFIX = "#/$defs/"


def refs(node):
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "$ref" and isinstance(v, str):
                yield v.split("_definitions.json", 1)[-1]
            else:
                yield from refs(v)
    elif isinstance(node, list):
        for v in node:
            yield from refs(v)


def rewrite(node):
    if isinstance(node, dict):
        return {k: ("#" + v.split("#", 1)[1] if k == "$ref" else rewrite(v))
                for k, v in node.items() if k != "description"}
    if isinstance(node, list):
        return [rewrite(v) for v in node]
    return node


keep, todo = {}, list(ROOTS)
while todo:
    name = todo.pop()
    if name in keep:
        continue
    keep[name] = defs[name]
    todo.extend(r.removeprefix(PREFIX) for r in refs(defs[name]) if r.startswith(PREFIX))
out = Path(__file__).resolve().parents[1] / "runners/kubernetes/schemas" / f"k8s-v{VERSION.rsplit('.', 1)[0]}-strict.json"
bundle = {"$schema": "https://json-schema.org/draft/2020-12/schema",
          "$id": out.name, "x-kubernetes-version": VERSION, "$defs": rewrite(keep)}
out.write_text(json.dumps(bundle, indent=1, sort_keys=True) + "\n")
print(f"wrote {out} ({len(keep)} definitions, {out.stat().st_size // 1024} KiB)")
