"""The job engine (runners.engine.Engine) as the catalog's StepExecutor, and the subscriber
that registers every finished job's outputs in the catalog.

Lives in bot/ because it is the one place allowed to know both runners and catalog.
"""
from __future__ import annotations

import json
import secrets
from pathlib import Path
from typing import Any

from catalog.executor import StepOutcome

TERMINAL = ("succeeded", "failed", "cancelled", "lost")


def _abs_artifacts(job, arts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # The engine lists artifacts relative to the job's directory; the catalog keeps full paths.
    return [{"name": a.get("kind") or Path(a["path"]).name,
             "path": str(Path(job.workdir) / a["path"]), **{k: v for k, v in a.items()
                                                           if k not in ("path",)}}
            for a in arts]


def _results(arts: list[dict[str, Any]]) -> dict[str, Any]:
    """Validation and benchmark reports a model job wrote as JSON (report.json and the like)."""
    out: dict[str, Any] = {}
    for a in arts:
        p = Path(a["path"])
        if p.suffix == ".json" and p.is_file() and p.stat().st_size < 5_000_000:
            try:
                data = json.loads(p.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if isinstance(data, dict):
                for key in ("validation", "benchmark", "evaluation", "tf_version"):
                    if key in data and key not in out:
                        out[key] = data[key]
    return out


class EngineSteps:
    """StepExecutor over the engine. ``convert-script`` is not a job (the converter only parses
    the script, never runs it), so it runs inline and gets an ``inline-`` id."""

    def __init__(self, engine, scratch: Path):
        self.engine = engine
        self.scratch = Path(scratch)
        self._inline: dict[str, StepOutcome] = {}

    def submit(self, kind: str, spec: dict[str, Any], owner: str, reply_to: dict[str, Any]) -> str:
        if kind == "convert-script":
            return self._convert_script(spec)
        spec = dict(spec)
        if kind == "train" and "script" in spec and "script_path" not in spec:
            spec["script_path"] = spec.pop("script")
        return self.engine.submit(kind, spec, owner, reply_to).id

    def _convert_script(self, spec: dict[str, Any]) -> str:
        from converters.script.api import convert
        job_id = f"inline-{secrets.token_hex(4)}"
        try:
            src = Path(spec["script"])
            result = convert(src.read_text(encoding="utf-8"), spec.get("target", "horovod"),
                             filename=src.name)
            out = self.scratch / job_id / src.name
            out.parent.mkdir(parents=True)
            out.write_text(result.code, encoding="utf-8")
            self._inline[job_id] = StepOutcome("succeeded", {"script": str(out)},
                                               artifacts=[{"name": "script", "path": str(out)}])
        except KeyError:
            self._inline[job_id] = StepOutcome("failed", error="convert-script needs 'script'")
        except Exception as exc:  # noqa: BLE001 - reported as the step's failure
            self._inline[job_id] = StepOutcome("failed", error=str(exc))
        return job_id

    def wait(self, job_id: str, timeout: float | None = None) -> StepOutcome:
        if job_id in self._inline:
            return self._inline.pop(job_id)
        job = self.engine.wait(job_id, timeout=timeout)
        if job.state not in TERMINAL:
            job = self.engine.cancel(job_id)
            return StepOutcome("failed", error=f"timed out after {timeout:g} s; cancelled")
        arts = _abs_artifacts(job, self.engine.artifacts(job_id))
        outputs: dict[str, Any] = {"workdir": job.workdir}
        for a in arts:
            if a.get("kind") in ("saved_model", "model"):
                outputs.setdefault("model", a["path"])
        results = _results(arts)
        if job.spec.get("tf_version"):
            results.setdefault("tf_version", job.spec["tf_version"])
        return StepOutcome(job.state, outputs, error=job.reason or "", artifacts=arts,
                           results=results, tf_version=results.get("tf_version", ""))


def engine_executor(ctx):
    from bot.handlers.jobs import get_engine
    engine = get_engine(ctx)
    return EngineSteps(engine, Path(engine.jobs_dir) / "pipeline-steps")


def register_outputs_subscriber(engine, state_path: Path) -> int:
    """Subscribe to the engine so that every job that succeeds registers its outputs in the
    catalog (the lead wires this where the engine is created). Returns the subscription token."""
    from catalog import open_db, register_job_outputs
    conn = open_db(state_path)

    def on_event(ev) -> None:
        if ev.type != "state" or ev.data.get("state") != "succeeded":
            return
        job = engine.get(ev.job_id)
        arts = _abs_artifacts(job, engine.artifacts(ev.job_id))
        register_job_outputs(conn, job, arts, _results(arts),
                             tf_version=job.spec.get("tf_version") or "")

    return engine.subscribe(on_event)
