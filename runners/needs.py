"""What a job needs of its runtime, read statically (nothing of the user's is run or loaded):
from a training script through the script converter's analysis, from a model file through its
metadata. Rules are data; each names its evidence so the choice can be explained."""
from __future__ import annotations

import ast
import json
import re
import zipfile
from pathlib import Path
from typing import Any

from runners.runtimes import KERAS3_TF, Needs

KERAS2 = f"<{KERAS3_TF}"
KERAS3 = f">={KERAS3_TF}"
TF_PIN = re.compile(r"tensorflow(?:-cpu|-gpu)?\s*==\s*(\d+\.\d+(?:\.\d+)?)")
TFTRT_LAST = "2.18"  # TF-TRT is gone from TF >= 2.18


def _tf_pin(source: str, spec: dict) -> str | None:
    if spec.get("tf_version"):
        return str(spec["tf_version"])
    m = TF_PIN.search(source)
    return m.group(1) if m else None


def _pin_spec(v: str) -> str:
    return f"=={v}" if v.count(".") >= 2 else f"=={v}.*"


def script_needs(source: str, launcher: str, spec: dict | None = None) -> Needs:
    """Needs of a training script run with ``launcher`` (horovod, tf-distribute, python)."""
    spec = spec or {}
    needs = Needs()
    pin = _tf_pin(source, spec)
    if pin:
        needs.add(_pin_spec(pin), f"asks for TensorFlow {pin}")
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return needs  # prepare reports the syntax error
    from converters.script.analysis import analyze
    a = analyze(tree)
    evidence = [f"{api}, line {line}" for line, api in a.keras3_evidence[:2]]
    if evidence:
        needs.add(KERAS3, f"uses Keras 3 APIs ({'; '.join(evidence)}), which need TF >= {KERAS3_TF}")
    if "keras_fit" in a.styles:
        needs.fit_line = a.evidence.get("keras_fit")
    if launcher == "horovod":
        needs.add(KERAS2, f"runs under Horovod, which averages gradients only with Keras 2 "
                          f"(TF < {KERAS3_TF})", horovod=True)
    if launcher == "tf-distribute" and "keras_fit" in a.styles and a.keras != "tf_keras":
        line = a.evidence.get("keras_fit")
        needs.add(KERAS2, f"trains with fit() (line {line}) under MultiWorkerMirroredStrategy, "
                          f"which works only with Keras 2 (TF < {KERAS3_TF})", keras3_fit=True)
    return needs


def train_launcher(spec: dict, source: str) -> str:
    """The launcher training.prepare will choose, for the needs (same rules)."""
    from runners.launchers import auto_target, detect_target
    convert = spec.get("convert") or "auto"
    workers = int(spec.get("workers") or 1)
    found = detect_target(source)
    if convert in ("horovod", "tf-distribute"):
        return convert
    if convert == "none":
        return found or "python"
    return found or (auto_target(source) if workers > 1 else "python")


def train_needs(spec: dict) -> Needs:
    if "script_source" in spec:
        source = spec["script_source"]
    else:
        try:
            source = Path(spec.get("script_path") or "").read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return Needs()  # prepare says what is wrong with the path
    return script_needs(source, train_launcher(spec, source), spec)


def _keras_file_version(path: Path) -> str | None:
    try:
        with zipfile.ZipFile(path) as zf:
            with zf.open("metadata.json") as f:
                return str(json.load(f).get("keras_version") or "") or None
    except (OSError, KeyError, ValueError, zipfile.BadZipFile):
        return None


def _savedmodel_version(path: Path) -> str | None:
    try:
        from converters.model.savedmodel_pb import parse_saved_model
        metas = parse_saved_model(path)
    except Exception:  # noqa: BLE001 - intake reports an unreadable model properly
        return None
    return next((m.tensorflow_version for m in metas if m.tensorflow_version), None)


def model_needs(spec: dict[str, Any]) -> Needs:
    """Needs of convert-model / infer / evaluate from the model file and the target."""
    needs = Needs()
    model = Path(spec.get("model") or "")
    if model.suffix == ".keras" and model.is_file():
        v = _keras_file_version(model)
        if v and v.split(".")[0] == "3":
            needs.add(KERAS3, f"loads a model saved with Keras {v}, which needs TF >= {KERAS3_TF}")
    elif model.is_dir() and (model / "saved_model.pb").is_file():
        v = _savedmodel_version(model)
        parts = (v or "").split(".")
        if len(parts) >= 2 and parts[0].isdigit() and parts[1].isdigit():
            minor = f"{parts[0]}.{parts[1]}"
            # A preference: older TensorFlow often loads it, and intake says when it cannot.
            needs.add(f">={minor}", f"loads a SavedModel written by TensorFlow {v}", soft=True)
    target = spec.get("target")
    if target == "tensorrt":
        needs.add("", "builds a TensorRT engine, which needs an NVIDIA GPU and TensorRT",
                  tensorrt=True)
    elif target == "tf-trt":
        needs.add(f"<{TFTRT_LAST}", f"converts with TF-TRT, which TensorFlow removed in "
                                    f"{TFTRT_LAST}", tensorrt=True)
    return needs
