"""The Slack face's own tables in the state database (SQLite, WAL).

- ``slack_seen``: request keys (event ids, trigger ids) already taken, so Slack's retries and
  duplicate deliveries never start work twice.
- ``slack_audit``: every compute command asked for in Slack, allowed or not.
- ``slack_job_messages``: the status message of each job (updated in place) and whether its
  final message went out, so a restart still delivers it.
- ``slack_outbox``: messages Slack would not take even after retries; resent later.
"""
from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

from core import statedb


class _Result:
    """A finished statement: rows already fetched, so no cursor outlives the lock."""

    def __init__(self, rowcount: int, lastrowid: int | None, rows):
        self.rowcount, self.lastrowid, self._rows = rowcount, lastrowid, rows or []

    def fetchone(self):
        return self._rows[0] if self._rows else None

    def fetchall(self):
        return list(self._rows)

    def __iter__(self):
        return iter(self._rows)


SCHEMA = """
CREATE TABLE IF NOT EXISTS slack_seen (
    key TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    seen_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS slack_audit (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    at REAL NOT NULL,
    user TEXT NOT NULL,
    channel TEXT,
    command TEXT NOT NULL,
    line TEXT NOT NULL,
    allowed INTEGER NOT NULL,
    reason TEXT
);
CREATE TABLE IF NOT EXISTS slack_job_messages (
    job_id TEXT PRIMARY KEY,
    channel TEXT NOT NULL,
    thread_ts TEXT,
    status_ts TEXT,
    final_sent INTEGER NOT NULL DEFAULT 0,
    updated_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS slack_outbox (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at REAL NOT NULL,
    method TEXT NOT NULL,
    payload TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    last_error TEXT,
    job_id TEXT
);
"""


MIGRATIONS = statedb.Migrations("slack")
MIGRATIONS(name="0001-seen-audit-job-messages-outbox")(statedb.create(SCHEMA))


class SlackStore:
    """One connection shared by all threads behind a lock: every statement here is a tiny
    single-row write or read, and opening a connection per request thread (the HTTP server
    starts one per request) costs more than the statements themselves."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        # WAL with NORMAL sync (core/statedb.py): durable across process crashes, and no
        # fsync per ack.
        self._db = statedb.open_state(self.path, MIGRATIONS, shared=True)

    class _Locked:
        def __init__(self, store: "SlackStore"):
            self.store = store

        def execute(self, sql: str, params=()):
            with self.store._lock:
                cur = self.store._db.execute(sql, params)
                rows = cur.fetchall() if cur.description else None
                return _Result(cur.rowcount, cur.lastrowid, rows)

    def _conn(self) -> "SlackStore._Locked":
        return SlackStore._Locked(self)

    # -- dedupe -----------------------------------------------------------------------------
    def claim(self, key: str, kind: str) -> bool:
        """True the first time ``key`` is seen, False for every retry or duplicate after it."""
        cur = self._conn().execute(
            "INSERT OR IGNORE INTO slack_seen (key, kind, seen_at) VALUES (?, ?, ?)",
            (key, kind, time.time()))
        return cur.rowcount == 1

    def prune_seen(self, older_than_s: float = 7 * 86400) -> int:
        cur = self._conn().execute("DELETE FROM slack_seen WHERE seen_at < ?",
                                   (time.time() - older_than_s,))
        return cur.rowcount

    # -- audit ------------------------------------------------------------------------------
    def audit(self, user: str, channel: str | None, command: str, line: str, allowed: bool,
              reason: str = "") -> None:
        self._conn().execute(
            "INSERT INTO slack_audit (at, user, channel, command, line, allowed, reason) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (time.time(), user, channel, command, line, int(allowed), reason))

    def audit_rows(self) -> list[dict[str, Any]]:
        return [dict(r) for r in self._conn().execute("SELECT * FROM slack_audit ORDER BY id")]

    # -- job messages -----------------------------------------------------------------------
    def job_message(self, job_id: str) -> dict[str, Any] | None:
        row = self._conn().execute("SELECT * FROM slack_job_messages WHERE job_id = ?",
                                   (job_id,)).fetchone()
        return dict(row) if row else None

    def set_job_message(self, job_id: str, channel: str, thread_ts: str | None,
                        status_ts: str | None = None) -> None:
        self._conn().execute(
            "INSERT INTO slack_job_messages (job_id, channel, thread_ts, status_ts, updated_at)"
            " VALUES (?, ?, ?, ?, ?) ON CONFLICT(job_id) DO UPDATE SET"
            " status_ts = COALESCE(excluded.status_ts, status_ts),"
            " updated_at = excluded.updated_at",
            (job_id, channel, thread_ts, status_ts, time.time()))

    def mark_final_sent(self, job_id: str) -> None:
        self._conn().execute(
            "UPDATE slack_job_messages SET final_sent = 1, updated_at = ? WHERE job_id = ?",
            (time.time(), job_id))

    def pending_finals(self) -> list[dict[str, Any]]:
        return [dict(r) for r in self._conn().execute(
            "SELECT * FROM slack_job_messages WHERE final_sent = 0")]

    # -- outbox -----------------------------------------------------------------------------
    def enqueue(self, method: str, payload: dict[str, Any], error: str,
                job_id: str | None = None) -> int:
        cur = self._conn().execute(
            "INSERT INTO slack_outbox (created_at, method, payload, attempts, last_error, job_id)"
            " VALUES (?, ?, ?, 1, ?, ?)",
            (time.time(), method, json.dumps(payload), error, job_id))
        return cur.lastrowid

    def outbox(self) -> list[dict[str, Any]]:
        rows = self._conn().execute("SELECT * FROM slack_outbox ORDER BY id").fetchall()
        return [{**dict(r), "payload": json.loads(r["payload"])} for r in rows]

    def outbox_done(self, item_id: int) -> None:
        self._conn().execute("DELETE FROM slack_outbox WHERE id = ?", (item_id,))

    def outbox_failed(self, item_id: int, error: str) -> None:
        self._conn().execute(
            "UPDATE slack_outbox SET attempts = attempts + 1, last_error = ? WHERE id = ?",
            (error, item_id))
