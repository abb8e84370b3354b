"""Vendor JobSet's own CRD schema for strict validation of the JobSets tfdesk makes.

Reads the CRD YAML of kubernetes-sigs/jobset (config/components/crd/bases/
jobset.x-k8s.io_jobsets.yaml), takes the served version's openAPIV3Schema and makes it a strict
JSON schema: every object that lists its properties rejects others (the API server would prune
them silently), int-or-string fields accept both, descriptions are dropped, and the pod template
inside each replicated Job is checked against the vendored core PodTemplateSpec (1.30, strict).

    .venv/bin/python scripts/vendor_jobset_schema.py CRD.yaml ORIGIN COMMIT
"""
import json
import sys
from pathlib import Path

import yaml

CRD, ORIGIN, COMMIT = sys.argv[1], sys.argv[2], sys.argv[3]
CORE = "k8s-v1.30-strict.json#/$defs/"


def strict(node):
    if isinstance(node, list):
        return [strict(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        if key in ("description", "format") or key.startswith("x-kubernetes"):
            continue
        out[key] = strict(value)
    if node.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    if "properties" in out and "additionalProperties" not in out and \
            not node.get("x-kubernetes-preserve-unknown-fields"):
        out["additionalProperties"] = False
    if node.get("nullable"):
        out.pop("nullable", None)
    return out


crd = yaml.safe_load(Path(CRD).read_text())
version = next(v for v in crd["spec"]["versions"] if v.get("served") and v.get("storage", True))
schema = strict(version["schema"]["openAPIV3Schema"])
group = crd["spec"]["group"]
schema["properties"]["apiVersion"] = {"const": f"{group}/{version['name']}"}
schema["properties"]["kind"] = {"const": crd["spec"]["names"]["kind"]}
schema["properties"]["metadata"] = {"$ref": CORE + "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}
schema["required"] = ["apiVersion", "kind", "metadata", "spec"]
job = schema["properties"]["spec"]["properties"]["replicatedJobs"]["items"]["properties"]["template"]
job["properties"]["metadata"] = {"$ref": CORE + "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}
job["properties"]["spec"]["properties"]["template"] = {"$ref": CORE + "io.k8s.api.core.v1.PodTemplateSpec"}
out = Path(__file__).resolve().parents[1] / "runners/kubernetes/schemas" / f"jobset-{version['name']}.json"
bundle = {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": out.name,
          "x-origin": ORIGIN, "x-commit": COMMIT, **schema}
out.write_text(json.dumps(bundle, indent=1, sort_keys=True) + "\n")
print(f"wrote {out} ({out.stat().st_size // 1024} KiB)")
