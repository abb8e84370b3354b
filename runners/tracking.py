"""Run tracking: every job is a run with parameters, metric curves and a summary, kept in the
state database with no logging code in the user's script.

Where the figures come from (one writer each):

- **Parameters** are a pure function of the job as stored (its kind, spec, backend): the
  script's flags as given, the hash of the script as submitted, workers, target, runtime.
  :func:`sync` indexes jobs it has not seen yet, so a job made by any tfdesk process is
  tracked the first time anyone lists runs.
- **Epoch metrics** are the engine's ``job_metrics`` (Keras' own log lines, CSVLogger files,
  and the ``TFDESK_METRIC`` lines of the runner-added callback, runners/tracking_hook).
  A trigger keeps ``run_summary`` (last, min, max per metric) current as they are stored,
  so filtering and sorting 10,000 runs by a metric reads one indexed row per run.
- **Step metrics** are the callback's ``TFDESK_STEP`` lines, read by :class:`StepReader`
  from the same log, stored in ``run_step_metrics``.
- **Benchmark and validation figures** of model jobs are the catalog's record of what the
  job produced (``catalog_models``), copied into ``run_summary`` once the job succeeded.
"""
from __future__ import annotations

import hashlib
import json
import math
import re
import shutil
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from core import statedb
from runners.metrics import RANK_PREFIX, MetricReader

def _follows(summary: str, series: str, trigger: str) -> str:
    """The trigger keeping ``summary`` (last, step, min, max per run and name) current as
    ``series`` rows are stored: one rule for epoch and per-step metrics."""
    return f"""CREATE TRIGGER IF NOT EXISTS {trigger} AFTER INSERT ON {series}
BEGIN
    INSERT INTO {summary} (job_id, name, last, step, min, max)
    VALUES (NEW.job_id, NEW.name, NEW.value, NEW.step, NEW.value, NEW.value)
    ON CONFLICT (job_id, name) DO UPDATE SET
        last = CASE WHEN NEW.step >= step THEN NEW.value ELSE last END,
        step = max(step, NEW.step),
        min = min(min, NEW.value),
        max = max(max, NEW.value);
END;
"""


def _backfill(db, summary: str, series: str) -> None:
    """Summarise what ``series`` held before its trigger existed (a trigger sees new rows)."""
    db.conn.execute(
        f"INSERT OR IGNORE INTO {summary} (job_id, name, last, step, min, max) "
        f"SELECT m.job_id, m.name, (SELECT value FROM {series} l WHERE l.job_id = m.job_id "
        "AND l.name = m.name ORDER BY step DESC LIMIT 1), max(m.step), min(m.value), "
        f"max(m.value) FROM {series} m GROUP BY m.job_id, m.name")


SCHEMA = """
CREATE TABLE IF NOT EXISTS tracked_runs (
    job_id TEXT PRIMARY KEY,
    seq INTEGER NOT NULL,
    figures_done INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS tracked_runs_seq ON tracked_runs(seq);
CREATE TABLE IF NOT EXISTS run_params (
    job_id TEXT NOT NULL,
    name TEXT NOT NULL,
    value TEXT NOT NULL,
    num REAL,
    PRIMARY KEY (job_id, name)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS run_params_name_num ON run_params(name, num);
CREATE INDEX IF NOT EXISTS run_params_name_value ON run_params(name, value);
CREATE TABLE IF NOT EXISTS run_summary (
    job_id TEXT NOT NULL,
    name TEXT NOT NULL,
    last REAL NOT NULL,
    step INTEGER NOT NULL,
    min REAL NOT NULL,
    max REAL NOT NULL,
    PRIMARY KEY (job_id, name)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS run_summary_name_last ON run_summary(name, last);
CREATE TABLE IF NOT EXISTS run_step_metrics (
    job_id TEXT NOT NULL,
    step INTEGER NOT NULL,
    name TEXT NOT NULL,
    value REAL NOT NULL,
    PRIMARY KEY (job_id, name, step)
) WITHOUT ROWID;
-- The summary follows every stored epoch metric, whoever stores it (one place).
""" + _follows("run_summary", "job_metrics", "run_summary_follows_metrics") + """\
-- A deleted job takes its tracking with it.
CREATE TRIGGER IF NOT EXISTS tracked_runs_follow_jobs AFTER DELETE ON jobs
BEGIN
    DELETE FROM tracked_runs WHERE job_id = OLD.id;
    DELETE FROM run_params WHERE job_id = OLD.id;
    DELETE FROM run_summary WHERE job_id = OLD.id;
    DELETE FROM run_step_metrics WHERE job_id = OLD.id;
END;
"""

