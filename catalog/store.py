"""The catalog's tables in the state SQLite database: schema and its migrations (opened, with
transactions, by core/statedb.py like every part's tables).

The state database is shared with the job engine and the Slack dedupe table, so every catalog
table is prefixed ``catalog_`` and the schema version lives in ``catalog_meta`` (not in
``PRAGMA user_version``, which belongs to no one package).
"""
from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from core import statedb

SCHEMA_VERSION = 2

SCHEMA = """
CREATE TABLE IF NOT EXISTS catalog_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS catalog_projects (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE COLLATE NOCASE,
    description TEXT NOT NULL DEFAULT '',
    owner TEXT NOT NULL,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS catalog_channel_projects (
    channel TEXT PRIMARY KEY,
    project_id INTEGER NOT NULL REFERENCES catalog_projects(id) ON DELETE CASCADE
);
CREATE TABLE IF NOT EXISTS catalog_project_jobs (
    project_id INTEGER NOT NULL REFERENCES catalog_projects(id) ON DELETE CASCADE,
    job_id TEXT NOT NULL,
    PRIMARY KEY (project_id, job_id)
);
CREATE TABLE IF NOT EXISTS catalog_datasets (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE COLLATE NOCASE,
    uri TEXT NOT NULL,
    format TEXT NOT NULL DEFAULT '',
    description TEXT NOT NULL DEFAULT '',
    owner TEXT NOT NULL,
    size_bytes INTEGER,
    project_id INTEGER REFERENCES catalog_projects(id),
    created REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS catalog_datasets_project ON catalog_datasets(project_id);
CREATE INDEX IF NOT EXISTS catalog_datasets_owner ON catalog_datasets(owner);
CREATE TABLE IF NOT EXISTS catalog_models (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL COLLATE NOCASE,
    version INTEGER NOT NULL,
    format TEXT NOT NULL,
    tf_version TEXT NOT NULL DEFAULT '',
    job_id TEXT,
    run_id TEXT,
    parent_id INTEGER REFERENCES catalog_models(id) ON DELETE SET NULL,
    dataset_id INTEGER REFERENCES catalog_datasets(id) ON DELETE SET NULL,
    validation TEXT,
    benchmark TEXT,
    artifact_uri TEXT NOT NULL DEFAULT '',
    description TEXT NOT NULL DEFAULT '',
    owner TEXT NOT NULL,
    project_id INTEGER REFERENCES catalog_projects(id),
    created REAL NOT NULL,
    UNIQUE (name, version)
);
CREATE INDEX IF NOT EXISTS catalog_models_project ON catalog_models(project_id);
CREATE INDEX IF NOT EXISTS catalog_models_owner ON catalog_models(owner);
CREATE INDEX IF NOT EXISTS catalog_models_job ON catalog_models(job_id);
CREATE INDEX IF NOT EXISTS catalog_models_run ON catalog_models(run_id);
CREATE INDEX IF NOT EXISTS catalog_models_parent ON catalog_models(parent_id);
CREATE INDEX IF NOT EXISTS catalog_models_dataset ON catalog_models(dataset_id);
CREATE INDEX IF NOT EXISTS catalog_models_artifact ON catalog_models(artifact_uri);
CREATE TABLE IF NOT EXISTS catalog_environments (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE COLLATE NOCASE,
    kind TEXT NOT NULL CHECK (kind IN ('local', 'image')),
    image TEXT NOT NULL DEFAULT '',
    python TEXT NOT NULL DEFAULT '',
    tf_version TEXT NOT NULL DEFAULT '',
    keras_version TEXT NOT NULL DEFAULT '',
    horovod_version TEXT NOT NULL DEFAULT '',
    is_default INTEGER NOT NULL DEFAULT 0,
    description TEXT NOT NULL DEFAULT '',
    owner TEXT NOT NULL,
    project_id INTEGER REFERENCES catalog_projects(id),
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS catalog_components (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL COLLATE NOCASE,
    version INTEGER NOT NULL,
    kind TEXT NOT NULL,
    params TEXT NOT NULL DEFAULT '{}',
    description TEXT NOT NULL DEFAULT '',
    owner TEXT NOT NULL,
    project_id INTEGER REFERENCES catalog_projects(id),
    created REAL NOT NULL,
    UNIQUE (name, version)
);
CREATE TABLE IF NOT EXISTS catalog_pipelines (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE COLLATE NOCASE,
    definition TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    owner TEXT NOT NULL,
    project_id INTEGER REFERENCES catalog_projects(id),
    created REAL NOT NULL
);
-- What a pipeline definition names (datasets, components, environments, models), so deletes
-- can list dependants without re-reading every definition.
CREATE TABLE IF NOT EXISTS catalog_pipeline_refs (
    pipeline_id INTEGER NOT NULL REFERENCES catalog_pipelines(id) ON DELETE CASCADE,
    kind TEXT NOT NULL,
    name TEXT NOT NULL COLLATE NOCASE,
    PRIMARY KEY (kind, name, pipeline_id)
);
CREATE TABLE IF NOT EXISTS catalog_runs (
    id TEXT PRIMARY KEY,
    pipeline TEXT NOT NULL COLLATE NOCASE,
    definition TEXT NOT NULL,
    state TEXT NOT NULL,
    owner TEXT NOT NULL,
    project_id INTEGER REFERENCES catalog_projects(id) ON DELETE SET NULL,
    reply_to TEXT NOT NULL DEFAULT '{}',
    resumed_from TEXT,
    error TEXT,
    created REAL NOT NULL,
    finished REAL,
    driver TEXT  -- the process driving the run (JSON pid/start/host): a restart reconciles
);
CREATE INDEX IF NOT EXISTS catalog_runs_pipeline ON catalog_runs(pipeline, created);
CREATE TABLE IF NOT EXISTS catalog_run_steps (
    run_id TEXT NOT NULL REFERENCES catalog_runs(id) ON DELETE CASCADE,
    idx INTEGER NOT NULL,
    name TEXT NOT NULL,
    kind TEXT NOT NULL,
    state TEXT NOT NULL,
    job_id TEXT,
    spec TEXT,
    outputs TEXT,
    error TEXT,
    started REAL,
    finished REAL,
    PRIMARY KEY (run_id, idx)
);
-- Reads of catalog entries by running work (a job reading a model), deletes are refused
-- while one is active.
CREATE TABLE IF NOT EXISTS catalog_uses (
    kind TEXT NOT NULL,
    item_id INTEGER NOT NULL,
    user TEXT NOT NULL,
    PRIMARY KEY (kind, item_id, user)
);
CREATE TABLE IF NOT EXISTS catalog_tags (
    kind TEXT NOT NULL,
    tag TEXT NOT NULL,
    item_id INTEGER NOT NULL,
    PRIMARY KEY (kind, tag, item_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS catalog_tags_item ON catalog_tags(kind, item_id);
"""


