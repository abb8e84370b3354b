"""Where a job comes from and what came of it, as the catalog records it: the catalog model it
read, the pipeline run step it ran as, the models it produced. Read-only (the web run page)."""
from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class JobLineage:
    read: str | None = None                  # NAME[:VERSION] of the catalog model it read
    produced: list[str] = field(default_factory=list)   # NAME:VERSION it registered
    pipeline_run: dict[str, str] | None = None          # {"run_id", "name"} of its step


def _tables(conn: sqlite3.Connection) -> set[str]:
    # a state database whose catalog was never opened has no catalog tables yet
    return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}


def of_job(conn: sqlite3.Connection, job_id: str, spec: Any) -> JobLineage:
    """The lineage of job ``job_id`` whose spec is ``spec`` (runners/stored.py)."""
    model = getattr(spec, "model", None)  # what a model job read
    read = model if isinstance(model, str) else None
    tables = _tables(conn)
    produced: list[str] = []
    if "catalog_models" in tables:
        produced = [f"{r['name']}:{r['version']}" for r in conn.execute(
            "SELECT name, version FROM catalog_models WHERE job_id = ? ORDER BY id", (job_id,))]
        if read and ":" not in read and "/" in read:
            read = None  # a path, not a catalog model
    step = None
    if "catalog_run_steps" in tables:
        found = conn.execute("SELECT run_id, name FROM catalog_run_steps WHERE job_id = ?",
                             (job_id,)).fetchone()
        step = dict(found) if found else None
    return JobLineage(read=read, produced=produced, pipeline_run=step)
