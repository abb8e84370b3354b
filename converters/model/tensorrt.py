"""TensorRT engines behind one interface, and the answer when this machine cannot build them.

``select_builder`` returns a :class:`TensorRTBuilder` when a GPU and TensorRT (Python
bindings or ``trtexec``) are present; otherwise it raises :class:`NeedsGPU` carrying the
Kubernetes manifests (a ConfigMap with ``trt_build.py`` and a ``batch/v1`` Job on NVIDIA's
TensorRT image) that build the engine on a GPU node. Nothing here ever fakes an engine.

``import tensorrt`` below is NVIDIA's package (absolute import), not this module.
"""
from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol

from converters.model import trt_build
from converters.model.errors import BadOption, NeedsGPU
from core import pods

DEFAULT_IMAGE = "nvcr.io/nvidia/tensorrt:24.08-py3"
STAMP_KEYS = ("gpu_name", "compute_capability", "driver_version", "cuda_version",
              "tensorrt_version")


@dataclass(frozen=True)
class BuildOptions:
    precision: str = "fp32"
    shapes: dict[str, dict[str, list[int]]] = field(default_factory=dict)
    workspace_mb: int = 4096


class TensorRTBuilder(Protocol):
    name: str

    def build(self, onnx_path: Path, engine_path: Path, options: BuildOptions) -> dict: ...


class PythonTensorRTBuilder:
    """TensorRT's Python API, in this process (the runner)."""
    name = "tensorrt-python"

    def build(self, onnx_path: Path, engine_path: Path, options: BuildOptions) -> dict:
        return trt_build.build(str(onnx_path), str(engine_path), options.precision,
                               options.shapes, options.workspace_mb)


class TrtexecBuilder:
    """NVIDIA's ``trtexec`` command line tool."""
    name = "trtexec"

    def __init__(self, exe: str):
        self.exe = exe

    def command(self, onnx_path: Path, engine_path: Path, options: BuildOptions) -> list[str]:
        cmd = [self.exe, f"--onnx={onnx_path}", f"--saveEngine={engine_path}",
               f"--memPoolSize=workspace:{options.workspace_mb}M"]
        if options.precision in ("fp16", "int8"):
            cmd.append(f"--{options.precision}")
        for flag, key in (("--minShapes", "min"), ("--optShapes", "opt"), ("--maxShapes", "max")):
            if options.shapes:
                cmd.append(flag + "=" + ",".join(
                    f"{name}:{'x'.join(map(str, s[key]))}" for name, s in options.shapes.items()))
        return cmd

    def build(self, onnx_path: Path, engine_path: Path, options: BuildOptions) -> dict:
        proc = subprocess.run(self.command(onnx_path, engine_path, options),
                              capture_output=True, text=True)
        if proc.returncode != 0 or not engine_path.is_file():
            raise RuntimeError("trtexec failed:\n" + proc.stdout[-4000:] + proc.stderr[-4000:])
        version = ""
        for line in proc.stdout.splitlines():
            if "TensorRT version:" in line:
                version = line.split("TensorRT version:")[1].strip()
        return stamp_engine(onnx_path, engine_path, options, version, self.name,
                            trt_build.gpu_facts())


def stamp_engine(onnx_path: Path, engine_path: Path, options: BuildOptions,
                 tensorrt_version: str, builder: str, gpu: dict[str, str]) -> dict:
    import datetime
    stamp = {"format": "tensorrt-engine", "precision": options.precision,
             "tensorrt_version": tensorrt_version, "builder": builder,
             "onnx_sha256": trt_build.sha256(onnx_path),
             "engine_sha256": trt_build.sha256(engine_path), "shapes": options.shapes,
             "built_at": datetime.datetime.now(datetime.timezone.utc).isoformat(), **gpu}
    Path(str(engine_path) + ".json").write_text(json.dumps(stamp, indent=2))
    return stamp


