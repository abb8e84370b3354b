"""Jobs, events, metrics and artifacts in the state SQLite database (WAL mode).

Events are appended and never rewritten. Every state change is one ``BEGIN IMMEDIATE``
transaction that checks the state machine, so two engines (two tfdesk processes on the same
database) can never both start, or both finish, the same job.
"""
from __future__ import annotations

import json
import secrets
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Iterable

from core import statedb
from runners import stored as stored_spec
from runners.models import (ACTIVE, QUEUED, STARTING, TERMINAL, TRANSITIONS, Event,
                            IllegalTransition, Job, JobError, UnknownJob)

SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT UNIQUE NOT NULL,
    kind TEXT NOT NULL,
    spec TEXT NOT NULL,
    owner TEXT NOT NULL,
    reply_to TEXT NOT NULL,
    backend TEXT NOT NULL,
    state TEXT NOT NULL,
    reason TEXT NOT NULL DEFAULT '',
    created_at REAL NOT NULL,
    started_at REAL,
    finished_at REAL,
    workdir TEXT NOT NULL DEFAULT '',
    handle TEXT NOT NULL DEFAULT '{}',
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    log_offset INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS jobs_state ON jobs(state);
CREATE TABLE IF NOT EXISTS job_events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id TEXT NOT NULL,
    ts REAL NOT NULL,
    type TEXT NOT NULL,
    message TEXT NOT NULL DEFAULT '',
    data TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX IF NOT EXISTS job_events_job ON job_events(job_id, seq);