# Lists probe rows all over a 100k-row table; the default 2 MB page cache thrashes.
PRAGMAS = ("cache_size=-65536", "mmap_size=268435456")


def open_db(path: str | Path) -> sqlite3.Connection:
    """Open (and create or upgrade) the catalog tables in the state database at ``path``."""
    return statedb.open_state(path, MIGRATIONS, shared=True, pragmas=PRAGMAS)


# Tables whose name and description `--search` looks in. Each gets an FTS5 index with the
# trigram tokenizer, so a search keeps its substring meaning (like LIKE '%text%', any case)
# but is answered from the index instead of a scan of every row. Triggers keep it current.
SEARCHABLE = ("catalog_projects", "catalog_datasets", "catalog_models", "catalog_environments",
              "catalog_components", "catalog_pipelines")


def fts_table(table: str) -> str:
    return f"{table}_fts"


def _fts_statements(table: str) -> list[str]:
    fts = fts_table(table)
    old = f"INSERT INTO {fts} ({fts}, rowid, name, description) VALUES " \
          "('delete', old.id, old.name, old.description);"
    new = f"INSERT INTO {fts} (rowid, name, description) VALUES " \
          "(new.id, new.name, new.description);"
    return [
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {fts} USING fts5(name, description, "
        f"content='{table}', content_rowid='id', tokenize='trigram')",
        f"CREATE TRIGGER IF NOT EXISTS {fts}_ai AFTER INSERT ON {table} BEGIN {new} END",
        f"CREATE TRIGGER IF NOT EXISTS {fts}_ad AFTER DELETE ON {table} BEGIN {old} END",
        f"CREATE TRIGGER IF NOT EXISTS {fts}_au AFTER UPDATE OF name, description ON {table} "
        f"BEGIN {old} {new} END",
    ]


# The catalog tables' migrations, by name, in order (core/statedb.py applies each once).
MIGRATIONS = statedb.Migrations("catalog")
MIGRATIONS(name="0001-tables")(statedb.create(SCHEMA))


@MIGRATIONS(name="0002-run-driver-and-search-indexes")
def _run_driver_and_search(db) -> None:
    _migrate(db.conn)
    db.conn.execute("INSERT OR REPLACE INTO catalog_meta VALUES ('schema_version', ?)",
                    (str(SCHEMA_VERSION),))


@MIGRATIONS(name="0003-environment-probe-key")
def _environment_probe_key(db) -> None:
    # What a built-in runtime's versions were probed from (catalog.environments.fingerprint).
    db.conn.execute("ALTER TABLE catalog_environments ADD COLUMN probed TEXT NOT NULL DEFAULT ''")


def _migrate(conn: sqlite3.Connection) -> None:
    """Bring tables made by an older tfdesk up to SCHEMA_VERSION (columns added since)."""
    cols = {r[1] for r in conn.execute("PRAGMA table_info(catalog_runs)")}
    if "driver" not in cols:  # version 2
        conn.execute("ALTER TABLE catalog_runs ADD COLUMN driver TEXT")
    for table in SEARCHABLE:  # version 2: search indexes, filled from existing rows
        exists = conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?",
                              (fts_table(table),)).fetchone()
        for stmt in _fts_statements(table):
            conn.execute(stmt)
        if not exists:
            conn.execute(f"INSERT INTO {fts_table(table)} ({fts_table(table)}) VALUES ('rebuild')")


# All-or-nothing: BEGIN IMMEDIATE at the outermost level, savepoints when nested.
transaction = statedb.transaction


def now() -> float:
    return time.time()