def incompatibilities(stamp: dict[str, Any], here: dict[str, str]) -> list[str]:
    """Why an engine built under ``stamp`` will not run ``here`` (empty list: it will).
    TensorRT engines are tied to the exact TensorRT version and the GPU model; CUDA must be
    at least the major version the engine was built with."""
    missing = [k for k in STAMP_KEYS if not stamp.get(k)]
    if missing:
        return [f"engine stamp lacks {', '.join(missing)}: rebuild it with tfdesk"]
    reasons = []
    if stamp["tensorrt_version"] != here.get("tensorrt_version"):
        reasons.append(f"built with TensorRT {stamp['tensorrt_version']}, this runner has "
                       f"{here.get('tensorrt_version') or 'none'}")
    if stamp["gpu_name"] != here.get("gpu_name") or \
            stamp["compute_capability"] != here.get("compute_capability"):
        reasons.append(f"built for {stamp['gpu_name']} (sm {stamp['compute_capability']}), "
                       f"this runner has {here.get('gpu_name') or 'no GPU'}")
    try:
        if int(here.get("cuda_version", "0").split(".")[0]) < \
                int(stamp["cuda_version"].split(".")[0]):
            reasons.append(f"needs CUDA {stamp['cuda_version']}, this runner has "
                           f"{here.get('cuda_version')}")
    except ValueError:
        reasons.append(f"cannot compare CUDA versions {stamp['cuda_version']!r} and "
                       f"{here.get('cuda_version')!r}")
    return reasons


def check_precision(target: str, precision: str, calibration: str | None) -> None:
    """Which precision goes with which target, and calibration only with INT8."""
    allowed = {"onnx": ("fp32", "fp16", "int8"), "tensorrt": ("fp32", "fp16", "int8"),
               "tf-trt": ("fp32", "fp16", "int8")}
    if target not in allowed:
        raise BadOption(f"unknown target {target!r}; choose onnx, tensorrt or tf-trt")
    if precision not in allowed[target]:
        raise BadOption(f"--precision {precision} is not available for {target}; choose "
                        f"{', '.join(allowed[target])}")
    if calibration and precision != "int8":
        raise BadOption("--calibration is only used with --precision int8 (it picks the INT8 "
                        "quantisation ranges); drop it or add --precision int8")


def parse_shape_args(values: list[str] | None) -> dict[str, dict[str, list[int]]]:
    """``--shape name=min:opt:max`` (each a shape like ``1x128``) -> a profile per input."""
    out: dict[str, dict[str, list[int]]] = {}
    for value in values or []:
        name, sep, ranges = value.partition("=")
        parts = ranges.split(":")
        if not sep or not name or len(parts) != 3:
            raise BadOption(f"--shape {value!r}: write NAME=MIN:OPT:MAX with each a shape like "
                            f"1x128, e.g. tokens=1x16:8x128:32x512")
        try:
            dims = [[int(d) for d in p.lower().split("x")] for p in parts]
        except ValueError:
            raise BadOption(f"--shape {value!r}: dimensions must be whole numbers "
                            f"(e.g. tokens=1x16:8x128:32x512)") from None
        if len({len(d) for d in dims}) != 1 or any(x < 1 for d in dims for x in d):
            raise BadOption(f"--shape {value!r}: min, opt and max need the same number of "
                            f"dimensions, each at least 1")
        if any(not lo <= mid <= hi for lo, mid, hi in zip(*dims)):
            raise BadOption(f"--shape {value!r}: each dimension needs min <= opt <= max")
        if name in out:
            raise BadOption(f"--shape given twice for input {name!r}")
        out[name] = {"min": dims[0], "opt": dims[1], "max": dims[2]}
    return out