CREATE TRIGGER IF NOT EXISTS job_events_append_only BEFORE UPDATE ON job_events
BEGIN SELECT RAISE(ABORT, 'job events are append-only'); END;
CREATE TABLE IF NOT EXISTS job_metrics (
    job_id TEXT NOT NULL,
    step INTEGER NOT NULL,
    name TEXT NOT NULL,
    value REAL NOT NULL,
    ts REAL NOT NULL,
    PRIMARY KEY (job_id, step, name)
);
-- Which engine is the scheduler of this database (one row): it starts queued jobs and
-- follows every running one; its heartbeat says it is alive.
CREATE TABLE IF NOT EXISTS job_scheduler (
    name TEXT PRIMARY KEY,
    holder TEXT NOT NULL,
    pid INTEGER NOT NULL,
    pid_start INTEGER,
    host TEXT NOT NULL,
    heartbeat REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS job_artifacts (
    job_id TEXT NOT NULL,
    path TEXT NOT NULL,
    size INTEGER NOT NULL,
    kind TEXT NOT NULL,
    name TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (job_id, path)
);
"""

# The jobs tables' migrations, by name, in order (core/statedb.py applies each once).
MIGRATIONS = statedb.Migrations("jobs")
MIGRATIONS(name="0001-jobs-events-metrics-artifacts-scheduler")(statedb.create(SCHEMA))


@MIGRATIONS(name="0002-artifact-names")
def _artifact_names(db) -> None:
    # Databases made before artifacts had names (the catalog needs "onnx" vs "onnx_source").
    cols = {r[1] for r in db.conn.execute("PRAGMA table_info(job_artifacts)")}
    if "name" not in cols:
        db.conn.execute("ALTER TABLE job_artifacts ADD COLUMN name TEXT NOT NULL DEFAULT ''")


_JOB_COLS = ("id", "kind", "spec", "owner", "reply_to", "backend", "state", "reason", "created_at",
             "started_at", "finished_at", "workdir", "handle", "cancel_requested")


def _job(row: sqlite3.Row, strict: bool = True) -> Job:
    """The row as a Job, or UnreadableSpec naming every fault of the row. ``strict=False``:
    what cannot be read becomes ``None`` (the spec) or ``{}`` (handle, reply address), as what
    deleting or ending the job needs is outside the spec."""
    d = {k: row[k] for k in _JOB_COLS}
    faults = []
    try:
        d["spec"] = stored_spec.load(row["kind"], row["spec"], row["id"])  # typed, or an error
    except stored_spec.UnreadableSpec as exc:
        faults.append(str(exc).removeprefix(f"job {row['id']}: "))
        d["spec"] = None
    for k in ("reply_to", "handle"):
        try:
            d[k] = json.loads(d[k])
        except (TypeError, ValueError) as exc:
            d[k] = exc
        if not isinstance(d[k], dict):
            faults.append(f"its stored {k} is not a JSON object ({d[k]})"[:300])
            d[k] = {}
    if faults and strict:
        raise stored_spec.UnreadableSpec(f"job {row['id']}: " + "; ".join(faults), row["id"])
    d["cancel_requested"] = bool(d["cancel_requested"])
    return Job(**d)


def new_job_id() -> str:
    return "j-" + secrets.token_hex(4)


class JobStore:
    def __init__(self, path: Path | str):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        statedb.migrate(self._db(), MIGRATIONS)

    # One connection per thread: sqlite3 connections must not be shared across threads.
    def _db(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is None:
            db = self._local.db = statedb.connect(self.path)
        return db

    def close(self) -> None:
        db = getattr(self._local, "db", None)
        if db is not None:
            db.close()
            self._local.db = None

    def _tx(self):
        return statedb.transaction(self._db())

    # -- jobs ---------------------------------------------------------------------------------
    def create(self, kind: str, spec: stored_spec.StoredSpec | dict, owner: str,
               reply_to: dict, backend: str, workdir_root: Path, max_active: int | None = None,
               also_active: int = 0, job_id: str | None = None) -> tuple[Job, Event]:
        """Queue a job. ``max_active``: the owner's limit of active jobs (pipeline steps do
        not count; ``also_active`` is what counts besides, e.g. pipeline runs): counted and
        inserted in one transaction, so parallel submissions never pass it. ``spec``: typed
        (runners/stored.py); a mapping is read as an untyped spec is (stored.legacy)."""
        if not isinstance(spec, (stored_spec.StoredTrain, stored_spec.StoredModelJob)):
            spec = stored_spec.legacy(kind, spec)
        elif spec.kind != kind:
            raise JobError(f"a {spec.kind} spec cannot be stored for a {kind} job")
        now = time.time()
        job_id = job_id or new_job_id()  # given: the id its prepared files already name
        workdir = str(Path(workdir_root) / job_id)
        with self._tx() as db:
            if max_active is not None:
                mine = db.execute(
                    f"SELECT count(*) FROM jobs WHERE owner = ? AND state IN "
                    f"({','.join('?' * len(ACTIVE))}) AND "
                    # a spec that is not JSON (damaged) counts, and never breaks the count
                    "CASE WHEN json_valid(spec) THEN json_extract(spec, '$.labels.pipeline_run')"
                    " END IS NULL",
                    (owner, *ACTIVE)).fetchone()[0] + also_active
                if mine >= max_active:
                    raise JobError(f"you already have {mine} running job(s), the limit is "
                                   f"{max_active}; wait for one to finish or cancel one "
                                   "(`/tf jobs --mine`).")
            db.execute("INSERT INTO jobs (id, kind, spec, owner, reply_to, backend, state, created_at,"
                       " workdir) VALUES (?,?,?,?,?,?,?,?,?)",
                       (job_id, kind, stored_spec.dumps(spec), owner, json.dumps(reply_to), backend, QUEUED,
                        now, workdir))
            ev = self._append(db, Event(job_id, "state", f"queued ({kind} on {backend})",
                                        {"state": QUEUED, "from": None}, now))
        return self.get(job_id), ev

    def get(self, job_id: str, strict: bool = True) -> Job:
        row = self._db().execute("SELECT * FROM jobs WHERE id = ?", (job_id,)).fetchone()
        if row is None:
            raise UnknownJob(job_id)
        return _job(row, strict)

    def list(self, states: Iterable[str] | None = None, owner: str | None = None,
             backend: str | None = None, limit: int | None = None,
             skipped: list[tuple[str, str]] | None = None) -> list[Job]:
        """Readable jobs, oldest first; rows whose spec cannot be read are left out and, when
        ``skipped`` is given, named there with why (``delete ID`` removes one)."""
        sql, params = "SELECT * FROM jobs WHERE 1=1", []
        if states:
            states = list(states)
            sql += f" AND state IN ({','.join('?' * len(states))})"
            params += states
        if owner:
            sql += " AND owner = ?"
            params.append(owner)
        if backend:
            sql += " AND backend = ?"
            params.append(backend)
        sql += " ORDER BY seq"
        if limit:
            sql = f"SELECT * FROM ({sql.replace('ORDER BY seq', 'ORDER BY seq DESC')} LIMIT {int(limit)}) ORDER BY seq"
        jobs = []
        for row in self._db().execute(sql, params):
            try:  # one row this tfdesk cannot read never hides the others
                jobs.append(_job(row))
            except stored_spec.UnreadableSpec as exc:
                if skipped is not None:
                    skipped.append((row["id"], str(exc)))
        return jobs

    def update_handle(self, job_id: str, **values: Any) -> None:
        with self._tx() as db:
            row = db.execute("SELECT handle FROM jobs WHERE id = ?", (job_id,)).fetchone()
            handle = json.loads(row["handle"]) if row else {}
            handle.update(values)
            db.execute("UPDATE jobs SET handle = ? WHERE id = ?", (json.dumps(handle), job_id))

    def request_cancel(self, job_id: str) -> None:
        with self._tx() as db:
            db.execute("UPDATE jobs SET cancel_requested = 1 WHERE id = ?", (job_id,))

    def log_offset(self, job_id: str) -> int:
        row = self._db().execute("SELECT log_offset FROM jobs WHERE id = ?", (job_id,)).fetchone()
        return row["log_offset"] if row else 0

    def set_log_offset(self, job_id: str, offset: int) -> None:
        self._db().execute("UPDATE jobs SET log_offset = max(log_offset, ?) WHERE id = ?",
                           (offset, job_id))

    def transition(self, job_id: str, to: str, reason: str = "", data: dict | None = None,
                   strict: bool = True) -> Event | None:
        """Move a job to ``to``; returns the state event, or None when the move is not legal
        and ``strict`` is False (e.g. a second engine finishing a job that already finished)."""
        now = time.time()
        with self._tx() as db:
            row = db.execute("SELECT state FROM jobs WHERE id = ?", (job_id,)).fetchone()
            if row is None:
                raise UnknownJob(job_id)
            state = row["state"]
            if to not in TRANSITIONS[state]:
                if strict:
                    raise IllegalTransition(f"job {job_id} is {state}; it cannot become {to}")
                return None
            sets = ["state = ?", "reason = ?"]
            params: list[Any] = [to, reason]
            if to == STARTING:
                sets.append("started_at = ?")
                params.append(now)
            if to in TERMINAL:
                sets.append("finished_at = ?")
                params.append(now)
            db.execute(f"UPDATE jobs SET {', '.join(sets)} WHERE id = ?", (*params, job_id))
            msg = to + (f": {reason}" if reason else "")
            return self._append(db, Event(job_id, "state", msg,
                                          {"state": to, "from": state, "reason": reason, **(data or {})},
                                          now))

    def claim(self, job_id: str, backend: str, limit: int, per_owner: int, owner: str,
              claimant: dict | None = None) -> Event | None:
        """queued -> starting, but only while the backend's pool and the owner's share have room.
        Counting and claiming happen in one transaction, so the limits hold across processes."""
        now = time.time()
        with self._tx() as db:
            row = db.execute("SELECT state FROM jobs WHERE id = ?", (job_id,)).fetchone()
            if row is None or row["state"] != QUEUED:
                return None
            busy = db.execute("SELECT count(*) FROM jobs WHERE backend = ? AND state IN (?, ?)",
                              (backend, STARTING, "running")).fetchone()[0]
            mine = db.execute("SELECT count(*) FROM jobs WHERE owner = ? AND state IN (?, ?)",
                              (owner, STARTING, "running")).fetchone()[0]
            if busy >= limit or mine >= per_owner:
                return None
            db.execute("UPDATE jobs SET state = ?, started_at = ?, handle = ? WHERE id = ?",
                       (STARTING, now, json.dumps({"engine": claimant} if claimant else {}), job_id))
            return self._append(db, Event(job_id, "state", STARTING,
                                          {"state": STARTING, "from": QUEUED}, now))

    def claim_next(self, backend: str, limit: int, per_owner: int,
                   claimant: dict | None = None) -> Job | None:
        """Claim the oldest queued job of ``backend`` whose owner has room, if the pool has
        room: one transaction, however long the queue."""
        now = time.time()
        with self._tx() as db:
            busy = db.execute("SELECT count(*) FROM jobs WHERE backend = ? AND state IN (?, ?)",
                              (backend, STARTING, "running")).fetchone()[0]
            if busy >= limit:
                return None
            row = db.execute(
                "SELECT id FROM jobs WHERE state = ? AND backend = ? AND owner NOT IN ("
                " SELECT owner FROM jobs WHERE state IN (?, ?) GROUP BY owner HAVING count(*) >= ?)"
                " ORDER BY seq LIMIT 1", (QUEUED, backend, STARTING, "running", per_owner)).fetchone()
            if row is None:
                return None
            db.execute("UPDATE jobs SET state = ?, started_at = ?, handle = ? WHERE id = ?",
                       (STARTING, now, json.dumps({"engine": claimant} if claimant else {}),
                        row["id"]))
            ev = self._append(db, Event(row["id"], "state", STARTING,
                                        {"state": STARTING, "from": QUEUED}, now))
        job = self.get(row["id"])
        job._claim_event = ev  # type: ignore[attr-defined]
        return job

    # -- the scheduler lease --------------------------------------------------------------------
    def lease(self) -> dict[str, Any] | None:
        row = self._db().execute("SELECT * FROM job_scheduler WHERE name = 'main'").fetchone()
        return dict(row) if row else None

    def take_lease(self, me: dict[str, Any], stale_s: float, alive) -> bool:
        """Become (or stay) the scheduler: when nobody holds the lease, its holder is silent
        for ``stale_s``, or ``alive(pid, pid_start)`` says its process on this host is gone.
        One transaction, so two engines never both hold it."""
        now = time.time()
        with self._tx() as db:
            row = db.execute("SELECT * FROM job_scheduler WHERE name = 'main'").fetchone()
            if row is not None and row["holder"] != me["id"] and now - row["heartbeat"] < stale_s \
                    and (row["host"] != me["host"] or alive(row["pid"], row["pid_start"])):
                return False
            db.execute("INSERT OR REPLACE INTO job_scheduler VALUES ('main', ?, ?, ?, ?, ?)",
                       (me["id"], me["pid"], me.get("pid_start"), me["host"], now))
            return True

    def release_lease(self, holder: str) -> None:
        with self._tx() as db:
            db.execute("DELETE FROM job_scheduler WHERE name = 'main' AND holder = ?", (holder,))

    def delete(self, job_id: str) -> None:
        with self._tx() as db:
            for table in ("jobs", "job_metrics", "job_artifacts"):
                db.execute(f"DELETE FROM {table} WHERE {'id' if table == 'jobs' else 'job_id'} = ?",
                           (job_id,))
            # Events stay (append-only history); a final event records the deletion.
            self._append(db, Event(job_id, "info", "deleted", {"deleted": True}, time.time()))

    # -- events, metrics, artifacts --------------------------------------------------------------
    def _append(self, db: sqlite3.Connection, ev: Event) -> Event:
        ev.ts = ev.ts or time.time()
        cur = db.execute("INSERT INTO job_events (job_id, ts, type, message, data) VALUES (?,?,?,?,?)",
                         (ev.job_id, ev.ts, ev.type, ev.message, json.dumps(ev.data, default=str)))
        ev.seq = cur.lastrowid
        return ev

    def append_event(self, ev: Event) -> Event:
        with self._tx() as db:
            return self._append(db, ev)

    def events(self, job_id: str, after: int = 0) -> list[Event]:
        rows = self._db().execute("SELECT * FROM job_events WHERE job_id = ? AND seq > ? ORDER BY seq",
                                  (job_id, after))
        return [Event(r["job_id"], r["type"], r["message"], json.loads(r["data"]), r["ts"], r["seq"])
                for r in rows]

    def add_metrics(self, job_id: str, step: int, values: dict[str, float]) -> bool:
        """Store one step's values; False when that step was already stored (a second reader
        of the same log), so callers publish each metric once."""
        now = time.time()
        with self._tx() as db:
            new = False
            for name, value in values.items():
                cur = db.execute("INSERT OR IGNORE INTO job_metrics VALUES (?,?,?,?,?)",
                                 (job_id, step, name, float(value), now))
                new = new or cur.rowcount > 0
            return new

    def metrics(self, job_id: str) -> list[dict[str, Any]]:
        """One dict per step: {"epoch": step, name: value, ...}, in order."""
        rows = self._db().execute("SELECT step, name, value FROM job_metrics WHERE job_id = ?"
                                  " ORDER BY step, name", (job_id,))
        out: dict[int, dict[str, Any]] = {}
        for r in rows:
            out.setdefault(r["step"], {"epoch": r["step"]})[r["name"]] = r["value"]
        return list(out.values())

    def set_artifacts(self, job_id: str, artifacts: list[dict[str, Any]]) -> None:
        with self._tx() as db:
            db.execute("DELETE FROM job_artifacts WHERE job_id = ?", (job_id,))
            db.executemany("INSERT INTO job_artifacts (job_id, path, size, kind, name) "
                           "VALUES (?,?,?,?,?)",
                           [(job_id, a["path"], a["size"], a["kind"], a.get("name") or "")
                            for a in artifacts])

    def artifacts(self, job_id: str) -> list[dict[str, Any]]:
        """``name`` is there when the job kind named the artifact (e.g. ``onnx``)."""
        rows = self._db().execute("SELECT path, size, kind, name FROM job_artifacts "
                                  "WHERE job_id = ? ORDER BY path", (job_id,))
        return [{k: r[k] for k in ("path", "size", "kind", "name") if r[k] != ""} for r in rows]

    def active_count(self) -> int:
        return self._db().execute(f"SELECT count(*) FROM jobs WHERE state IN ({','.join('?' * len(ACTIVE))})",
                                  ACTIVE).fetchone()[0]
