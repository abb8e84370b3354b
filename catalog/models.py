"""Models: named, auto-versioned artifacts with where they came from and how they measured."""
from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

from catalog import entries, lookup
from catalog.kept import copy_folder, release
from catalog.errors import HasDependants, InvalidInput, NotFound
from catalog.names import check_name, split_ref
from catalog.store import now, transaction

KIND = "model"
FORMATS = ("savedmodel", "keras", "onnx", "tensorrt", "tf-trt")
FORMAT_ALIASES = {"saved_model": "savedmodel", "saved-model": "savedmodel", "h5": "keras",
                  "trt": "tensorrt", "plan": "tensorrt", "engine": "tensorrt"}


def check_format(fmt: str) -> str:
    f = FORMAT_ALIASES.get(fmt.lower(), fmt.lower())
    if f not in FORMATS:
        raise InvalidInput(f"unknown model format {fmt!r}; one of: {', '.join(FORMATS)}")
    return f


def guess_format(path: Path) -> str | None:
    if path.is_dir():
        return "savedmodel" if (path / "saved_model.pb").exists() else None
    return {".keras": "keras", ".h5": "keras", ".onnx": "onnx", ".plan": "tensorrt",
            ".engine": "tensorrt"}.get(path.suffix.lower())


def next_version(conn, name: str) -> int:
    row = conn.execute("SELECT MAX(version) AS v FROM catalog_models WHERE name = ?",
                       (name,)).fetchone()
    return (row["v"] or 0) + 1


def model_id(conn, ref: str) -> int:
    return lookup.row(conn, KIND, ref)["id"]


def add(conn: sqlite3.Connection, name: str, owner: str, artifact_uri: str = "",
        format: str | None = None, tf_version: str = "", job_id: str | None = None,
        run_id: str | None = None, parent: str | None = None, dataset: str | None = None,
        validation: dict | None = None, benchmark: dict | None = None, description: str = "",
        project: str | None = None, tags=None, store_dir: Path | None = None,
        copy: bool = False) -> dict[str, Any]:
    """Register a new version of ``name``. With ``copy`` and ``store_dir``, the artifact is
    copied under ``store_dir/NAME/VERSION/`` so the catalog owns it (and deletes it)."""
    check_name(name, "model name")
    src = Path(artifact_uri).expanduser() if artifact_uri and "://" not in artifact_uri else None
    if src is not None:
        if not src.exists():
            raise InvalidInput(f"model artifact {str(src)!r} does not exist")
        src = src.resolve()
    fmt = format or (guess_format(src) if src else None)
    if not fmt:
        raise InvalidInput("cannot tell the model format from the artifact; give --format "
                           f"({', '.join(FORMATS)})")
    fmt = check_format(fmt)
    copied: Path | None = None
    try:
        with transaction(conn):
            version = next_version(conn, name)
            pid = entries.project_id(conn, project)
            parent_id = model_id(conn, parent) if parent else None
            dataset_id = None
            if dataset:
                check_name(dataset, "dataset name")
                row = conn.execute("SELECT id FROM catalog_datasets WHERE name = ?",
                                   (dataset,)).fetchone()
                if row is None:
                    raise NotFound(f"no dataset named {dataset!r}; see 'datasets list'")
                dataset_id = row["id"]
            uri = str(src) if src else (artifact_uri or "")
            if src is not None and copy and store_dir is not None:
                copied = Path(store_dir) / name / str(version) / src.name
                if copied.parent.exists():  # left over from a failed earlier attempt
                    shutil.rmtree(copied.parent)
                copied.parent.mkdir(parents=True)
                (shutil.copytree if src.is_dir() else shutil.copy2)(src, copied)
                uri = str(copied)
            cur = conn.execute(
                "INSERT INTO catalog_models (name, version, format, tf_version, job_id, run_id, "
                "parent_id, dataset_id, validation, benchmark, artifact_uri, description, owner, "
                "project_id, created) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (name, version, fmt, tf_version or "", job_id, run_id, parent_id, dataset_id,
                 json.dumps(validation) if validation is not None else None,
                 json.dumps(benchmark) if benchmark is not None else None,
                 uri, description or "", owner, pid, now()))
            entries.set_tags(conn, KIND, cur.lastrowid, tags or [])
    except BaseException:
        if copied is not None and copied.parent.exists():
            shutil.rmtree(copied.parent, ignore_errors=True)  # nothing half-written survives
        raise
    return get(conn, f"{name}:{version}")


