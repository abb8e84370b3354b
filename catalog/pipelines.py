"""Pipelines: YAML definitions of steps (convert-script -> train -> convert-model -> infer),
validated against a JSON schema and against the catalog, stored by name.

Steps pass values with ``${...}`` references inside ``with:``:
``${steps.STEP.outputs.KEY}`` (an earlier step's output), ``${params.KEY}``,
``${datasets.NAME}`` (its URI), ``${models.NAME}`` or ``${models.NAME:3}`` (artifact path).
"""
from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from catalog import components, entries, lookup, pipeline_graph, step_outputs
from catalog.errors import Duplicate, HasDependants, InvalidInput, NotFound
from catalog.inputs import REF_RE
from catalog.names import check_name, split_ref
from catalog.pipeline_paths import resolve as resolve_paths
from catalog.pipeline_schema import PIPELINE_SCHEMA
from catalog.store import now, transaction
from runners import specs

KIND = "pipeline"
_VALIDATOR = jsonschema.Draft202012Validator(PIPELINE_SCHEMA)


def _where(error: jsonschema.ValidationError) -> str:
    path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
    return path.lstrip(".") or "(top level)"


def parse(text: str) -> dict[str, Any]:
    """YAML text -> a definition that passed the schema. Errors name the place and the fix."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise InvalidInput(f"pipeline definition is not valid YAML{where}: {problem}") from None
    if not isinstance(data, dict):
        raise InvalidInput("a pipeline definition is a YAML mapping with a 'steps' list")
    errors = sorted(_VALIDATOR.iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        lines = []
        for e in errors[:10]:
            msg = e.message
            if e.validator == "oneOf" and "steps" in list(e.absolute_path):
                msg = "a step names exactly one of 'kind' or 'component'"
            lines.append(f"  - {_where(e)}: {msg}")
        raise InvalidInput("pipeline definition does not match the schema:\n" + "\n".join(lines))
    seen = set()
    for step in data["steps"]:
        if step["name"] in seen:
            raise InvalidInput(f"step name {step['name']!r} is used twice; step names must be "
                               "unique within a pipeline")
        seen.add(step["name"])
    return data


def references(definition: dict[str, Any]) -> list[tuple[str, str]]:
    """Every catalog entry a definition names, as (kind, name)."""
    refs: list[tuple[str, str]] = []

    def walk(value):
        if isinstance(value, str):
            for expr in REF_RE.findall(value):
                parts = expr.strip().split(".", 1)
                if parts[0] == "datasets" and len(parts) == 2:
                    refs.append(("dataset", parts[1]))
                elif parts[0] == "models" and len(parts) == 2:
                    refs.append(("model", parts[1].split(":")[0]))
        elif isinstance(value, dict):
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    for key in ("environment",):
        if definition.get(key):
            refs.append(("environment", definition[key]))
    for step in definition["steps"]:
        if step.get("component"):
            refs.append(("component", step["component"].split(":")[0]))
        if step.get("environment"):
            refs.append(("environment", step["environment"]))
        walk(step.get("with", {}))
    walk(definition.get("params", {}))
    return sorted(set(refs))


def check(conn: sqlite3.Connection, definition: dict[str, Any], kinds=components.STEP_KINDS
          ) -> None:
    """Checks beyond the schema: step kinds, references to earlier steps, params and catalog
    entries that must exist."""
    problems = []
    params = definition.get("params", {}) or {}
    step_kinds: dict[str, str | None] = {}
    tables = {"dataset": "catalog_datasets", "model": "catalog_models",
              "environment": "catalog_environments", "component": "catalog_components"}
    for step in definition["steps"]:
        name = step["name"]
        if "kind" in step and step["kind"] not in kinds:
            problems.append(f"step {name!r}: unknown kind {step['kind']!r} "
                            f"(one of: {', '.join(kinds)})")
        step_kinds[name] = step.get("kind") if step.get("kind") in kinds else None
        if step.get("component"):
            try:
                found = components.get(conn, step["component"])
                step_kinds[name] = found["kind"]
                given = {**(found.get("params") or {}), **(step.get("with") or {})}
            except NotFound as exc:
                problems.append(f"step {name!r}: {exc}")
                given = {}
        else:
            given = step.get("with") or {}
        kind = step_kinds[name]
        if kind in specs.STEP_SPECS:  # values may be ${...}: checked when the step runs
            problems += [f"step {name!r}: with: {key!r} is not a parameter of {kind} "
                         f"(it takes: {', '.join(specs.parameters(kind))})"
                         for key in specs.unknown_parameters(kind, given)]
        for expr in _exprs(step.get("with", {})):
            parts = expr.split(".")
            if parts[0] == "steps":
                if len(parts) != 4 or parts[2] != "outputs":
                    problems.append(f"step {name!r}: ${{{expr}}} should read "
                                    "${steps.STEP.outputs.KEY}")
            elif parts[0] == "params":
                if len(parts) != 2 or parts[1] not in params:
                    problems.append(f"step {name!r}: ${{{expr}}} is not a declared param "
                                    f"(params: {', '.join(params) or 'none'})")
            elif parts[0] not in ("datasets", "models"):
                problems.append(f"step {name!r}: ${{{expr}}} is not a known reference "
                                "(steps.*.outputs.*, params.*, datasets.*, models.*)")
    # which step outputs a step may read (catalog/step_outputs.py holds the rule)
    problems += step_outputs.problems(definition["steps"], step_kinds)
    for kind, ref in references(definition):
        try:
            check_name(ref, f"{kind} name")
        except InvalidInput as exc:
            problems.append(str(exc))
            continue
        if kind == "component":
            continue  # checked with its version above
        if conn.execute(f"SELECT 1 FROM {tables[kind]} WHERE name = ?", (ref,)).fetchone() is None:
            problems.append(f"{kind} {ref!r} is not in the catalog (see '{kind}s list')")
    problems += pipeline_graph.problems(definition)  # after: and retries:
    if problems:
        raise InvalidInput("pipeline definition has problems:\n"
                           + "\n".join(f"  - {p}" for p in problems))


def _exprs(value) -> list[str]:
    out = []
    if isinstance(value, str):
        out += [e.strip() for e in REF_RE.findall(value)]
    elif isinstance(value, dict):
        for v in value.values():
            out += _exprs(v)
    elif isinstance(value, list):
        for v in value:
            out += _exprs(v)
    return out


def add(conn: sqlite3.Connection, name: str | None, text: str, owner: str,
        project: str | None = None, tags=None, replace: bool = False,
        base_dir: Path | None = None) -> dict[str, Any]:
    """Store a definition. With ``base_dir`` (the folder it is added from), relative files
    the steps name are stored resolved against it, so runs work from any folder."""
    definition = parse(text)
    if base_dir is not None:
        definition, changed = resolve_paths(definition, base_dir, conn)
        if changed:
            text = yaml.safe_dump(definition, sort_keys=False, allow_unicode=True)
    name = name or definition.get("name")
    if not name:
        raise InvalidInput("give the pipeline a name (argument or 'name:' in the YAML)")
    check_name(name, "pipeline name")
    project = project or definition.get("project")
    with transaction(conn):
        check(conn, definition)
        existing = conn.execute("SELECT id FROM catalog_pipelines WHERE name = ?",
                                (name,)).fetchone()
        if existing and not replace:
            raise Duplicate(f"a pipeline named {name!r} already exists; use --replace to "
                            "update its definition")
        pid = entries.project_id(conn, project)
        if existing:
            conn.execute("UPDATE catalog_pipelines SET definition = ?, description = ?, "
                         "project_id = ? WHERE id = ?",
                         (text, definition.get("description", ""), pid, existing["id"]))
            item_id = existing["id"]
            conn.execute("DELETE FROM catalog_pipeline_refs WHERE pipeline_id = ?", (item_id,))
        else:
            item_id = conn.execute(
                "INSERT INTO catalog_pipelines (name, definition, description, owner, project_id,"
                " created) VALUES (?, ?, ?, ?, ?, ?)",
                (name, text, definition.get("description", ""), owner, pid, now())).lastrowid
        conn.executemany("INSERT OR IGNORE INTO catalog_pipeline_refs VALUES (?, ?, ?)",
                         [(item_id, k, n) for k, n in references(definition)])
        if tags is not None or not existing:
            entries.set_tags(conn, KIND, item_id, tags or [])
    return get(conn, name)


def get(conn: sqlite3.Connection, name: str) -> dict[str, Any]:
    row = lookup.row(conn, KIND, name)
    d = entries.to_dicts(conn, KIND, [row])[0]
    d["steps"] = [{"name": s["name"], "kind": s.get("kind"), "component": s.get("component")}
                  for s in parse(row["definition"])["steps"]]
    d["uses"] = [f"{k} {n}" for k, n in conn.execute(
        "SELECT kind, name FROM catalog_pipeline_refs WHERE pipeline_id = ? ORDER BY kind, name",
        (row["id"],))]
    d["runs"] = [dict(r) for r in conn.execute(
        "SELECT id, state FROM catalog_runs WHERE pipeline = ? ORDER BY created DESC LIMIT 5",
        (row["name"],))]
    return d


def definition(conn: sqlite3.Connection, name: str) -> tuple[str, dict[str, Any]]:
    row = lookup.row(conn, KIND, name)
    return row["name"], parse(row["definition"])


def list_(conn: sqlite3.Connection, project=None, tag=None, owner=None, search=None,
          limit=50, offset=0) -> list[dict[str, Any]]:
    rows = entries.list_rows(conn, "catalog_pipelines", KIND, project=project, tag=tag,
                             owner=owner, search=search, limit=limit, offset=offset)
    out = entries.to_dicts(conn, KIND, rows)
    for d in out:
        d["steps"] = [s["name"] for s in parse(d.pop("definition"))["steps"]]
    return out


def delete(conn: sqlite3.Connection, name: str, force: bool = False) -> dict[str, Any]:
    with transaction(conn):
        row = lookup.row(conn, KIND, name)
        deps = [f"run {r['id']} ({r['state']})" for r in conn.execute(
            "SELECT id, state FROM catalog_runs WHERE pipeline = ? AND state IN "
            "('queued', 'running')", (row["name"],))]
        if deps and not force:
            raise HasDependants(f"pipeline {row['name']!r}", deps)
        entries.drop_tags(conn, KIND, row["id"])
        conn.execute("DELETE FROM catalog_pipelines WHERE id = ?", (row["id"],))
    return {"deleted": f"pipeline {row['name']}", "dependants": deps}


def resolve_model_ref(conn, ref: str) -> str:
    from catalog import models
    name, version = split_ref(ref)
    return models.get(conn, ref)["artifact_uri"]
