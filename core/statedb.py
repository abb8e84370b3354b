"""The state database (``state.sqlite``): the one place that opens it.

The job store, the catalog and the Slack face keep their tables in one SQLite file. Each opens
its connections here, so every connection gets the same pragmas (WAL, so readers never wait
for the writer; a busy timeout, since several tfdesk processes share the file; foreign keys),
every write is one transaction taken with ``BEGIN IMMEDIATE`` (nested ones are savepoints),
and each part's schema is a list of named migrations (sqlite-utils' ``Migrations``), applied
once, in order, under the write lock, and recorded in ``_sqlite_migrations``.
"""
from __future__ import annotations

import sqlite3
import time
from contextlib import contextmanager
from itertools import count
from pathlib import Path
from typing import Callable, Iterator

from sqlite_utils import Database
from sqlite_utils.migrations import Migrations

PRAGMAS = ("journal_mode=WAL", "synchronous=NORMAL", "foreign_keys=ON")
BUSY_TIMEOUT_S = 30.0

_savepoints = count()


def connect(path: str | Path, *, shared: bool = False,
            pragmas: tuple[str, ...] = ()) -> sqlite3.Connection:
    """A connection to the state database at ``path`` (made when missing). ``shared``: the
    caller uses it from several threads behind its own lock. Transactions are explicit
    (:func:`transaction`), never implicit."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_S, isolation_level=None,
                           check_same_thread=not shared)
    conn.row_factory = sqlite3.Row
    for pragma in PRAGMAS + tuple(pragmas):
        _pragma(conn, pragma)
    return conn


def _pragma(conn: sqlite3.Connection, pragma: str) -> None:
    """One pragma, waiting out a busy file. Switching a new file to WAL needs an exclusive
    lock, and SQLite answers "database is locked" at once (its busy handler is not called)
    while another process is doing the same switch: wait for it as the busy timeout would."""
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    delay = 0.002
    while True:
        try:
            conn.execute(f"PRAGMA {pragma}")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
        time.sleep(delay)
        delay = min(delay * 2, 0.1)


@contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """All or nothing: ``BEGIN IMMEDIATE`` at the outermost level (the write lock is taken
    first, so two processes never both read-then-write), savepoints when nested."""
    if conn.in_transaction:
        name = f"sp{next(_savepoints)}"
        conn.execute(f"SAVEPOINT {name}")
        try:
            yield conn
        except BaseException:
            conn.execute(f"ROLLBACK TO {name}")
            conn.execute(f"RELEASE {name}")
            raise
        conn.execute(f"RELEASE {name}")
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def statements(script: str) -> list[str]:
    """A schema script as single statements (a trigger's body stays whole), so it can run
    inside a transaction (``executescript`` would commit first)."""
    out, buf = [], ""
    for line in script.splitlines(keepends=True):
        buf += line
        if sqlite3.complete_statement(buf):
            if buf.strip().strip(";").strip():
                out.append(buf.strip())
            buf = ""
    if buf.strip():
        out.append(buf.strip())
    return out


def create(script: str) -> Callable[[Database], None]:
    """A migration that runs a schema script."""
    def run(db: Database) -> None:
        for stmt in statements(script):
            db.conn.execute(stmt)
    return run


def migrate(conn: sqlite3.Connection, migrations: Migrations) -> list[str]:
    """Apply the migrations of ``migrations`` this database has not had yet, under the write
    lock (so two processes opening a new database at once apply each exactly once). Returns
    the names applied."""
    db = Database(conn, execute_plugins=False)
    if not migrations.pending(db):  # the usual case: a read, no lock
        return []
    with transaction(conn):
        names = [m.name for m in migrations.pending(db)]
        migrations.apply(db)
    return names


def open_state(path: str | Path, migrations: Migrations, *, shared: bool = False,
               pragmas: tuple[str, ...] = ()) -> sqlite3.Connection:
    """:func:`connect`, then :func:`migrate`."""
    conn = connect(path, shared=shared, pragmas=pragmas)
    migrate(conn, migrations)
    return conn


__all__ = ["Database", "Migrations", "connect", "create", "migrate", "open_state", "statements",
           "transaction"]
