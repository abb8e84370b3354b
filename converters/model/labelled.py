"""Labelled data for ``evaluate``: model inputs plus the expected answer, from NPZ, CSV or
TFRecord (``tf.train.Example``). Returns inputs shaped and typed as the signature declares
and the labels; every way the file can be wrong is a :class:`BadInput` that says where.

NPZ and CSV need only numpy (the bot checks the file type, the runner reads it); TFRecord
needs TensorFlow, so it is read in the runner only.
"""
from __future__ import annotations

import csv
import re
from pathlib import Path
from typing import Any

import numpy as np

from converters.model import samples
from converters.model.errors import BadInput

FORMATS = {".npz": "npz", ".csv": "csv", ".tfrecord": "tfrecord", ".tfrecords": "tfrecord",
           ".tfrec": "tfrecord"}
LABEL_KEYS = ("label", "labels", "y", "target")


def data_format(path: Path) -> str:
    path = Path(path)
    fmt = FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise BadInput(f"--data {path.name}: unknown format; give an .npz (arrays keyed by input "
                       "name plus 'label'), a .csv (a header row, a 'label' column) or a "
                       ".tfrecord of tf.train.Example records")
    return fmt


def _label_key(keys: list[str], wanted: str | None, what: str) -> str:
    if wanted:
        if wanted not in keys:
            raise BadInput(f"{what} has no label {wanted!r}; it has {keys}")
        return wanted
    lower = {k.lower(): k for k in keys}
    for k in LABEL_KEYS:
        if k in lower:
            return lower[k]
    raise BadInput(f"{what} has no labels: name them one of {', '.join(LABEL_KEYS)} or pass "
                   f"--label KEY; it has {keys}")


def load(path: Path, inputs: list[dict[str, Any]], label_key: str | None = None
         ) -> tuple[dict[str, np.ndarray], np.ndarray]:
    path = Path(path)
    fmt = data_format(path)
    if not path.is_file() or path.stat().st_size == 0:
        raise BadInput(f"--data {path.name} is missing or empty")
    reader = {"npz": _npz, "csv": _csv, "tfrecord": _tfrecord}[fmt]
    arrays, labels = reader(path, inputs, label_key)
    feeds = samples.conform(arrays, inputs, path.name)
    rows = {k: len(v) for k, v in feeds.items()}
    if len(labels) == 0:
        raise BadInput(f"{path.name} has no rows")
    if any(n != len(labels) for n in rows.values()):
        raise BadInput(f"{path.name}: {len(labels)} labels but the inputs have {rows} rows; "
                       "every input row needs exactly one label")
    return feeds, labels


def _npz(path, inputs, label_key):
    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    except (OSError, ValueError, EOFError) as exc:
        raise BadInput(f"{path.name}: not a readable .npz file of arrays ({exc})") from None
    key = _label_key(sorted(arrays), label_key, path.name)
    labels = arrays.pop(key)
    if labels.ndim == 0:
        raise BadInput(f"{path.name}: the labels {key!r} are a single value, not one per row")
    return arrays, labels