MIGRATIONS = statedb.Migrations("tracking")
FIGURE_KINDS = ("convert-model", "infer", "evaluate")  # jobs whose reports hold figures
SETTLE_S = 600.0  # a model job that succeeded this long ago without figures has none


@MIGRATIONS(name="0001-run-params-summary-steps")
def _first(db) -> None:
    statedb.create(SCHEMA)(db)
    # Jobs that have metrics already get their summary now (the trigger sees only new rows).
    _backfill(db, "run_summary", "job_metrics")


@MIGRATIONS(name="0002-figures-pending-index")
def _figures_pending(db) -> None:
    # Only model jobs get figures; the others are done at once, and the few pending are
    # found by a partial index, not a scan of every run.
    db.conn.execute("UPDATE tracked_runs SET figures_done = 1 WHERE figures_done = 0 AND "
                    "job_id IN (SELECT id FROM jobs WHERE kind NOT IN "
                    f"({','.join(repr(k) for k in FIGURE_KINDS)}))")
    db.conn.execute("CREATE INDEX IF NOT EXISTS tracked_runs_figures_pending ON "
                    "tracked_runs(job_id) WHERE figures_done = 0")


STEP_SUMMARY = """
CREATE TABLE IF NOT EXISTS run_step_summary (
    job_id TEXT NOT NULL,
    name TEXT NOT NULL,
    last REAL NOT NULL,
    step INTEGER NOT NULL,
    min REAL NOT NULL,
    max REAL NOT NULL,
    PRIMARY KEY (job_id, name)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS run_step_summary_name_last ON run_step_summary(name, last);
-- Per-step series are summarised as they are stored, like the epoch metrics above.
""" + _follows("run_step_summary", "run_step_metrics", "run_step_summary_follows_steps") + """\
CREATE TRIGGER IF NOT EXISTS run_step_summary_follows_jobs AFTER DELETE ON jobs
BEGIN
    DELETE FROM run_step_summary WHERE job_id = OLD.id;
END;
"""


@MIGRATIONS(name="0003-step-summary")
def _step_summary(db) -> None:
    # Filtering and sorting by a per-step series (min(step:loss)<0.1) reads one indexed row
    # per run, as for epoch metrics; steps stored before this migration are summarised now.
    statedb.create(STEP_SUMMARY)(db)
    _backfill(db, "run_step_summary", "run_step_metrics")


@MIGRATIONS(name="0004-min-max-indexes")
def _min_max_indexes(db) -> None:
    # Sorting by min(...) or max(...) reads the page in index order, as by the last value:
    # 6 ms instead of 43 ms for 10,000 runs (benchmarks/web_runs.py).
    for table in ("run_summary", "run_step_summary"):
        for column in ("min", "max"):
            db.conn.execute(f"CREATE INDEX IF NOT EXISTS {table}_name_{column} ON "
                            f"{table}(name, {column})")


def open_tracking(path) -> sqlite3.Connection:
    """A connection to the state database with the jobs and tracking tables in place."""
    from runners.store import MIGRATIONS as JOBS
    conn = statedb.connect(path)
    statedb.migrate(conn, JOBS)  # the triggers name the jobs tables
    statedb.migrate(conn, MIGRATIONS)
    return conn


