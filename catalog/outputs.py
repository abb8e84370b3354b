"""Registering what jobs produce: every training and conversion job's model enters the catalog,
linked to its job (and pipeline run), its source model or dataset, and its reports.

The engine calls :func:`register_job_outputs` when a job succeeds (or attaches it as a
subscriber); pipeline runs call it after each step. Calling it twice for one job is harmless.
"""
from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from catalog import lookup, models, projects
from catalog.model_files import loadable_format, pick_model
from catalog.errors import CatalogError
from catalog.names import NAME_MAX, NAME_RE
from catalog.store import transaction

# Job kind -> which artifact names hold its model, and which FinishedJob field names the model
# it read.
RULES: dict[str, dict[str, Any]] = {
    "train": {"artifacts": ("saved_model", "model", "keras_model"), "parent": None},
    "convert-model": {"artifacts": ("onnx", "converted_model", "model", "engine", "plan"),
                      "parent": "model"},
    "infer": {"benchmark_of": "model"},
    "evaluate": {"evaluation_of": "model"},
}


@dataclass(frozen=True)
class FinishedJob:
    """What the catalog needs of a finished job to register what it made: who and what it
    was, the model it read, and the catalog context it was given (its labels)."""
    id: str
    kind: str
    owner: str = "tfdesk"
    state: str = "succeeded"
    model: str | None = None       # the model a model job read (a catalog name or a path)
    source: str | None = None      # the file a training job ran, as the user named it
    register: str | None = None    # the catalog name its model is registered under
    project: str | None = None
    dataset: str | None = None
    pipeline_run: str | None = None
    step: str | None = None

    @classmethod
    def of(cls, job_id: str, kind: str, spec, owner: str = "tfdesk",
           state: str = "succeeded") -> "FinishedJob":
        """From a typed spec, stored (runners/stored.py) or submitted (runners/specs.py):
        both carry ``labels``; a model job names ``model``, a training job its script. None:
        a step whose spec was not recorded (the run's context is given by the caller)."""
        if spec is None:
            return cls(job_id, kind, owner or "tfdesk", state)
        labels = spec.labels
        source = getattr(spec, "script_name", None) or getattr(spec, "script_path", None)
        return cls(job_id, kind, owner or "tfdesk", state, getattr(spec, "model", None),
                   source, labels.register, labels.project, labels.dataset,
                   labels.pipeline_run, labels.step)


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


def default_name(conn: sqlite3.Connection, job: FinishedJob, parent, fmt: str,
                 path: Path) -> str | None:
    """What a job's model is registered as, when the step gives no ``register:`` name: after
    the catalog model it was converted from (``mnist-cnn-onnx``); else the pipeline and step it
    came from (``mnist-train``); a one-off conversion of a file, after the file. None: a
    one-off training without ``--register NAME`` registers nothing (its model stays the job's
    artifact; a name made from its script, ``train``, would name nothing anyone chose)."""
    if parent is not None:
        return f"{parent['name']}-{models.check_format(fmt)}"
    if job.pipeline_run and job.step:
        row = conn.execute("SELECT pipeline FROM catalog_runs WHERE id = ?",
                           (job.pipeline_run,)).fetchone()
        if row is not None:
            return f"{row[0]}-{job.step}"
    if job.kind == "train":
        return None
    return Path(str(job.model or path)).stem


def register_job_outputs(conn: sqlite3.Connection, job: FinishedJob, artifacts=None,
                         results: dict[str, Any] | None = None, *, run_id: str | None = None,
                         name: str | None = None, tf_version: str = "") -> list[dict[str, Any]]:
    """Register a finished job's outputs; returns the catalog entries made or updated.

    ``artifacts``: {"name", "path"} dicts or paths; ``results``: validation, benchmark,
    evaluation reports.
    """
    job_id, kind, owner = job.id, job.kind, job.owner
    if job.state != "succeeded" or kind not in RULES:
        return []
    rule = RULES[kind]
    artifacts = _artifact_list(artifacts)
    results = results or {}
    project = job.project
    if project and conn.execute("SELECT 1 FROM catalog_projects WHERE name = ?",
                                (project,)).fetchone() is None:
        project = None  # a job may name a project that was deleted since
    out: list[dict[str, Any]] = []
    with transaction(conn):
        if project:
            projects.add_job(conn, project, job_id)
        if "benchmark_of" in rule or "evaluation_of" in rule:
            key = rule.get("benchmark_of") or rule.get("evaluation_of")
            row = find_model(conn, getattr(job, key))
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
        artifact = pick_model(artifacts, rule["artifacts"])
        if artifact is None:
            return []
        path = Path(artifact["path"])
        parent = find_model(conn, getattr(job, rule["parent"])) if rule["parent"] else None
        fmt = loadable_format(path)
        if not fmt:
            return []
        chosen = name or job.register  # a name someone chose is kept as given (checked)
        name = chosen or default_name(conn, job, parent, fmt, path)
        if name is None:
            return []
        if not project and parent is not None and parent["project_id"] is not None:
            project = conn.execute("SELECT name FROM catalog_projects WHERE id = ?",
                                   (parent["project_id"],)).fetchone()[0]
            projects.add_job(conn, project, job_id)
        dataset = job.dataset
        if dataset and conn.execute("SELECT 1 FROM catalog_datasets WHERE name = ?",
                                    (dataset,)).fetchone() is None:
            dataset = None  # a path, not a catalog name
        entry = models.add(
                conn, name if chosen else _clean_name(str(name)), owner=owner,
                artifact_uri=str(path), format=fmt,
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
