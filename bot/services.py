"""The long-lived objects of one tfdesk process, built once at the edge.

The terminal, the console and the Slack runtime each make one :class:`Services` and hand it to
every request through its :class:`~bot.context.Context`, so the knowledge base and its search
index, the job engine and the catalog are opened once per process, not once per request.
Everything is opened on first use: ``tfdesk history`` never opens the job engine, and
``tfdesk jobs`` gets an engine that starts nothing (see :meth:`Services.engine`).
"""
from __future__ import annotations

import os
import threading
from pathlib import Path

from bot.config import Config


def runner_python(config: Config) -> Path:
    """The interpreter jobs run with: ``[runner] python``, else ``TFDESK_RUNNER_PYTHON``, else
    the checkout's ``.venv-runner``. Read here, at the edge, like every environment variable."""
    python = config.section("runner").get("python") or os.environ.get("TFDESK_RUNNER_PYTHON")
    if python:
        return Path(python)
    from runners.engine import default_runner_python
    return default_runner_python()


def engine_config(config: Config):
    from bot.runtimes import environments_provider
    from runners.engine import EngineConfig
    jobs = config.section("jobs")
    jobs_dir = Path(jobs.get("dir") or "jobs").expanduser()
    return EngineConfig(
        state_path=config.state_path,
        jobs_dir=jobs_dir if jobs_dir.is_absolute() else config.home / jobs_dir,
        runner_python=runner_python(config),
        local_workers=int(jobs.get("local_workers", 2)),
        per_owner=int(jobs.get("per_owner", jobs.get("local_workers", 2))),
        kubernetes=config.section("kubernetes"),
        grace_s=float(jobs.get("grace_s", 10)),
        environments=environments_provider(config),
        job_user=config.section("runner").get("user"),
        runner=config.section("runner"),
    )


class Services:
    """KB + searcher, job engine (with its catalog subscriber), catalog, for one process.

    ``scheduler=True`` (``tfdesk serve``, the Slack runtime) starts the engine as the
    scheduler that starts and follows every job; otherwise the engine starts only the jobs
    this process submits and waits for, when no scheduler runs.
    """

    def __init__(self, config: Config, *, scheduler: bool = False, engine=None):
        self.config = config
        self.scheduler = scheduler
        self._lock = threading.RLock()
        self._engine = engine
        self._own_engine = engine is None
        self._answers = None
        self._catalog = threading.local()  # sqlite connections stay in their thread
        self._catalog_conns: list = []
        self._catalog_ready = False

    # -- knowledge base --------------------------------------------------------------------------
    @property
    def answers(self):
        """The KB's answers (ask/history/diff) with its searcher built once."""
        if self._answers is None:
            with self._lock:
                if self._answers is None:
                    from knowledge_base.qa.answers import Answers
                    self._answers = Answers.open(self.config.kb_path, self.config.site_url)
        return self._answers

    def reopen_kb(self) -> None:
        """The KB file was rebuilt: the next question opens it afresh."""
        with self._lock:
            self._answers = None

    @property
    def kb(self):
        return self.answers.kb

    def warm(self) -> None:
        """Load the search index now, preparing what questions read beside the KB (a server
        does it before its first request; ``kb load`` for the next process)."""
        try:
            self.answers.questions.warm()
        except Exception:  # noqa: BLE001 - no KB yet: 'ask' will say so when asked
            pass

    # -- jobs ------------------------------------------------------------------------------------
    @property
    def engine(self):
        """The job engine. Built once; started (reconcile, follow, schedule) only with
        ``scheduler=True``; otherwise it only looks at jobs, catching up with what ended."""
        if self._engine is None:
            with self._lock:
                if self._engine is None:
                    self._engine = make_engine(self.config, start=self.scheduler)
        return self._engine

    def start_engine(self):
        """Start the engine as this process's scheduler (the Slack runtime)."""
        from bot.pipeline_engine import reconcile_pipeline_runs
        engine = self.engine
        if not engine.started:
            engine.start()
            reconcile_pipeline_runs(engine, self.config.state_path, follow=True)
        return engine

    # -- catalog ---------------------------------------------------------------------------------
    @property
    def catalog(self):
        """The catalog's connection for the calling thread (opened once per thread)."""
        conn = getattr(self._catalog, "conn", None)
        if conn is None:
            from bot.runtimes import builtin_runtimes
            from catalog import environments
            from catalog.store import open_db
            conn = open_db(self.config.state_path)
            with self._lock:
                if not self._catalog_ready:
                    environments.ensure_builtin(conn, builtin_runtimes(self.config))
                    self._catalog_ready = True
                self._catalog_conns.append(conn)
            self._catalog.conn = conn
        return conn

    def close(self) -> None:
        with self._lock:
            if self._engine is not None and self._own_engine:
                self._engine.close()
            self._engine = None
            for conn in self._catalog_conns:
                try:
                    conn.close()
                except Exception:  # noqa: BLE001 - closing from another thread; best effort
                    pass
            self._catalog_conns.clear()
            self._catalog = threading.local()


def make_engine(config: Config, start: bool = False):
    """The job engine as every face uses it: every job that succeeds registers what it
    produced in the catalog; pipeline runs a stopped tfdesk left behind are settled (and,
    with ``start``, for a long-running tfdesk, taken over)."""
    from bot.pipeline_engine import (guard_catalog_entries, reconcile_pipeline_runs,
                                     register_outputs_subscriber)
    from runners.engine import Engine
    from runners.isolation import protect_files
    engine = Engine(engine_config(config))
    # Jobs run as another user (when tfdesk is root): what holds tfdesk's secrets is ours
    # alone (SQLite gives the -wal/-shm files it creates later the database's mode).
    protect_files(config.state_path, config.home / "tfdesk.toml")
    register_outputs_subscriber(engine, config.state_path)
    guard_catalog_entries(engine, config.state_path)  # no job delete under a catalog entry
    if start:
        engine.start()
    else:
        engine.refresh()  # notice jobs that ended while nobody watched; starts nothing
    reconcile_pipeline_runs(engine, config.state_path, follow=start)
    return engine


__all__ = ["Services", "engine_config", "make_engine", "runner_python"]