# Connections known to have the tables: held (so an id is never reused while listed), a
# bounded few, oldest dropped first. sqlite3 connections cannot be weakly referenced.
_READY: dict[int, sqlite3.Connection] = {}
_READY_MAX = 64


def ensure(conn: sqlite3.Connection) -> None:
    """The jobs and tracking tables are in place (checked once per connection)."""
    if _READY.get(id(conn)) is conn:
        return
    from runners.store import MIGRATIONS as JOBS
    statedb.migrate(conn, JOBS)
    statedb.migrate(conn, MIGRATIONS)
    _READY[id(conn)] = conn
    while len(_READY) > _READY_MAX:
        _READY.pop(next(iter(_READY)))


# -- parameters ---------------------------------------------------------------------------
FLAG = re.compile(r"^--?([A-Za-z_][\w.-]*)(?:=(.*))?$", re.S)
MAX_VALUE = 500  # a parameter's text is for reading and filtering, not a payload


def number(text: Any) -> float | None:
    """The value as a number when it is one (finite), for numeric filters and sorting."""
    if isinstance(text, bool):
        return float(text)
    if isinstance(text, (int, float)):
        return float(text) if math.isfinite(text) else None
    try:
        value = float(str(text).strip())
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def flags(args: Iterable[str]) -> dict[str, str]:
    """A script's command line as named parameters, as given: ``--lr 0.1`` and ``--lr=0.1``
    are ``lr=0.1``, a flag followed by another flag (or last) is ``true``, other words are
    ``arg0``, ``arg1``... A repeated flag keeps its last value, as argparse does."""
    out: dict[str, str] = {}
    args = [str(a) for a in args]
    i = positional = 0
    while i < len(args):
        m = FLAG.match(args[i]) if args[i] not in ("-", "--") else None
        if m and number(args[i]) is None:  # "-1" is a value, not a flag
            name, value = m.group(1), m.group(2)
            if value is None:
                nxt = args[i + 1] if i + 1 < len(args) else None
                if nxt is not None and not (FLAG.match(nxt) and number(nxt) is None):
                    value, i = nxt, i + 1
                else:
                    value = "true"
            out[name] = value
        else:
            out[f"arg{positional}"] = args[i]
            positional += 1
        i += 1
    return out


TRAIN_FIELDS = {"workers": "workers", "launcher": "target", "converted_to": "converted_to",
                "epochs": "epochs", "script_name": "script", "script_sha256": "script_sha256",
                "tf_version": "tf_version", "gpus_per_worker": "gpus_per_worker"}
MODEL_FIELDS = {"mode": "mode", "name": "model", "target": "target", "precision": "precision",
                "batches": "batches", "tf_version": "tf_version"}


def params_of(kind: str, spec: dict[str, Any], backend: str) -> dict[str, str]:
    """The parameters tracked for a job: what it was asked to do, as given."""
    out: dict[str, Any] = {"kind": kind, "backend": backend}
    fields = TRAIN_FIELDS if kind == "train" else MODEL_FIELDS
    for key, name in fields.items():
        if spec.get(key) not in (None, "", []):
            out[name] = spec[key]
    labels = spec.get("labels") if isinstance(spec.get("labels"), dict) else {}
    project = labels.get("project") or spec.get("project")  # stored.Labels
    if project:
        out["project"] = project
    runtime = spec.get("runtime")
    if isinstance(runtime, dict) and runtime.get("name"):
        out["environment"] = runtime["name"]
    elif spec.get("environment"):
        out["environment"] = spec["environment"]
    args = spec.get("args")
    for key, value in flags(args if isinstance(args, list) else []).items():
        out.setdefault(f"flag.{key}", value)
    return {k: _text(v) for k, v in out.items()}


