"""Catalog entries as a job's read-only inputs (runners/inputs.py): the local paths of the
registered datasets and models, which every member may read (catalog entries are shared), a
name -> path lookup for the faces, and a pipeline step's references resolved into its inputs
(:class:`Resolver`). Remote URIs (pvc://, s3://, gs://) are never local paths."""
from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any

from catalog import lookup
from catalog.errors import InvalidInput, NotFound
from catalog.model_files import NO_MODEL
from catalog.step_outputs import as_input

REF_RE = re.compile(r"\$\{([^}]*)\}")  # as catalog/pipelines.py reads them
WHOLE_REF = re.compile(r"^\$\{\s*([^}]*?)\s*\}$")


def local_path(uri: str | None) -> Path | None:
    return Path(uri) if uri and "://" not in uri and Path(uri).is_absolute() else None


def readable_paths(conn: sqlite3.Connection) -> tuple[Path, ...]:
    """Every catalog dataset's and model's local path: what any asker may give a job."""
    rows = conn.execute("SELECT uri FROM catalog_datasets UNION ALL "
                        "SELECT artifact_uri FROM catalog_models").fetchall()
    return tuple(dict.fromkeys(p for (uri,) in rows if (p := local_path(uri)) is not None))


def entry_path(conn: sqlite3.Connection, ref: str) -> str:
    """A catalog dataset ``NAME`` or model ``NAME[:VERSION]`` -> its local path; NotFound
    when neither names one, or the entry's data is not on this machine."""
    for kind, column in (("dataset", "uri"), ("model", "artifact_uri")):
        try:
            found = lookup.row(conn, kind, ref)
        except (NotFound, InvalidInput):  # not a name of this kind
            continue
        path = local_path(found[column])
        if path is None:
            raise NotFound(f"{kind} {ref!r} is at {found[column]!r}, not on this machine; "
                           "a local job cannot read it")
        return str(path)
    raise NotFound(f"no dataset or model named {ref!r} in the catalog; see 'datasets list' "
                   "and 'models list'")


class Resolver:
    """A step's ``with:`` resolved: ``${params.K}``, ``${datasets.NAME}``, ``${models.NAME}``,
    ``${steps.STEP.outputs.K}``; what it reads becomes its ``inputs``."""
    def __init__(self, conn, params, outputs):
        self.conn, self.params, self.outputs = conn, params, outputs
        self.used: list[tuple[str, int]] = []
        # The local paths of the datasets and models the step references, and of the earlier
        # steps' outputs it reads: its read-only inputs, which its job's sandbox shows it
        # (runners/inputs.py), and nothing else (catalog/step_outputs.py).
        self.inputs: list[str] = []
        self.readable: list[str] = []  # those of earlier steps, granted to its job

    def value(self, expr: str) -> Any:
        parts = expr.split(".", 1)
        head, rest = parts[0], parts[1] if len(parts) > 1 else ""
        if head == "params":
            return self.params[rest]
        if head == "steps":
            step, _, key = rest.partition(".outputs.")
            outs = self.outputs.get(step, {})
            if key == "model" and "model" not in outs and "workdir" in outs:
                raise InvalidInput(f"step {step!r} {NO_MODEL}")
            if key not in outs:
                raise InvalidInput(f"step {step!r} produced no output {key!r} "
                                   f"(it produced: {', '.join(outs) or 'nothing'})")
            path = as_input(outs[key], outs)
            if path is not None and path not in self.readable:
                self._input(path)
                self.readable.append(path)
            return outs[key]
        if head == "datasets":
            row = self.conn.execute("SELECT id, uri FROM catalog_datasets WHERE name = ?",
                                    (rest,)).fetchone()
            if row is None:
                raise NotFound(f"dataset {rest!r} is no longer in the catalog")
            self.used.append(("dataset", row["id"]))
            self._input(row["uri"])
            return row["uri"]
        if head == "models":
            from catalog import models
            m = models.get(self.conn, rest)
            self.used.append(("model", m["id"]))
            self._input(m["artifact_uri"])
            return m["artifact_uri"]
        raise InvalidInput(f"unknown reference ${{{expr}}}")

    def _input(self, uri: str | None) -> None:
        local = local_path(uri)
        if local is not None and str(local) not in self.inputs:
            self.inputs.append(str(local))

    def step(self, name: str, with_: dict[str, Any] | None) -> dict[str, Any]:
        """A step's ``with:`` resolved, with its ``inputs``: the datasets it references."""
        if "inputs" in (with_ or {}):
            raise InvalidInput(f"step {name!r}: a step's inputs are what it references "
                               "(${datasets.NAME}, ${models.NAME}, an earlier step's output "
                               "${steps.STEP.outputs.KEY}); it cannot list paths")
        return {**self.resolve(with_ or {}), "inputs": list(self.inputs)}

    def resolve(self, value: Any) -> Any:
        if isinstance(value, str):
            whole = WHOLE_REF.match(value)
            if whole:  # keep the referenced value's type (numbers, lists)
                return self.value(whole.group(1))
            return REF_RE.sub(lambda m: str(self.value(m.group(1).strip())), value)
        if isinstance(value, dict):
            return {k: self.resolve(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.resolve(v) for v in value]
        return value
