"""Environments: the runtimes jobs run in (the local runner environment, or container images
for Kubernetes), with the versions that decide which scripts and models they can take."""
from __future__ import annotations

import hashlib
import sqlite3
from functools import lru_cache
from pathlib import Path
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from catalog import entries, lookup
from catalog.errors import Duplicate, HasDependants, InvalidInput, NotFound
from catalog.names import check_name
from catalog.store import now, transaction

KIND = "environment"
DEFAULT_NAME = "runner"
# What scripts/build_runner_env.sh installs; the default environment describes it.
RUNNER_VERSIONS = {"tf_version": "2.15.1", "keras_version": "2.15.0", "horovod_version": "0.28.1"}
RUNNER_DESCRIPTION = ("the local runner environment (TensorFlow, Horovod with gloo, tf2onnx, "
                      "ONNX Runtime)")
# The second runtime, scripts/build_runner_env_keras3.sh: newest TensorFlow with Keras 3.
KERAS3_NAME = "runner-tf221"
KERAS3_VERSIONS = {"tf_version": "2.21.0", "keras_version": "", "horovod_version": ""}
KERAS3_DESCRIPTION = ("the local Keras 3 runtime (TensorFlow 2.21, no Horovod): tf.distribute "
                      "jobs and models saved with Keras 3")
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
    if kind == "local" and not (tf_version or keras_version or horovod_version) and \
            Path(python).exists():
        found = probe(python)  # recorded once, so choosing a runtime never runs interpreters
        tf_version, keras_version, horovod_version = (
            found.get("tf_version", ""), found.get("keras_version", ""),
            found.get("horovod_version", ""))
    versions = {"tf_version": _check_version(tf_version, "TensorFlow version"),
                "keras_version": _check_version(keras_version, "Keras version"),
                "horovod_version": _check_version(horovod_version, "Horovod version")}
    with transaction(conn):
        if conn.execute("SELECT 1 FROM catalog_environments WHERE name = ?", (name,)).fetchone():
            raise Duplicate(f"an environment named {name!r} already exists")
        pid = entries.project_id(conn, project)
        if default:  # one default per kind: local jobs and Kubernetes jobs each have theirs
            conn.execute("UPDATE catalog_environments SET is_default = 0 WHERE kind = ?", (kind,))
        cur = conn.execute(
            "INSERT INTO catalog_environments (name, kind, image, python, tf_version, "
            "keras_version, horovod_version, is_default, description, owner, project_id, created) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (name, kind, image, python, versions["tf_version"], versions["keras_version"],
             versions["horovod_version"], int(default), description or "", owner, pid, now()))
        entries.set_tags(conn, KIND, cur.lastrowid, tags or [])
    return get(conn, name)


def fingerprint(python: str) -> str:
    """What a probe's answer depends on: the interpreter (resolved, and its file), its
    site-packages folders (pip adds and removes dist-info folders, which changes their
    modification time) and the versions.json a build writes last. "" when it is missing."""
    path = Path(python)
    try:
        real = path.resolve()
        parts = [str(real), str(real.stat().st_mtime_ns)]
    except OSError:
        return ""
    root = path.parent.parent
    for place in sorted(root.glob("lib/python*/site-packages")) + [root / "versions.json"]:
        try:
            parts.append(f"{place}:{place.stat().st_mtime_ns}")
        except OSError:
            parts.append(f"{place}:-")
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]


def probe(python: str) -> dict[str, str]:
    """The TensorFlow, Keras and Horovod versions an interpreter holds: from the versions.json
    the build scripts write next to it, else by asking it (importing nothing heavy: package
    metadata only). Asked again whenever its fingerprint changes. Empty values for what it
    lacks; {} when it cannot be run."""
    return dict(_probe(str(python), fingerprint(str(python))))


