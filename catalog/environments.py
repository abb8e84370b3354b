"""Environments: the runtimes jobs run in (the local runner environment, or container images
for Kubernetes), with the versions that decide which scripts and models they can take."""
from __future__ import annotations

import sqlite3
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from catalog import entries
from catalog.errors import Duplicate, HasDependants, InvalidInput, NotFound
from catalog.names import check_name
from catalog.store import now, transaction

KIND = "environment"
DEFAULT_NAME = "runner"
# What scripts/build_runner_env.sh installs; the default environment describes it.
RUNNER_VERSIONS = {"tf_version": "2.15.1", "keras_version": "2.15.0", "horovod_version": "0.28.1"}
IMAGE_RE = r"[a-z0-9]([a-z0-9._/-]*[a-z0-9])?(:[0-9]+)?(/[a-z0-9._-]+)*(:[A-Za-z0-9._-]{1,128})?(@sha256:[a-f0-9]{64})?"


def _check_version(value: str, what: str) -> str:
    if not value:
        return ""
    try:
        Version(value)
    except InvalidVersion:
        raise InvalidInput(f"{what} {value!r} is not a version number (e.g. 2.15.1)") from None
    return value


def add(conn: sqlite3.Connection, name: str, owner: str, kind: str = "image", image: str = "",
        python: str = "", tf_version: str = "", keras_version: str = "",
        horovod_version: str = "", description: str = "", project: str | None = None,
        default: bool = False, tags=None) -> dict[str, Any]:
    import re
    check_name(name, "environment name")
    if kind not in ("local", "image"):
        raise InvalidInput(f"environment kind must be 'local' or 'image', not {kind!r}")
    if kind == "image":
        if not image:
            raise InvalidInput("an image environment needs --image (e.g. "
                               "tensorflow/tensorflow:2.15.0-gpu)")
        if not re.fullmatch(IMAGE_RE, image):
            raise InvalidInput(f"{image!r} is not a valid container image reference")
    if kind == "local" and not python:
        raise InvalidInput("a local environment needs --python (the interpreter to run jobs with)")
    versions = {"tf_version": _check_version(tf_version, "TensorFlow version"),
                "keras_version": _check_version(keras_version, "Keras version"),
                "horovod_version": _check_version(horovod_version, "Horovod version")}
    with transaction(conn):
        if conn.execute("SELECT 1 FROM catalog_environments WHERE name = ?", (name,)).fetchone():
            raise Duplicate(f"an environment named {name!r} already exists")
        pid = entries.project_id(conn, project)
        if default:
            conn.execute("UPDATE catalog_environments SET is_default = 0")
        cur = conn.execute(
            "INSERT INTO catalog_environments (name, kind, image, python, tf_version, "
            "keras_version, horovod_version, is_default, description, owner, project_id, created) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (name, kind, image, python, versions["tf_version"], versions["keras_version"],
             versions["horovod_version"], int(default), description or "", owner, pid, now()))
        entries.set_tags(conn, KIND, cur.lastrowid, tags or [])
    return get(conn, name)


def ensure_default(conn: sqlite3.Connection, python: str) -> None:
    """The runner environment is always there and is the default unless another was chosen."""
    if conn.execute("SELECT 1 FROM catalog_environments WHERE name = ?",
                    (DEFAULT_NAME,)).fetchone():
        return
    has_default = conn.execute(
        "SELECT 1 FROM catalog_environments WHERE is_default = 1").fetchone() is not None
    add(conn, DEFAULT_NAME, owner="tfdesk", kind="local", python=python,
        description="the local runner environment (TensorFlow, Horovod with gloo, tf2onnx, "
                    "ONNX Runtime)", default=not has_default, **RUNNER_VERSIONS)


def _row(conn, name: str) -> sqlite3.Row:
    check_name(name, "environment name")
    row = conn.execute("SELECT * FROM catalog_environments WHERE name = ?", (name,)).fetchone()
    if row is None:
        raise NotFound(f"no environment named {name!r}; see 'environments list'")
    return row


def _dicts(conn, rows):
    out = entries.to_dicts(conn, KIND, rows)
    for d in out:
        d["default"] = bool(d.pop("is_default"))
    return out


def get(conn: sqlite3.Connection, name: str) -> dict[str, Any]:
    row = _row(conn, name)
    d = _dicts(conn, [row])[0]
    d["used_by"] = dependants(conn, row)
    return d


def list_(conn: sqlite3.Connection, project=None, tag=None, owner=None, search=None,
          limit=50, offset=0) -> list[dict[str, Any]]:
    rows = entries.list_rows(conn, "catalog_environments", KIND, project=project, tag=tag,
                             owner=owner, search=search, limit=limit, offset=offset)
    return _dicts(conn, rows)


def dependants(conn, row) -> list[str]:
    return entries.dependants(conn, KIND, row)


def delete(conn: sqlite3.Connection, name: str, force: bool = False) -> dict[str, Any]:
    with transaction(conn):
        row = _row(conn, name)
        deps = dependants(conn, row)
        if row["is_default"]:
            deps = deps + ["(it is the default environment; make another the default first)"]
        if deps and not force:
            raise HasDependants(f"environment {row['name']!r}", deps)
        entries.drop_tags(conn, KIND, row["id"])
        conn.execute("DELETE FROM catalog_environments WHERE id = ?", (row["id"],))
    return {"deleted": f"environment {row['name']}", "dependants": deps}


def set_default(conn: sqlite3.Connection, name: str) -> dict[str, Any]:
    with transaction(conn):
        row = _row(conn, name)
        conn.execute("UPDATE catalog_environments SET is_default = (id = ?)", (row["id"],))
    return get(conn, name)


def match(conn: sqlite3.Connection, tf: str | None = None, horovod: bool = False,
          kind: str | None = None) -> dict[str, Any]:
    """The environment for a job that needs TensorFlow ``tf`` (a version or a specifier such
    as ``>=2.16``) and maybe Horovod: the default when it fits, else the newest that fits."""
    spec = None
    if tf:
        try:
            spec = SpecifierSet(tf) if tf[0] in "<>=!~" else SpecifierSet(f"=={tf}.*"
                                                                          if tf.count(".") < 2
                                                                          else f"=={tf}")
        except InvalidSpecifier:
            raise InvalidInput(f"{tf!r} is not a TensorFlow version or requirement") from None
    rows = conn.execute("SELECT * FROM catalog_environments ORDER BY is_default DESC, id DESC"
                        ).fetchall()
    reasons = []
    for row in rows:
        if kind and row["kind"] != kind:
            reasons.append(f"{row['name']}: kind {row['kind']}")
            continue
        if spec is not None and not (row["tf_version"] and spec.contains(row["tf_version"],
                                                                          prereleases=True)):
            reasons.append(f"{row['name']}: TensorFlow {row['tf_version'] or 'unknown'}")
            continue
        if horovod and not row["horovod_version"]:
            reasons.append(f"{row['name']}: no Horovod")
            continue
        return get(conn, row["name"])
    need = ", ".join(filter(None, [f"TensorFlow {tf}" if tf else "", "Horovod" if horovod else "",
                                   f"kind {kind}" if kind else ""]))
    raise NotFound(f"no environment has {need}" + (": " + "; ".join(reasons) if reasons else "")
                   + ". Add one with 'environments add'.")