def _number(text: str, where: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise BadInput(f"{where}: {text!r} is not a number") from None


def _columns_for(name: str, header: list[str]) -> list[int]:
    """A multi-input CSV names its columns ``NAME`` or ``NAME.0``, ``NAME_1``, ``NAME[2]``..."""
    pat = re.compile(re.escape(name) + r"(?:[._](\d+)|\[(\d+)\])?")
    return [i for i, h in enumerate(header) if pat.fullmatch(h)]


def _csv(path, inputs, label_key):
    try:
        with open(path, newline="", encoding="utf-8") as f:
            rows = list(csv.reader(f))
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise BadInput(f"{path.name}: not a readable CSV file ({exc})") from None
    rows = [r for r in rows if any(c.strip() for c in r)]
    if len(rows) < 2:
        raise BadInput(f"{path.name}: needs a header row and at least one data row")
    header = [h.strip() for h in rows[0]]
    key = _label_key(header, label_key, path.name)
    li = header.index(key)
    body = rows[1:]
    for n, r in enumerate(body, start=2):
        if len(r) != len(header):
            raise BadInput(f"{path.name} line {n}: {len(r)} fields, the header has {len(header)}")
    labels = np.array([_number(r[li], f"{path.name} line {n}, column {key!r}")
                       for n, r in enumerate(body, start=2)])
    if np.all(labels == np.round(labels)):
        labels = labels.astype(np.int64)
    features = [i for i in range(len(header)) if i != li]
    if len(inputs) == 1:
        groups = {inputs[0]["name"]: _columns_for(inputs[0]["name"], header) or features}
    else:
        groups = {s["name"]: _columns_for(s["name"], header) for s in inputs}
        missing = [n for n, cols in groups.items() if not cols]
        if missing:
            raise BadInput(f"{path.name} has no columns for inputs {missing}; for a model with "
                           "several inputs name the columns INPUT or INPUT.0, INPUT.1, ... "
                           f"(header: {header})")
    arrays = {}
    for spec in inputs:
        cols = groups[spec["name"]]
        if spec["dtype"] == "string":
            flat = np.array([[r[i] for i in cols] for r in body], dtype=object)
        else:
            flat = np.array([[_number(r[i], f"{path.name} line {n}, column {header[i]!r}")
                              for i in cols] for n, r in enumerate(body, start=2)])
        arrays[spec["name"]] = _reshape(flat, spec, f"{path.name}: input {spec['name']!r} "
                                        f"({len(cols)} columns)")
    return arrays, labels


def _reshape(flat: np.ndarray, spec: dict, what: str) -> np.ndarray:
    """Rows of flat values into the signature's per-row shape (all its dims must be known,
    or the one unknown dim is taken from the row length)."""
    shape = spec["shape"]
    if shape is None or len(shape) <= 1:
        return flat.reshape(len(flat)) if shape is not None and len(shape) == 1 and \
            flat.shape[1] == 1 else flat
    per_row = list(shape[1:])
    unknown = [i for i, d in enumerate(per_row) if d is None]
    width = flat.shape[1]
    if len(unknown) > 1:
        raise BadInput(f"{what}: the model's input has several unknown dims {shape}; "
                       "use an .npz file for it")
    if unknown:
        known = int(np.prod([d for d in per_row if d is not None]))
        if width % known:
            raise BadInput(f"{what}: cannot shape {width} values per row into {shape}")
        per_row[unknown[0]] = width // known
    if int(np.prod(per_row)) != width:
        raise BadInput(f"{what}: {width} values per row, the model expects "
                       f"{int(np.prod(per_row))} (shape {['?' if d is None else d for d in shape]})")
    return flat.reshape([len(flat), *per_row])


def _tfrecord(path, inputs, label_key):
    import tensorflow as tf
    columns: dict[str, list] = {}
    try:
        for n, raw in enumerate(tf.data.TFRecordDataset(str(path)).as_numpy_iterator()):
            ex = tf.train.Example.FromString(raw)
            feats = ex.features.feature
            if n == 0:
                key = _label_key(sorted(feats.keys()), label_key, path.name)
            for name in [key] + [s["name"] for s in inputs]:
                if name not in feats:
                    raise BadInput(f"{path.name} record {n}: no feature {name!r}; it has "
                                   f"{sorted(feats.keys())}")
                f = feats[name]
                kind = f.WhichOneof("kind")
                values = list(getattr(f, kind).value) if kind else []
                columns.setdefault(name, []).append(values)
    except BadInput:
        raise
    except Exception as exc:  # noqa: BLE001 - DataLossError, DecodeError: a broken file
        raise BadInput(f"{path.name}: not a readable TFRecord file of tf.train.Example "
                       f"({type(exc).__name__}: {str(exc)[:200]})") from None
    if not columns:
        raise BadInput(f"{path.name} has no records")
    lab = columns.pop(key)
    if any(len(v) != len(lab[0]) for v in lab):
        raise BadInput(f"{path.name}: the label feature {key!r} has different lengths per record")
    labels = np.array(lab)
    labels = labels.reshape(len(labels)) if labels.ndim == 2 and labels.shape[1] == 1 else labels
    arrays = {}
    for spec in inputs:
        vals = columns[spec["name"]]
        if any(len(v) != len(vals[0]) for v in vals):
            raise BadInput(f"{path.name}: feature {spec['name']!r} has different lengths per "
                           "record")
        flat = np.array(vals, dtype=object if spec["dtype"] == "string" else None)
        if spec["dtype"] == "string":
            flat = np.vectorize(lambda b: b.decode("utf-8", "replace")
                                if isinstance(b, bytes) else b, otypes=[object])(flat)
        arrays[spec["name"]] = _reshape(flat, spec, f"{path.name}: feature {spec['name']!r}")
    return arrays, labels
