"""The "train" job kind: a TensorFlow training script, converted to distributed form when
needed, run with horovodrun (Horovod), one process per worker with TF_CONFIG (tf.distribute),
or plain python (one worker)."""
from __future__ import annotations

import re
import socket
from pathlib import Path
from typing import Any

from core.vocabulary import CONVERT_CHOICES, SCRIPT_TARGETS as TARGETS  # noqa: F401
from runners.isolation import job_env
from runners.kinds import JobKind, LocalPlan, Proc, RunnerEnv, register_kind
from runners.launchers import auto_target, detect_target, settle
from runners.models import JobError
from runners.stored import StoredTrain
from runners.tracking import StepReader, hook_env, install_hook, script_hash

TF_PIN = re.compile(r"tensorflow(?:-cpu|-gpu)?\s*==\s*(\d+\.\d+)")
SCRIPT = "script.py"


def detect_tf_version(source: str, launcher: str) -> str | None:
    """The TF version the script needs, for picking a cluster image: an explicit pin in the
    script (``# requires tensorflow==2.15``) wins; Horovod scripts need Horovod's frozen stack."""
    if (m := TF_PIN.search(source)):
        return m.group(1)
    return "2.15" if launcher == "horovod" else None


def _convert(source: str, target: str, filename: str) -> tuple[str, str]:
    """The converted script and the converter's findings (report text). A refusal, or a
    conversion with error findings, stops the job before it exists, with every finding shown."""
    try:
        from converters.script import ConversionError
        from converters.script.child import convert  # its parser holds the GIL for seconds
        from converters.script.findings import format_report
    except ImportError:
        raise JobError(f"this script is single-process and the script converter is not installed, "
                       f"so it cannot be made {target}; convert it yourself or pass --convert none "
                       f"--workers 1") from None
    try:
        result = convert(source, target, filename=filename)
    except ConversionError as exc:  # the converter's own errors are meant for the user
        others = [f for f in exc.findings if f.severity != "error"]
        more = ("\nother findings:\n" + format_report(others, filename)) if others else ""
        raise JobError(f"could not convert the script to {target}, so it was not started: "
                       f"{exc}{more}") from None
    return result.code, result.report


def prepare(spec: dict[str, Any], workdir: Path, env: RunnerEnv) -> dict[str, Any]:
    workers = int(spec["workers"]) if spec.get("workers") is not None else 1
    if workers < 1 or workers > 64:
        raise JobError(f"--workers must be between 1 and 64, not {workers}")
    convert = spec.get("convert") or "auto"
    if convert not in CONVERT_CHOICES:
        raise JobError(f"--convert must be one of {', '.join(CONVERT_CHOICES)}, not {convert!r}")
    if "script_source" in spec:
        source, name = spec["script_source"], spec.get("script_name") or SCRIPT
    else:
        path = Path(spec.get("script_path") or "")
        if not path.is_file():
            raise JobError(f"no such script: {path}")
        try:
            source = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise JobError(f"{path} is not a UTF-8 text file; give a Python training script") from None
        name = path.name
    try:
        compile(source, name, "exec")  # syntax only: user code never runs in this process
    except SyntaxError as exc:
        raise JobError(f"{name} is not valid Python: line {exc.lineno}: {exc.msg}") from None
    given_sha256 = script_hash(source)  # the script as given, before any conversion
    found = detect_target(source)
    converted_to = None
    report = ""
    if convert == "auto":
        launcher = found or (auto_target(source) if workers > 1 else "python")
        if found is None and workers > 1:
            (source, report), converted_to = _convert(source, launcher, name), launcher
    elif convert == "none":
        launcher = found or "python"
        if launcher == "python" and workers > 1:
            raise JobError(f"{name} is single-process and --convert none was given, so it cannot "
                           f"run on {workers} workers; drop --convert none to convert it")
    else:
        launcher = convert
        if found != convert:
            if found is not None:
                raise JobError(f"{name} already uses {found}; it cannot be converted to {convert}")
            (source, report), converted_to = _convert(source, convert, name), convert
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / SCRIPT).write_text(source, encoding="utf-8")
    install_hook(workdir)  # run tracking (runners/tracking_hook), no code in the script
    epochs = spec.get("epochs")
    if epochs is not None and int(epochs) < 1:
        raise JobError("--epochs must be at least 1")
    timeout = spec.get("timeout")
    if timeout is not None and float(timeout) <= 0:
        raise JobError("--timeout must be a positive number of seconds")
    gpus = int(spec.get("gpus_per_worker") or 0)
    if gpus < 0:
        raise JobError("--gpus-per-worker cannot be negative")
    return {"script": SCRIPT, "script_name": name, "workers": workers, "launcher": launcher,
            "converted_to": converted_to, "conversion_report": report,
            "script_sha256": given_sha256,
            "epochs": int(epochs) if epochs else None,
            "timeout": float(timeout) if timeout else None, "gpus_per_worker": gpus,
            "args": [str(a) for a in spec.get("args") or []],
            # Kubernetes requests and limits for each worker (train --cpu/--memory; core/pods.py)
            "cpu": _quantity(spec.get("cpu"), "--cpu"), "memory": _quantity(spec.get("memory"), "--memory"),
            "tf_version": spec.get("tf_version") or detect_tf_version(source, launcher)}