def _text(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text[:MAX_VALUE]


def script_hash(source: str) -> str:
    return hashlib.sha256(source.encode("utf-8")).hexdigest()


def sync(conn: sqlite3.Connection) -> int:
    """Index the jobs not tracked yet (parameters), and copy the figures of model jobs that
    succeeded since. Returns how many jobs were indexed. Cheap when nothing is new."""
    last = conn.execute("SELECT coalesce(max(seq), 0) FROM tracked_runs").fetchone()[0]
    rows = conn.execute("SELECT seq, id, kind, spec, backend FROM jobs WHERE seq > ? "
                        "ORDER BY seq", (last,)).fetchall()
    if rows:
        with statedb.transaction(conn):
            for r in rows:
                spec = _as_mapping(r["spec"])
                conn.execute("INSERT OR IGNORE INTO tracked_runs (job_id, seq, figures_done) "
                             "VALUES (?, ?, ?)", (r["id"], r["seq"],
                                                  0 if r["kind"] in FIGURE_KINDS else 1))
                conn.executemany(
                    "INSERT OR REPLACE INTO run_params (job_id, name, value, num) "
                    "VALUES (?,?,?,?)",
                    [(r["id"], k, v, number(v)) for k, v in
                     params_of(r["kind"], spec, r["backend"]).items()])
    _model_figures(conn)
    return len(rows)


def _as_mapping(text: str) -> dict[str, Any]:
    """A row's spec as params_of reads it. A damaged one (runners/stored.py names its fault
    where the job is shown) still lists the run, with the parameters of its columns alone."""
    try:
        spec = json.loads(text)
    except (TypeError, ValueError):
        return {}
    return spec if isinstance(spec, dict) else {}


def _has_table(conn, name: str) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
                        (name,)).fetchone() is not None


def _model_figures(conn: sqlite3.Connection) -> None:
    # The few pending model runs first, by their partial index (a join lets the planner
    # start from every succeeded job instead: 18 ms on 10,000 runs, on every list).
    pending = [r[0] for r in conn.execute(
        "SELECT job_id FROM tracked_runs WHERE figures_done = 0")]
    if not pending:
        return
    marks = ",".join("?" * len(pending))
    # Runs that will never have figures leave the pending list: ended otherwise, or succeeded
    # long enough ago that the catalog has registered what they made (it does so at the end).
    settled = conn.execute(
        f"SELECT id FROM jobs WHERE id IN ({marks}) AND (state IN ('failed', 'cancelled', "
        "'lost') OR (state = 'succeeded' AND finished_at < ?))",
        [*pending, time.time() - SETTLE_S]).fetchall()
    if settled:
        with statedb.transaction(conn):
            conn.executemany("UPDATE tracked_runs SET figures_done = 1 WHERE job_id = ?",
                             [(r[0],) for r in settled])
    if not _has_table(conn, "catalog_models"):
        return
    rows = conn.execute(
        "SELECT j.id AS job_id, m.validation, m.benchmark FROM jobs j JOIN catalog_models m "
        f"ON m.job_id = j.id WHERE j.id IN ({marks}) AND j.state = 'succeeded'",
        pending).fetchall()
    if not rows:
        return
    with statedb.transaction(conn):
        for r in rows:
            figures = {}
            for prefix, text in (("validation", r["validation"]), ("benchmark", r["benchmark"])):
                try:
                    figures.update(flatten(json.loads(text) if text else {}, prefix))
                except ValueError:
                    continue
            conn.executemany(
                "INSERT OR REPLACE INTO run_summary (job_id, name, last, step, min, max) "
                "VALUES (?, ?, ?, 0, ?, ?)",
                [(r["job_id"], k, v, v, v) for k, v in figures.items()])
            conn.execute("UPDATE tracked_runs SET figures_done = 1 WHERE job_id = ?",
                         (r["job_id"],))