@lru_cache(maxsize=16)
def _probe(python: str, _key: str) -> tuple:
    import json
    import subprocess
    root = Path(python).parent.parent
    try:
        data = json.loads((root / "versions.json").read_text())
    except (OSError, ValueError):
        code = ("import json\nfrom importlib import metadata as m\n"
                "def v(*names):\n"
                "    for n in names:\n"
                "        try:\n            return m.version(n)\n"
                "        except m.PackageNotFoundError:\n            pass\n"
                "    return ''\n"
                "print(json.dumps({'tf_version': v('tensorflow', 'tensorflow-cpu', 'tensorflow-gpu'),"
                " 'keras_version': v('keras', 'tf-keras'), 'horovod_version': v('horovod')}))")
        try:
            out = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=60)
            data = json.loads(out.stdout.strip().splitlines()[-1]) if out.returncode == 0 else {}
        except (OSError, subprocess.SubprocessError, ValueError, IndexError):
            data = {}
    return tuple(sorted((k, str(data.get(k) or "")) for k in
                        ("tf_version", "keras_version", "horovod_version") if k in data))


def ensure_builtin(conn: sqlite3.Connection, runtimes: list[dict[str, str]]) -> None:
    """Register the runtimes tfdesk builds (``make runner-env``) once each, with the versions
    their interpreters report. The first is the default unless another was chosen. One whose
    interpreter is missing is registered when it appears (the Keras 2 runner always, with the
    versions its build script installs, as before)."""
    for i, rt in enumerate(runtimes):
        name, python = rt["name"], str(rt["python"])
        row = conn.execute("SELECT * FROM catalog_environments WHERE name = ?", (name,)).fetchone()
        if row is not None:
            _reprobe(conn, row)
            continue
        exists = Path(python).exists()
        if not exists and name != DEFAULT_NAME:
            continue
        versions = probe(python) if exists else {}
        if not versions.get("tf_version"):
            versions = dict(rt.get("versions") or {})
        has_default = conn.execute(
            "SELECT 1 FROM catalog_environments WHERE is_default = 1 AND kind = 'local'"
        ).fetchone() is not None
        try:
            add(conn, name, owner="tfdesk", kind="local", python=python,
                description=rt.get("description", ""), default=i == 0 and not has_default,
                tags=rt.get("tags"), **{k: versions.get(k, "") for k in RUNNER_VERSIONS})
        except Duplicate:  # another process registered it meanwhile
            pass
        else:
            conn.execute("UPDATE catalog_environments SET probed = ? WHERE name = ?",
                         (fingerprint(python) if exists else "", name))


def _reprobe(conn: sqlite3.Connection, row) -> None:
    """A built-in runtime's versions follow its interpreter: probed again when what they were
    probed from changed (Horovod installed since, a package upgraded). Versions an admin gave
    an environment of their own are theirs."""
    if row["owner"] != "tfdesk" or row["kind"] != "local" or not row["python"]:
        return
    key = fingerprint(row["python"])
    if not key or key == row["probed"]:
        return
    versions = probe(row["python"])
    with transaction(conn):
        if versions.get("tf_version"):
            conn.execute("UPDATE catalog_environments SET tf_version = ?, keras_version = ?, "
                         "horovod_version = ? WHERE id = ?",
                         (*(versions.get(k, "") for k in RUNNER_VERSIONS), row["id"]))
        conn.execute("UPDATE catalog_environments SET probed = ? WHERE id = ?", (key, row["id"]))


def ensure_default(conn: sqlite3.Connection, python: str) -> None:
    """The runner environment is always there and is the default unless another was chosen."""
    ensure_builtin(conn, [{"name": DEFAULT_NAME, "python": python, "versions": RUNNER_VERSIONS,
                           "description": RUNNER_DESCRIPTION}])


def records(conn: sqlite3.Connection) -> list[dict[str, Any]]:
    """Every environment, as the job engine takes them (plain dicts, tags included)."""
    rows = conn.execute("SELECT * FROM catalog_environments ORDER BY id").fetchall()
    return _dicts(conn, rows)


def _dicts(conn, rows):
    out = entries.to_dicts(conn, KIND, rows)
    for d in out:
        d["default"] = bool(d.pop("is_default"))
        d.pop("probed", None)  # bookkeeping: what the versions were probed from
    return out


def get(conn: sqlite3.Connection, name: str) -> dict[str, Any]:
    row = lookup.row(conn, KIND, name)
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
        row = lookup.row(conn, KIND, name)
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
        row = lookup.row(conn, KIND, name)
        conn.execute("UPDATE catalog_environments SET is_default = (id = ?) WHERE kind = ?",
                     (row["id"], row["kind"]))
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
