"""From a user's request to a runnable spec, and how to run it. Bot side, no TensorFlow.

``prepare`` is what a job kind's ``prepare`` does (and what the foreground fallback does):
check the options, take the model in safely, check it against the runner's versions, copy
user files next to it, and write ``spec.json``. ``worker_command`` is what then runs, in the
runner environment, in the job's working directory.
"""
from __future__ import annotations

import functools
import json
import secrets
import shutil
import subprocess
from pathlib import Path
from typing import Any

from converters.model import benchmark, intake, tensorrt, validate
from converters.model.errors import BadInput, BadOption, RunnerMissing
from converters.model.report import load_report
from core.vocabulary import MODEL_TARGETS as TARGETS

REPO_ROOT = Path(__file__).resolve().parents[2]
SPEC_FILE = "spec.json"
PRECISIONS = ("fp32", "fp16", "int8")


def new_id() -> str:
    return "m-" + secrets.token_hex(4)


@functools.lru_cache(maxsize=8)
def runner_versions(python: str) -> dict[str, str]:
    """TensorFlow and Keras versions in the runner env, from package metadata (no import)."""
    if not Path(python).exists():
        raise RunnerMissing(f"the runner environment is not built ({python} is missing); run "
                            "'make runner-env'")
    code = ("import json, importlib.metadata as m\n"
            "def v(*names):\n"
            "    for n in names:\n"
            "        try: return m.version(n)\n"
            "        except m.PackageNotFoundError: pass\n"
            "print(json.dumps({'tensorflow': v('tensorflow', 'tensorflow-cpu', 'tensorflow-gpu'),"
            " 'keras': v('keras', 'tf-keras')}))")
    out = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        raise RunnerMissing(f"the runner environment at {python} does not start: "
                            f"{out.stderr.strip()[-300:]}")
    return json.loads(out.stdout)


def _copy_user_file(path: str | None, workdir: Path, name: str, what: str) -> str | None:
    """Inputs and calibration data are copied in, so a job never depends on an upload that
    may be cleaned away."""
    if not path:
        return None
    src = Path(path).expanduser()
    if not src.is_file():
        raise BadInput(f"{what} file {path} does not exist")
    if src.suffix not in (".npz", ".npy"):
        raise BadInput(f"{what} file {src.name}: expected .npz (arrays keyed by input name) "
                       "or .npy (one-input models)")
    dest = workdir / "inputs" / (name + src.suffix)
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dest)
    return str(dest.relative_to(workdir))


def _rel(path: Path, workdir: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(workdir.resolve()))
    except ValueError:
        return str(Path(path).resolve())


def prepare(spec: dict[str, Any], workdir: Path, runner_python: str | Path,
            settings: dict[str, Any] | None = None) -> dict[str, Any]:
    """Validate, take in the model, write spec.json; returns the stored spec (plain JSON).

    ``spec``: model, mode (convert|infer), target, precision, calibration, tolerance, batch,
    input, signature, opset. ``settings``: the [models] config section."""
    settings = settings or {}
    mode = spec.get("mode", "convert")
    target = spec.get("target") or "onnx"
    precision = spec.get("precision") or "fp32"
    if mode == "convert":
        tensorrt.check_precision(target, precision, spec.get("calibration"))
    if spec.get("shape") and target != "tensorrt":
        raise BadOption("--shape sets the TensorRT engine's optimisation profiles; use it with "
                        "--to tensorrt")
    tol = validate.tolerance(precision, spec.get("tolerance"))
    batches = benchmark.parse_batches(spec.get("batch"))
    model = Path(str(spec["model"])).expanduser()
    limits = intake.Limits.from_config(settings)
    if not model.exists():
        raise BadInput(f"{spec['model']} does not exist")
    if model.is_file() and intake.archive_kind(model):
        model = intake.extract(model, workdir / "source", limits)
    check_model_size(model, settings)
    source = _source(model, mode, workdir, runner_python, bool(spec.get("allow_code")))
    evaluation = _evaluation(spec, workdir, runner_python, limits) if mode == "evaluate" else {}
    stored = {
        "id": spec.get("id") or new_id(), "mode": mode, "name": Path(str(spec["model"])).name,
        "model": str(spec["model"]),
        "source": source, "target": target, "precision": precision,
        "tolerance": tol.to_dict(), "batches": batches,
        "input": _copy_user_file(spec.get("input"), workdir, "samples", "--input"),
        "calibration": _copy_user_file(spec.get("calibration"), workdir, "calibration",
                                       "--calibration"),
        "signature": spec.get("signature") or "serving_default",
        "allow_code": bool(spec.get("allow_code")),
        "opset": spec.get("opset"),
        "gpus": None if spec.get("gpus") is None else int(spec["gpus"]),  # None: [kubernetes] infer_gpus
        "input_origin": str(Path(spec["input"]).expanduser().resolve()) if spec.get("input") else None,
        "dim_default": int(settings.get("dim_default", 16)),
        # 0: one thread per physical core of the runner, for TensorFlow and ONNX Runtime alike.
        "threads": int(spec.get("threads") or settings.get("threads", 0)),
        "min_agreement": float(settings.get("min_agreement", 0.99)),
        "bench": {"warmup": int(settings.get("warmup", 3)),
                  "iterations": int(settings.get("iterations", 50)),
                  "budget_s": float(settings.get("budget_s", 5.0)),
                  **(spec.get("bench") or {})},
        "kubernetes": {**settings.get("tensorrt", {}), **(spec.get("kubernetes") or {})},
        # TensorRT optimisation profiles the user gave (--shape): input -> {min, opt, max}.
        "trt_shapes": tensorrt.parse_shape_args(spec.get("shape")) if spec.get("shape") else {},
        **evaluation,
    }
    (workdir / SPEC_FILE).write_text(json.dumps(stored, indent=2))
    return stored