def _quantity(value, flag: str) -> str | None:
    """A Kubernetes quantity given as a flag, checked now (None: the configuration's)."""
    if value in (None, ""):
        return None
    from core.pods import PodError, quantity
    try:
        quantity(value, flag)
    except PodError as exc:
        raise JobError(str(exc)) from None
    return str(value)


def _free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def base_env(spec: StoredTrain, workdir: Path, env: RunnerEnv) -> dict[str, str]:
    """The job's environment (runners/isolation.py job_env, the one builder) with what
    training adds: the epochs asked for, no GPU unless asked."""
    extra: dict[str, str] = {}
    extra.update(hook_env(workdir))
    if spec.epochs:
        extra["TFDESK_EPOCHS"] = str(spec.epochs)
    if not spec.gpus_per_worker:
        extra["CUDA_VISIBLE_DEVICES"] = ""
    return job_env(workdir, env.runner_python, extra)


def local_plan(spec: StoredTrain, workdir: Path, env: RunnerEnv) -> LocalPlan:
    py = str(env.runner_python)
    script = [py, spec.script, *spec.args]
    n = spec.workers
    base = base_env(spec, workdir, env)
    if spec.launcher == "horovod":
        horovodrun = str(env.bin_dir / "horovodrun")
        # Tracking acts in the workers alone (HOROVOD_RANK), not in horovodrun's processes.
        base = {**base, "TFDESK_TRACK_WORKER_VAR": "HOROVOD_RANK"}
        return LocalPlan([Proc([horovodrun, "--gloo", "-np", str(n), "-H", f"localhost:{n}",
                                "--network-interface", "lo", *script], base, "horovodrun")])
    if spec.launcher == "tf-distribute" and n > 1:
        import json
        hosts = [f"localhost:{p}" for p in _free_ports(n)]
        return LocalPlan([Proc(script, {**base, "TF_CONFIG": json.dumps(
            {"cluster": {"worker": hosts}, "task": {"type": "worker", "index": i}})}, f"worker-{i}")
            for i in range(n)])
    return LocalPlan([Proc(script, base, "python")])


def describe(spec: StoredTrain) -> str:
    bits = [spec.script_name, f"{spec.workers} worker(s)", spec.launcher]
    if spec.converted_to:
        bits.append(f"converted to {spec.converted_to}")
    return ", ".join(b for b in bits if b)


def k8s_manifests(job_id: str, spec: StoredTrain, workdir: Path, settings):
    from runners.inputs import on_shared_volume
    from runners.kubernetes.manifests import training_plan
    on_shared_volume(spec.inputs, settings)
    return training_plan(job_id, spec, (workdir / spec.script).read_text(encoding="utf-8"), settings)


def _needs(spec: dict):
    from runners.needs import train_needs
    return train_needs(spec)


def collect(workdir: Path) -> list[dict[str, Any]]:
    """What the job wrote in its folder (the only place its sandbox may write), read without
    following links."""
    from runners.jobfiles import collect_artifacts
    return collect_artifacts(workdir)


TRAIN = register_kind(JobKind(name="train", prepare=prepare, local_plan=local_plan,
                              k8s_manifests=k8s_manifests, describe=describe, needs=_needs,
                              collect_artifacts=collect, metric_reader=StepReader,
                              settle=settle))
