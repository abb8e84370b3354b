"""Which of a job's files is its model: the one rule every reader uses (a pipeline step's
``model`` output, the catalog entry a job registers).

The invariant: **what a job offers as its model is a loadable model** — a SavedModel folder,
a ``.keras`` archive or ``.h5`` file that holds a model config (Keras builds a model from it),
or a converted ``.onnx`` / TensorRT plan. TF checkpoints (``.index``/``.data-*``) and
weights-only files (``*.weights.h5``, an ``.h5`` without ``model_config``) are never offered:
nothing can be built from them. Files are read as data (a zip listing, an HDF5 attribute),
never loaded; links are not followed.
"""
from __future__ import annotations

import os
import stat
import zipfile
from pathlib import Path
from typing import Any, Iterable

# What a later step is told when a training saved nothing loadable.
NO_MODEL = ("saved no loadable model (a SavedModel folder, a .keras file or a full-model .h5); "
            "checkpoints and weights-only files are not models: save one with "
            "model.save('model.keras')")
BY_SUFFIX = {".onnx": "onnx", ".plan": "tensorrt", ".engine": "tensorrt"}
# Names the job folder's listing gives any file of that kind (runners/jobfiles.py): they say
# nothing of which model is the job's, so they rank no higher than the rest.
GENERIC = {"model", "saved_model"}


def _is(path: Path, kind: int) -> bool:
    try:
        return stat.S_IFMT(os.lstat(path).st_mode) == kind
    except OSError:
        return False


def _h5_has_model(path: Path) -> bool:
    try:
        import h5py
        with h5py.File(path, "r") as f:
            return f.attrs.get("model_config") is not None
    except (OSError, ValueError, ImportError):
        return False


def _keras_has_model(path: Path) -> bool:
    try:
        with zipfile.ZipFile(path) as zf:
            return "config.json" in zf.namelist()
    except (OSError, zipfile.BadZipFile, ValueError):
        return False


def loadable_format(path: Path | str) -> str | None:
    """The format of the model at ``path`` ("savedmodel", "keras", "onnx", "tensorrt"), or
    None when it is not a loadable model (a checkpoint, weights only, anything else)."""
    path = Path(path)
    name = path.name.lower()
    if _is(path, stat.S_IFDIR):
        return "savedmodel" if _is(path / "saved_model.pb", stat.S_IFREG) else None
    if not _is(path, stat.S_IFREG) or name.endswith(".weights.h5"):
        return None
    if name.endswith(".keras"):
        return "keras" if _keras_has_model(path) else None
    if name.endswith((".h5", ".hdf5")):
        return "keras" if _h5_has_model(path) else None
    return BY_SUFFIX.get(path.suffix.lower())


def pick_model(artifacts: Iterable[dict[str, Any]],
               preferred: tuple[str, ...] = ()) -> dict[str, Any] | None:
    """The artifact (``{"name", "path", ...}``, absolute path) that is the job's model, or None.
    Only loadable ones count; among them, one the job kind named (``preferred``, earliest
    first; a generic listing name does not count), then
    the one nearest the job folder's top (a model saved beside the script beats a full-model
    checkpoint in a sub-folder), then by path."""
    loadable = [a for a in artifacts if a.get("path") and loadable_format(a["path"])]
    if not loadable:
        return None

    def rank(a: dict[str, Any]) -> tuple:
        name = a.get("name")
        first = preferred.index(name) if name in preferred and name not in GENERIC \
            else len(preferred)
        return first, len(Path(a["path"]).parts), str(a["path"])
    return min(loadable, key=rank)


__all__ = ["NO_MODEL", "loadable_format", "pick_model"]
