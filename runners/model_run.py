"""Model work run to its end from a script (tests, benchmarks): as a job of an engine, in its
sandbox, like every job; there is no other way to run the model worker."""
from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any, Callable

from runners.models import Job

Progress = Callable[[str, Any, Any], None]


def run_model_job(kind: str, spec: dict[str, Any], runner_python: Path | str,
                  settings: dict[str, Any] | None = None, home: Path | str | None = None,
                  progress: Progress | None = None,
                  timeout: float | None = None) -> tuple[Job, dict[str, Any]]:
    """Submit ``kind`` (convert-model, infer, evaluate) to an engine on ``home`` (a fresh
    folder when None), wait for its end; the job and its report (read without following
    links). ``progress(stage, done, total)`` hears the worker's progress lines."""
    import runners.model_jobs  # noqa: F401  (registers the model kinds)
    from converters.model.jobspec import parse_progress
    from runners.engine import Engine, EngineConfig
    from runners.jobfiles import read_job_text
    home = Path(home) if home else Path(tempfile.mkdtemp(prefix="tfdesk-model-"))
    engine = Engine(EngineConfig(state_path=home / "state.sqlite", jobs_dir=home / "jobs",
                                 runner_python=Path(runner_python), local_workers=1,
                                 follow=False))
    token = None
    if progress is not None:
        def on_event(ev) -> None:
            msg = parse_progress(ev.message) if ev.type == "log" else None
            if msg:
                progress(*msg)
        token = engine.subscribe(on_event)
    try:
        job = engine.wait(engine.submit(kind, {**spec, "settings": settings or {}}).id, timeout)
    finally:
        if token is not None:
            engine.unsubscribe(token)
        engine.close()
    try:
        report = json.loads(read_job_text(job.workdir, "report.json"))
    except (OSError, ValueError):
        report = {"status": "failed", "error": {"code": "crash", "error": (
            f"the job ended {job.state} without a report: {job.reason}")}}
    return job, report