def _dicts(conn, rows) -> list[dict[str, Any]]:
    out = entries.to_dicts(conn, KIND, rows, json_fields=("validation", "benchmark"))
    ids = {r["parent_id"] for r in rows if r["parent_id"]} | {r["dataset_id"] for r in rows
                                                             if r["dataset_id"]}
    parents = {}
    datasets = {}
    if ids:
        parents = {r["id"]: f"{r['name']}:{r['version']}" for r in conn.execute(
            f"SELECT id, name, version FROM catalog_models WHERE id IN "
            f"({','.join('?' * len(ids))})", list(ids))}
        datasets = {r["id"]: r["name"] for r in conn.execute(
            f"SELECT id, name FROM catalog_datasets WHERE id IN ({','.join('?' * len(ids))})",
            list(ids))}
    for d in out:
        d["ref"] = f"{d['name']}:{d['version']}"
        d["parent"] = parents.get(d.pop("parent_id"))
        d["dataset"] = datasets.get(d.pop("dataset_id"))
    return out


def get(conn: sqlite3.Connection, ref: str) -> dict[str, Any]:
    row = lookup.row(conn, KIND, ref)
    d = _dicts(conn, [row])[0]
    d["derived"] = [f"{r['name']}:{r['version']}" for r in conn.execute(
        "SELECT name, version FROM catalog_models WHERE parent_id = ? ORDER BY id", (row["id"],))]
    d["used_by"] = dependants(conn, row)
    return d


def list_(conn: sqlite3.Connection, project=None, tag=None, owner=None, search=None,
          format=None, limit=50, offset=0) -> list[dict[str, Any]]:
    where, params = [], []
    if format:
        where.append("x.format = ?")
        params.append(check_format(format))
    rows = entries.list_rows(conn, "catalog_models", KIND, project=project, tag=tag,
                             owner=owner, search=search, where=where, params=params,
                             limit=limit, offset=offset)
    return _dicts(conn, rows)


def dependants(conn, row) -> list[str]:
    return entries.dependants(conn, KIND, row)


def update_results(conn: sqlite3.Connection, ref: str, validation: dict | None = None,
                   benchmark: dict | None = None) -> dict[str, Any]:
    with transaction(conn):
        row = lookup.row(conn, KIND, ref)
        if validation is not None:
            conn.execute("UPDATE catalog_models SET validation = ? WHERE id = ?",
                         (json.dumps(validation), row["id"]))
        if benchmark is not None:
            conn.execute("UPDATE catalog_models SET benchmark = ? WHERE id = ?",
                         (json.dumps(benchmark), row["id"]))
    return get(conn, f"{row['name']}:{row['version']}")


def _inside(path: Path, roots: list[Path]) -> bool:
    for root in roots:
        try:
            path.resolve().relative_to(Path(root).resolve())
            return True
        except ValueError:
            continue
    return False


def delete(conn: sqlite3.Connection, ref: str, force: bool = False,
           store_dir: Path | None = None, kept_dir: Path | None = None) -> dict[str, Any]:
    """Delete one version (``name:3``) or, given a bare name, every version.

    Only files the catalog created are removed: the copy ``add(copy=True)`` made under
    ``store_dir/NAME/VERSION/``, and a file gate copy under ``kept_dir`` (catalog/kept.py)
    that no other entry points at. Everything else (models registered in place, job outputs,
    which ``delete JOB`` removes) is left where it is, and the answer says so.
    """
    name, version = split_ref(ref)
    with transaction(conn):
        if version is None:
            rows = conn.execute("SELECT * FROM catalog_models WHERE name = ? ORDER BY version",
                                (name,)).fetchall()
            if not rows:
                raise NotFound(f"no model {name!r}; see 'models list'")
        else:
            rows = [lookup.row(conn, KIND, ref)]
        deps = []
        for row in rows:
            deps += [d for d in dependants(conn, row) if d not in deps]
        if deps and not force:
            raise HasDependants(f"model {ref!r}", deps)
        paths = []
        for row in rows:
            entries.drop_tags(conn, KIND, row["id"])
            conn.execute("DELETE FROM catalog_uses WHERE kind = ? AND item_id = ?",
                         (KIND, row["id"]))
            conn.execute("DELETE FROM catalog_models WHERE id = ?", (row["id"],))
            if row["artifact_uri"] and "://" not in row["artifact_uri"]:
                paths.append((Path(row["artifact_uri"]), row["name"], row["version"]))
    # Files go only after the rows are gone for good (a failed commit keeps both).
    removed, kept = [], []
    for p, name_, version_ in paths:
        if not p.exists():
            continue
        if kept_dir is not None and copy_folder(Path(kept_dir), str(p)) is not None:
            removed += release(conn, Path(kept_dir), [str(p)])
            continue  # a gate copy: gone with its last entry, kept while another points at it
        own = Path(store_dir) / name_ / str(version_) if store_dir else None
        if own is not None and _inside(p, [own]):
            shutil.rmtree(p) if p.is_dir() and not p.is_symlink() else p.unlink()
            removed.append(str(p))
            if own.exists() and not any(own.iterdir()):  # the NAME/VERSION folder it made
                own.rmdir()
        else:
            kept.append(str(p))
    return {"deleted": [f"model {r['name']}:{r['version']}" for r in rows],
            "artifacts_removed": removed, "artifacts_kept": kept, "dependants": deps}
