"""Job kinds ``convert-model`` and ``infer``: the work is converters.model's worker, run in
the runner environment in the job's folder. Registered on import (the models handler imports
this module)."""
from __future__ import annotations

from pathlib import Path

from converters.model import jobspec
from runners.kinds import JobKind, LocalPlan, Proc, RunnerEnv, register_kind


def _prepare(mode: str):
    def prepare(spec: dict, workdir: Path, env: RunnerEnv) -> dict:
        settings = spec.pop("settings", None) or {}
        return jobspec.prepare({**spec, "mode": mode}, workdir, env.runner_python, settings)
    return prepare


def local_plan(spec: dict, workdir: Path, env: RunnerEnv) -> LocalPlan:
    return LocalPlan([Proc(jobspec.worker_command(env.runner_python),
                           env=jobspec.worker_env(workdir, env.runner_python,
                                                  {"CUDA_VISIBLE_DEVICES": ""}
                                                  if spec.get("target") == "onnx" else None),
                           name="model")])


def describe(spec: dict) -> str:
    if spec.get("mode") == "infer":
        return f"{spec.get('name')}, batches {','.join(map(str, spec.get('batches', [])))}"
    return f"{spec.get('name')} -> {spec.get('target')} {spec.get('precision')}"


CONVERT = register_kind(JobKind(name="convert-model", prepare=_prepare("convert"),
                                local_plan=local_plan, describe=describe,
                                collect_artifacts=jobspec.artifacts))
INFER = register_kind(JobKind(name="infer", prepare=_prepare("infer"), local_plan=local_plan,
                              describe=describe, collect_artifacts=jobspec.artifacts))