def flatten(data: Any, prefix: str, depth: int = 0) -> dict[str, float]:
    """The numbers of a nested report as dotted names (``benchmark.speedups.0``); lists of
    numbers give one name per position (per batch size for benchmark rows). Depth-limited:
    a report is small."""
    out: dict[str, float] = {}
    if depth > 4:
        return out
    if isinstance(data, dict):
        for k, v in data.items():
            out.update(flatten(v, f"{prefix}.{k}", depth + 1))
    elif isinstance(data, list):
        for i, v in enumerate(data[:16]):
            # benchmark rows are per batch size: name them by it, not by position
            if isinstance(v, dict) and "batch" in v:  # named by it, so not repeated
                key, v = f"b{v['batch']}", {k: x for k, x in v.items() if k != "batch"}
            else:
                key = str(i)
            out.update(flatten(v, f"{prefix}.{key}", depth + 1))
    else:
        value = number(data) if isinstance(data, (int, float)) and not isinstance(data, bool) \
            else None
        if value is not None:
            out[prefix] = value
    return out


# -- the runner-added callback ------------------------------------------------------------
HOOK_DIR = Path(__file__).with_name("tracking_hook")
HOOK_FILES = ("sitecustomize.py", "tfdesk_track.py")
JOB_HOOK = ".track"  # in the job folder: a dot-entry, so never listed as an artifact
STEP_EVERY = 10


def install_hook(workdir: Path) -> None:
    """Copy the callback into the job's folder before it starts (the folder is what the
    job's sandbox can read), for :func:`hook_env` to put first on its PYTHONPATH."""
    dest = Path(workdir) / JOB_HOOK
    dest.mkdir(parents=True, exist_ok=True)
    for name in HOOK_FILES:
        shutil.copyfile(HOOK_DIR / name, dest / name)


def hook_files() -> dict[str, str]:
    """The hook's files by name, for a pod's ConfigMap (runners/kubernetes/manifests.py)."""
    return {name: (HOOK_DIR / name).read_text(encoding="utf-8") for name in HOOK_FILES}


def hook_env(workdir: Path, every: int = STEP_EVERY) -> dict[str, str]:
    """The job's environment for tracking: Python loads the hook's sitecustomize at start."""
    return {"PYTHONPATH": str(Path(workdir) / JOB_HOOK), "TFDESK_TRACK_EVERY": str(every)}


# -- step metrics ---------------------------------------------------------------------------
STEP_LINE = re.compile(r"TFDESK_STEP (\{.*\})\s*$")


@dataclass
class StepReader(MetricReader):
    """The engine's metric reader, which also keeps the runner callback's per-step lines
    (``TFDESK_STEP {"step": 120, "loss": 0.4}``, rank 0 only) for :func:`record_steps`."""

    def __post_init__(self) -> None:
        self.steps: list[tuple[int, dict[str, float]]] = []

    def feed(self, line: str):
        if "TFDESK_STEP " in line:
            m = RANK_PREFIX.match(line)
            if m and int(m.group(2) if m.group(2) is not None else m.group(1)) != 0:
                return None
            got = STEP_LINE.search(line.rstrip("\r\n"))
            if got:
                try:
                    data = json.loads(got.group(1))
                except ValueError:
                    return None
                step = data.pop("step", None) if isinstance(data, dict) else None
                values = {k: float(v) for k, v in data.items() if number(v) is not None}
                if isinstance(step, int) and values:
                    self.steps.append((step, values))
            return None
        return super().feed(line)

    def take_steps(self) -> list[tuple[int, dict[str, float]]]:
        out, self.steps = self.steps, []
        return out


def record_steps(conn: sqlite3.Connection, job_id: str,
                 steps: list[tuple[int, dict[str, float]]]) -> None:
    """Store per-step values once (a log read again stores nothing twice)."""
    if not steps:
        return
    ensure(conn)
    with statedb.transaction(conn):
        conn.executemany("INSERT OR IGNORE INTO run_step_metrics (job_id, step, name, value) "
                         "VALUES (?,?,?,?)",
                         [(job_id, step, name, value) for step, values in steps
                          for name, value in values.items()])


__all__ = ["MIGRATIONS", "StepReader", "ensure", "flags", "flatten", "hook_env", "hook_files",
           "install_hook",
           "number", "open_tracking", "params_of", "record_steps", "script_hash", "sync"]
