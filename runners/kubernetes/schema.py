"""Validate manifests against vendored JSON schemas (strict: unknown fields are errors).

``schemas/k8s-v1.30-strict.json`` holds the core and batch definitions tfdesk uses, cut from the
strict schemas that ``kubernetes-validate`` ships (scripts/vendor_k8s_schemas.py regenerates it);
``schemas/mpijob-v2beta1.json`` describes the mpi-operator's MPIJob and checks its pod templates
against the core PodTemplateSpec.
"""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from referencing import Registry, Resource

from runners.models import JobError

SCHEMA_DIR = Path(__file__).with_name("schemas")
CORE = "k8s-v1.30-strict.json"
KINDS = {  # (apiVersion, kind) -> schema reference
    ("v1", "ConfigMap"): f"{CORE}#/$defs/io.k8s.api.core.v1.ConfigMap",
    ("v1", "Service"): f"{CORE}#/$defs/io.k8s.api.core.v1.Service",
    ("batch/v1", "Job"): f"{CORE}#/$defs/io.k8s.api.batch.v1.Job",
    ("kubeflow.org/v2beta1", "MPIJob"): "mpijob-v2beta1.json",
    # JobSet's own CRD schema, made strict (scripts/vendor_jobset_schema.py; origin in the file).
    ("jobset.x-k8s.io/v1alpha2", "JobSet"): "jobset-v1alpha2.json",
}


class ManifestError(JobError):
    pass


@lru_cache(maxsize=1)
def _registry() -> Registry:
    resources = []
    for path in SCHEMA_DIR.glob("*.json"):
        doc = json.loads(path.read_text())
        resources.append((path.name, Resource.from_contents(doc)))
    return Registry().with_resources(resources)


@lru_cache(maxsize=8)
def _validator(ref: str) -> Draft202012Validator:
    return Draft202012Validator({"$ref": ref}, registry=_registry())


def validate(manifest: dict[str, Any]) -> None:
    key = (manifest.get("apiVersion"), manifest.get("kind"))
    if key not in KINDS:
        raise ManifestError(f"no schema for {key[1]} {key[0]}")
    errors = sorted(_validator(KINDS[key]).iter_errors(manifest), key=lambda e: list(e.absolute_path))
    if errors:
        name = manifest.get("metadata", {}).get("name", "?")
        detail = "; ".join(f"{'.'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}"
                           for e in errors[:5])
        raise ManifestError(f"{key[1]} {name} does not match the {key[0]} schema: {detail}")