def profile_shapes(inputs: list[dict], batches: list[int], dim_default: int | None = None,
                   user: dict[str, dict[str, list[int]]] | None = None,
                   samples: dict[str, list[int]] | None = None) -> dict:
    """TensorRT optimisation profile for each input, from the model's own shapes.

    The batch dimension spans the batch sizes asked for; fixed dimensions are the model's; a
    dynamic non-batch dimension takes the user's ``--shape`` range, else the size in the
    user's samples (``samples``: input -> shape), and is otherwise refused: an engine pinned to
    a guessed size fails or pads at the first real input. ``dim_default`` is not used for the
    engine (it only sizes generated validation data) and stays for callers' compatibility."""
    user = dict(user or {})
    names = {spec["name"] for spec in inputs}
    unknown = sorted(set(user) - names)
    if unknown:
        raise BadOption(f"--shape names {', '.join(map(repr, unknown))}, which the model does not "
                        f"have; its inputs are {', '.join(sorted(names))}")
    lo, hi = min(batches), max(batches)
    opt = sorted(batches)[len(batches) // 2]
    shapes, missing = {}, []
    for spec in inputs:
        declared = list(spec["shape"] or [])
        name = spec["name"]
        if name in user:
            given = user[name]
            if declared and len(given["min"]) != len(declared):
                raise BadOption(f"--shape {name}: the model's input has {len(declared)} "
                                f"dimensions {_show(declared)}, not {len(given['min'])}")
            for i, d in enumerate(declared):
                if d is not None and not given["min"][i] == given["max"][i] == d:
                    raise BadOption(f"--shape {name}: dimension {i} is fixed at {d} in the "
                                    f"model {_show(declared)}")
            shapes[name] = given
            continue
        row: dict[str, list[int]] = {"min": [], "opt": [], "max": []}
        for i, d in enumerate(declared):
            if i == 0 and d is None:
                vals = (lo, opt, hi)
            elif d is not None:
                vals = (d, d, d)
            elif samples and name in samples and len(samples[name]) == len(declared):
                vals = (samples[name][i],) * 3
            else:
                missing.append(f"{name} {_show(declared)} dimension {i}")
                vals = (0, 0, 0)
            for key, v in zip(("min", "opt", "max"), vals):
                row[key].append(v)
        shapes[name] = row
    if missing:
        example = next(s for s in inputs if any(m.startswith(s["name"] + " ") for m in missing))
        dims = [("1", "8", "32") if (i == 0 and d is None) else (str(d),) * 3 if d is not None
                else ("1", "128", "512") for i, d in enumerate(example["shape"])]
        hint = ":".join("x".join(col) for col in zip(*dims))
        raise BadOption("the TensorRT engine needs a size range for every dynamic dimension, "
                        "and these are dynamic in the model: " + "; ".join(missing) +
                        f". Give each one with --shape, e.g. --shape {example['name']}={hint} "
                        "(min:opt:max), or pass --input samples of the real sizes")
    return shapes


def _show(shape: list) -> str:
    return "[" + ", ".join("None" if d is None else str(d) for d in shape) + "]"


def gpu_present(run: Callable = subprocess.run) -> str | None:
    """Name of GPU 0, or None: no nvidia-smi, no driver, or no GPU."""
    if not shutil.which("nvidia-smi"):
        return None
    try:
        out = run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                  capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None
    names = [l.strip() for l in out.stdout.splitlines() if l.strip()] if out.returncode == 0 else []
    return names[0] if names else None


def select_builder(job: dict[str, Any], k8s: dict[str, Any] | None = None,
                   gpu: Callable[[], str | None] = gpu_present,
                   has_module: Callable[[str], bool] = lambda m: importlib.util.find_spec(m) is not None,
                   which: Callable[[str], str | None] = shutil.which) -> TensorRTBuilder:
    """A builder for this machine, or NeedsGPU with manifests for a GPU node.

    ``job`` describes the build (id, onnx/engine paths relative to the artifact volume,
    precision, shapes) so the manifests can say exactly what to do."""
    gpu_name = gpu()
    trt_python = has_module("tensorrt")
    trtexec = which("trtexec")
    if gpu_name and trt_python:
        return PythonTensorRTBuilder()
    if gpu_name and trtexec and job.get("precision") != "int8":
        return TrtexecBuilder(trtexec)
    why = ("this runner has no GPU" if not gpu_name else
           f"this runner has a GPU ({gpu_name}) but no TensorRT (Python bindings or trtexec)")
    k8s = k8s or {}
    image = k8s.get("tensorrt_image", DEFAULT_IMAGE)
    if k8s.get("environment"):
        where = (f"the attached Kubernetes manifests build the engine on a GPU node in the GPU "
                 f"environment {k8s['environment']} (image {image}, with TensorRT)")
    else:
        where = (f"the attached Kubernetes manifests build the engine on a GPU node with "
                 f"NVIDIA's TensorRT image {image}. To name your own GPU image once: tfdesk "
                 f"environments add trt-gpu --image IMAGE --tag tensorrt")
    raise NeedsGPU(f"TensorRT engines are built on the GPU they will run on, and {why}. "
                   f"The ONNX model is ready; {where}.",
                   manifests=manifests(job, k8s), reason=why)


def manifests(job: dict[str, Any], k8s: dict[str, Any]) -> list[dict]:
    """ConfigMap (the build script) + batch/v1 Job (TensorRT image, one GPU).

    The ONNX model and the engine live on the artifact volume (a PVC, ``artifacts_pvc``)
    at ``job['rel_dir']``; labels tie both objects to the tfdesk job id."""
    jid = str(job["id"])
    name = f"tfdesk-trt-{jid}".lower()[:63].rstrip("-")
    ns = k8s.get("namespace", "default")
    labels = {"app.kubernetes.io/managed-by": "tfdesk", "tfdesk.io/job-id": jid,
              "tfdesk.io/kind": "convert-model"}
    base = f"/artifacts/{job['rel_dir']}".rstrip("/")
    precision = job.get("precision", "fp32")
    cmd = ["python3", "/opt/tfdesk/trt_build.py", "--onnx", f"{base}/{job['onnx']}",
           "--engine", f"{base}/{job['engine']}", "--precision", precision,
           "--shapes", json.dumps(job.get("shapes", {}), sort_keys=True)]
    pod: dict[str, Any] = {
        "restartPolicy": "Never",
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        "containers": [{
            "name": "build-engine", "image": k8s.get("tensorrt_image", DEFAULT_IMAGE),
            "command": cmd,
            "resources": {"limits": {"nvidia.com/gpu": 1, "memory": k8s.get("memory", "16Gi")},
                          "requests": {"cpu": "2", "memory": "8Gi"}},
            "volumeMounts": [{"name": "artifacts", "mountPath": "/artifacts"},
                             {"name": "script", "mountPath": "/opt/tfdesk", "readOnly": True}],
        }],
        "volumes": [
            {"name": "artifacts",
             "persistentVolumeClaim": {"claimName": k8s.get("artifacts_pvc", "tfdesk-artifacts")}},
            {"name": "script", "configMap": {"name": name}}],
    }
    if k8s.get("gpu_node_selector"):
        pod["nodeSelector"] = dict(k8s["gpu_node_selector"])
    pods.harden(pod, k8s)  # no API token, restricted security context, requests and limits
    config_map = {"apiVersion": "v1", "kind": "ConfigMap",
                  "metadata": {"name": name, "namespace": ns, "labels": labels},
                  "data": {"trt_build.py": Path(trt_build.__file__).read_text(encoding="utf-8")}}
    job_obj = {"apiVersion": "batch/v1", "kind": "Job",
               "metadata": {"name": name, "namespace": ns, "labels": labels},
               "spec": {"backoffLimit": 0, "ttlSecondsAfterFinished": 7 * 24 * 3600,
                        "activeDeadlineSeconds": int(k8s.get("deadline_s", 3600)),
                        "template": {"metadata": {"labels": labels}, "spec": pod}}}
    return [config_map, job_obj]