DEFAULT_MAX_MODEL_BYTES = 4 << 30


def model_bytes(path: Path) -> int:
    path = Path(path)
    if path.is_file():
        return path.stat().st_size
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())


def check_model_size(model: Path, settings: dict[str, Any]) -> int:
    """Refuse, before any job starts, a model larger than ``[models] max_model_bytes``:
    conversion holds the frozen graph, the ONNX model and its optimised copy in memory at once
    (several times the weights), so the limit protects the runner."""
    limit = int(settings.get("max_model_bytes", DEFAULT_MAX_MODEL_BYTES))
    size = model_bytes(model)
    if size > limit:
        raise BadInput(f"{Path(model).name} is {_human(size)}, larger than this desk's limit of "
                       f"{_human(limit)} for model conversion ([models] max_model_bytes); "
                       "ask an admin to raise it, or convert on a machine with room for it",
                       size=size, limit=limit, limit_name="max_model_bytes")
    return size


def _human(n: int) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.1f} {unit}" if unit != "bytes" else f"{n} bytes"
        n /= 1024
    return f"{n} bytes"


def _source(model: Path, mode: str, workdir: Path, runner_python: str | Path,
            allow_code: bool = False) -> dict[str, Any]:
    """What the worker loads: an ONNX file as is (infer, evaluate), anything else identified
    from its files (no TensorFlow here)."""
    if mode in ("infer", "evaluate") and model.is_file() and model.suffix == ".onnx":
        source = {"kind": "onnx", "path": str(model.resolve()), "producer": ""}
    else:
        versions = runner_versions(str(runner_python))
        source = intake.identify(model, versions.get("tensorflow"), versions.get("keras"),
                                 allow_code).to_dict()
    source["path"] = _rel(Path(source["path"]), workdir)
    return source


def _evaluation(spec: dict[str, Any], workdir: Path, runner_python: str | Path,
                limits: intake.Limits) -> dict[str, Any]:
    """evaluate's part of the spec: the labelled data (copied in), the model to compare, the
    metrics. Everything checkable without loading a model is checked here, before a job."""
    from converters.model import labelled, metrics
    if not spec.get("data"):
        raise BadInput("evaluate needs labelled data: --data FILE (.npz, .csv or .tfrecord)")
    src = Path(str(spec["data"])).expanduser()
    labelled.data_format(src)
    if not src.is_file():
        raise BadInput(f"--data file {spec['data']} does not exist")
    if src.stat().st_size == 0:
        raise BadInput(f"--data file {src.name} is empty")
    # Kept under its own name: errors from the runner name the user's file.
    dest = workdir / "inputs" / src.name
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dest)
    out: dict[str, Any] = {"data": str(dest.relative_to(workdir)), "data_origin": str(src.resolve()),
                           "metrics": metrics.parse(spec.get("metrics")),
                           "label_key": spec.get("label") or None,
                           "output": spec.get("output") or None,
                           "eval_batch": int(spec.get("eval_batch") or 256), "against": None}
    if spec.get("against"):
        other = Path(str(spec["against"])).expanduser()
        if not other.exists():
            raise BadInput(f"--against {spec['against']} does not exist")
        if other.is_file() and intake.archive_kind(other):
            other = intake.extract(other, workdir / "against", limits)
        out["against"] = _source(other, "evaluate", workdir, runner_python,
                                 bool(spec.get("allow_code")))
        out["against_origin"] = str(spec["against"])
    return out


def worker_command(runner_python: str | Path) -> list[str]:
    return [str(runner_python), "-m", "converters.model.worker", SPEC_FILE]


def parse_progress(line: str) -> tuple[str, int | None, int | None] | None:
    line = line.strip()
    if not line.startswith('{"progress"'):
        return None
    try:
        d = json.loads(line)
    except json.JSONDecodeError:
        return None
    return d["progress"], d.get("done"), d.get("total")


def artifacts(workdir: Path) -> list[dict[str, Any]]:
    """What a conversion produced, named for the catalog: ``onnx`` is the validated model
    (optimised, INT8 or FP16), ``engine`` a TensorRT plan; the user's own upload is left out."""
    workdir = Path(workdir)
    conv = load_report(workdir).conversion
    named = {conv.get("converted"): "onnx", "out/model.onnx": "onnx_source",
             "report.json": "report", "chart.png": "chart", "trt-build.yaml": "trt_manifests",
             "predictions.npz": "predictions"}
    out = []
    for p in sorted(workdir.rglob("*")):
        rel = p.relative_to(workdir)
        # Hidden entries are the job's bookkeeping and library caches (HOME is the workdir).
        if not p.is_file() or rel.parts[0] in ("source", "inputs", "against", "saved_model_against") or \
                any(part.startswith(".") for part in rel.parts) or \
                str(rel) in (SPEC_FILE, "worker.log", "job.log"):
            continue
        name = named.get(str(rel)) or ("engine" if rel.suffix == ".plan" else
                                       "saved_model" if rel.parts[0] == "saved_model" else rel.name)
        if rel.parts[0] == "saved_model":
            if name in [a["name"] for a in out]:
                continue
            rel, p = Path("saved_model"), workdir / "saved_model"
        out.append({"name": name, "path": str(rel), "kind": "model" if name in
                    ("onnx", "onnx_source", "engine", "saved_model") or rel.suffix == ".onnx"
                    else "report" if name == "report" else "chart" if name == "chart" else "file",
                    "size": p.stat().st_size if p.is_file() else
                    sum(f.stat().st_size for f in p.rglob("*") if f.is_file())})
    return out
