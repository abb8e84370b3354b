"""One module opens state.sqlite: the job store, the catalog and the Slack store share its
pragmas, transactions and named migrations."""
from __future__ import annotations

import sqlite3
import threading

import pytest

from bot.slack.store import SlackStore
from catalog.store import open_db
from core import statedb
from runners.store import JobStore


def test_every_store_opens_the_file_through_statedb_and_records_its_migrations(tmp_path):
    path = tmp_path / "state.sqlite"
    JobStore(path)
    open_db(path).close()
    SlackStore(path)
    db = sqlite3.connect(path)
    applied = db.execute("SELECT migration_set, name FROM _sqlite_migrations ORDER BY id").fetchall()
    assert {s for s, _ in applied} == {"jobs", "catalog", "slack"}
    assert ("jobs", "0002-artifact-names") in applied
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    before = len(applied)
    JobStore(path)
    open_db(path).close()
    assert db.execute("SELECT count(*) FROM _sqlite_migrations").fetchone()[0] == before


def test_a_database_from_before_migrations_is_upgraded(tmp_path):
    path = tmp_path / "state.sqlite"
    old = sqlite3.connect(path)
    old.execute("CREATE TABLE job_artifacts (job_id TEXT NOT NULL, path TEXT NOT NULL, "
                "size INTEGER NOT NULL, kind TEXT NOT NULL, PRIMARY KEY (job_id, path))")
    old.commit()
    JobStore(path)
    cols = {r[1] for r in old.execute("PRAGMA table_info(job_artifacts)")}
    assert "name" in cols


def test_migrations_apply_once_when_processes_race_and_fail_whole(tmp_path):
    path = tmp_path / "state.sqlite"
    m = statedb.Migrations("race")
    m(name="one")(statedb.create("CREATE TABLE t (x);\nINSERT INTO t VALUES (1);"))
    errors = []

    def open_it():
        try:
            statedb.open_state(path, m)  # the round's file, read when the thread runs
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)
    # Many rounds on new files: the switch to WAL is where racing openers used to fail
    # ("database is locked" at once, with no busy wait), about 3 % of rounds under load.
    for n in range(40):
        path = tmp_path / f"state{n}.sqlite"
        threads = [threading.Thread(target=open_it) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        assert statedb.connect(path).execute("SELECT count(*) FROM t").fetchone()[0] == 1

    bad = statedb.Migrations("bad")
    bad(name="half")(statedb.create("CREATE TABLE u (x);\nINSERT INTO nowhere VALUES (1);"))
    with pytest.raises(sqlite3.OperationalError):
        statedb.open_state(path, bad)
    conn = statedb.connect(path)
    assert conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'u'").fetchone() is None
    assert bad.pending(statedb.Database(conn))


def test_statements_keep_a_trigger_whole():
    script = ("CREATE TABLE a (x);\n-- a comment; with a semicolon\n"
              "CREATE TRIGGER t BEFORE UPDATE ON a BEGIN SELECT RAISE(ABORT, 'no'); END;\n")
    got = statedb.statements(script)
    assert len(got) == 2 and got[1].endswith("END;")
