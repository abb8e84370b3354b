"""Registering what jobs produce: every training and conversion job's model enters the catalog,
linked to its job (and pipeline run), its source model or dataset, and its reports.

The engine calls :func:`register_job_outputs` when a job succeeds (or attaches it as a
subscriber); pipeline runs call it after each step. Calling it twice for one job is harmless.
"""
from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any

from catalog import lookup, models, projects
from catalog.errors import CatalogError
from catalog.names import NAME_MAX, NAME_RE
from catalog.store import transaction

# Job kind -> which artifact names hold its model, and which spec key names its input model.
RULES: dict[str, dict[str, Any]] = {
    "train": {"artifacts": ("saved_model", "model", "keras_model"), "parent": None},
    "convert-model": {"artifacts": ("onnx", "converted_model", "model", "engine", "plan"),
                      "parent": "model"},
    "infer": {"benchmark_of": "model"},
    "evaluate": {"evaluation_of": "model"},
}


def _get(obj, key, default=None):
    if isinstance(obj, dict):
        return obj.get(key, default)
    return getattr(obj, key, default)


def _clean_name(text: str) -> str:
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-._")[:NAME_MAX] or "model"
    return name if NAME_RE.fullmatch(name) else f"m{name}"[:NAME_MAX]


def _artifact_list(artifacts) -> list[dict[str, Any]]:
    out = []
    for a in artifacts or []:
        if isinstance(a, (str, Path)):
            out.append({"name": Path(a).name, "path": str(a)})
        elif isinstance(a, dict) and a.get("path"):
            out.append({"name": a.get("name") or Path(a["path"]).name, **a})
    return out


def _pick_model(artifacts: list[dict[str, Any]], names) -> dict[str, Any] | None:
    by_name = {a["name"]: a for a in artifacts}
    for n in names:
        if n in by_name and Path(by_name[n]["path"]).exists():
            return by_name[n]
    for a in artifacts:  # otherwise any artifact that is recognisably a model
        if Path(a["path"]).exists() and models.guess_format(Path(a["path"])):
            return a
    return None


def find_model(conn: sqlite3.Connection, ref_or_path: str | None) -> sqlite3.Row | None:
    """A catalog model named ``name[:version]``, or the one whose artifact is at that path."""
    if not ref_or_path:
        return None
    ref = str(ref_or_path)
    name, _, version = ref.partition(":")
    if NAME_RE.fullmatch(name) and (not version or version.isdigit()):
        try:
            return lookup.row(conn, "model", ref)
        except CatalogError:  # no such model (or version): perhaps a path
            pass
    path = str(Path(ref).expanduser().resolve()) if "://" not in ref else ref
    return conn.execute("SELECT * FROM catalog_models WHERE artifact_uri = ? ORDER BY id DESC "
                        "LIMIT 1", (path,)).fetchone()


def default_name(conn: sqlite3.Connection, spec: dict[str, Any], parent, fmt: str,
                 path: Path) -> str:
    """What a job's model is registered as, when the step gives no ``register:`` name: after
    the catalog model it was converted from (``mnist-cnn-onnx``); else the pipeline and step it
    came from (``mnist-train``); only for a one-off job on a file, the file's name."""
    if spec.get("register") or spec.get("model_name"):
        return spec.get("register") or spec.get("model_name")
    if parent is not None:
        return f"{parent['name']}-{models.check_format(fmt)}"
    if spec.get("pipeline_run") and spec.get("step"):
        row = conn.execute("SELECT pipeline FROM catalog_runs WHERE id = ?",
                           (spec["pipeline_run"],)).fetchone()
        if row is not None:
            return f"{row[0]}-{spec['step']}"
    # script_name: the user's file name (a train job stores its copy as script.py)
    source = spec.get("script_name") or spec.get("script") or spec.get("model") or str(path)
    return Path(str(source)).stem


def register_job_outputs(conn: sqlite3.Connection, job, artifacts=None,
                         results: dict[str, Any] | None = None, *, run_id: str | None = None,
                         name: str | None = None, tf_version: str = "") -> list[dict[str, Any]]:
    """Register a finished job's outputs; returns the catalog entries made or updated.

    ``job`` is the engine's Job (or a dict) with id, kind, spec, owner and state; artifacts
    default to ``job.artifacts`` ({"name", "path"} dicts or paths) and results (validation,
    benchmark) to ``job.results``.
    """
    job_id = _get(job, "id")
    kind = _get(job, "kind")
    state = _get(job, "state", "succeeded")
    spec = _get(job, "spec") or {}
    owner = _get(job, "owner") or "tfdesk"
    if state != "succeeded" or kind not in RULES:
        return []
    rule = RULES[kind]
    artifacts = _artifact_list(artifacts if artifacts is not None else _get(job, "artifacts"))
    results = results if results is not None else (_get(job, "results") or {})
    project = spec.get("project")
    if project and conn.execute("SELECT 1 FROM catalog_projects WHERE name = ?",
                                (project,)).fetchone() is None:
        project = None  # a job may name a project that was deleted since
    out: list[dict[str, Any]] = []
    with transaction(conn):
        if project:
            projects.add_job(conn, project, job_id)
        if "benchmark_of" in rule or "evaluation_of" in rule:
            key = rule.get("benchmark_of") or rule.get("evaluation_of")
            row = find_model(conn, spec.get(key))
            report = results.get("benchmark") or results.get("evaluation") or results
            if row is not None and report:
                ref = f"{row['name']}:{row['version']}"
                if "benchmark_of" in rule:
                    out.append(models.update_results(conn, ref, benchmark=report))
                else:
                    # An evaluation joins the conversion's validation; it does not replace it.
                    validation = models.get(conn, ref).get("validation") or {}
                    if not isinstance(validation, dict):
                        validation = {"conversion": validation}
                    out.append(models.update_results(
                        conn, ref, validation={**validation, "evaluation": report}))
            return out
        existing = conn.execute("SELECT name, version FROM catalog_models WHERE job_id = ?",
                                (job_id,)).fetchall()
        if existing:
            return [models.get(conn, f"{r['name']}:{r['version']}") for r in existing]
        artifact = _pick_model(artifacts, rule["artifacts"])
        if artifact is None:
            return []
        path = Path(artifact["path"])
        parent = find_model(conn, spec.get(rule["parent"])) if rule["parent"] else None
        fmt = models.guess_format(path) or artifact.get("format")
        if not fmt:
            return []
        name = name or default_name(conn, spec, parent, fmt, path)
        if not project and parent is not None and parent["project_id"] is not None:
            project = conn.execute("SELECT name FROM catalog_projects WHERE id = ?",
                                   (parent["project_id"],)).fetchone()[0]
            projects.add_job(conn, project, job_id)
        dataset = spec.get("dataset")
        if dataset and conn.execute("SELECT 1 FROM catalog_datasets WHERE name = ?",
                                    (dataset,)).fetchone() is None:
            dataset = None  # a path, not a catalog name
        entry = models.add(
                conn, _clean_name(str(name)), owner=owner, artifact_uri=str(path), format=fmt,
                tf_version=tf_version or results.get("tf_version", "") or
                (parent["tf_version"] if parent is not None else ""),
                job_id=job_id, run_id=run_id,
                parent=f"{parent['name']}:{parent['version']}" if parent is not None else None,
                dataset=dataset if parent is None else None,
                validation=results.get("validation"), benchmark=results.get("benchmark"),
                description=f"produced by {kind} job {job_id}", project=project,
                tags=[kind])
        out.append(entry)
    return out
