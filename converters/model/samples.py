"""Inputs for validation, calibration and benchmarks: the user's samples or generated ones.

Generated inputs follow the signature: dtype, static dims as declared, the batch dimension
as asked, other dynamic dimensions set to ``dim_default`` (recorded in the report).
Numpy only, so both the bot and the runner can use it.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from converters.model.errors import BadInput

FLOAT = {"float16", "float32", "float64", "bfloat16"}
INT = {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"}
WORDS = np.array(["the", "cat", "sat", "a", "dog", "ran", "far", "bird", "flew", "away"])


def concrete_shape(shape: list[int | None] | None, batch: int, dim_default: int) -> list[int]:
    if shape is None:
        raise BadInput("an input has unknown rank; pass samples with --input FILE (NPZ)")
    if not shape:
        return []
    return [batch] + [dim_default if d is None else d for d in shape[1:]]


def generate(inputs: list[dict[str, Any]], batch: int, seed: int = 0,
             dim_default: int = 16, int_high: int = 10) -> dict[str, np.ndarray]:
    """Random inputs matching the signature. Integer inputs stay in [0, int_high) because
    they are usually ids into an embedding whose size the signature does not tell."""
    rng = np.random.default_rng(seed)
    out = {}
    for spec in inputs:
        shape = concrete_shape(spec["shape"], batch, dim_default)
        dt = spec["dtype"]
        if dt in FLOAT:
            arr = rng.standard_normal(shape).astype("float32" if dt == "bfloat16" else dt)
        elif dt in INT:
            arr = rng.integers(0, int_high, size=shape).astype(dt)
        elif dt == "bool":
            arr = rng.integers(0, 2, size=shape).astype(bool)
        elif dt == "string":
            arr = np.array([" ".join(rng.choice(WORDS, 3)) for _ in range(int(np.prod(shape)))],
                           dtype=object).reshape(shape)
        else:
            raise BadInput(f"cannot generate inputs of dtype {dt} for {spec['name']!r}; "
                           "pass samples with --input FILE (NPZ)")
        out[spec["name"]] = arr
    return out


def load(path: Path, inputs: list[dict[str, Any]]) -> dict[str, np.ndarray]:
    """User samples: .npz keyed by input name (or one array for a one-input model), or .npy."""
    path = Path(path)
    try:
        if path.suffix == ".npy":
            arrays = {"": np.load(path, allow_pickle=False)}
        else:
            with np.load(path, allow_pickle=False) as z:
                arrays = {k: z[k] for k in z.files}
    except (OSError, ValueError) as exc:
        raise BadInput(f"{path.name}: not a readable .npz/.npy file of arrays ({exc})") from None
    return conform(arrays, inputs, path.name)


def conform(arrays: dict[str, np.ndarray], inputs: list[dict[str, Any]],
            what: str) -> dict[str, np.ndarray]:
    """Check arrays against the signature (names, rank, static dims, dtype kind) and cast them
    to the declared dtypes. ``what`` names the source in errors."""
    names = [s["name"] for s in inputs]
    if len(arrays) == 1 and len(names) == 1 and names[0] not in arrays:
        arrays = {names[0]: next(iter(arrays.values()))}
    missing = [n for n in names if n not in arrays]
    if missing:
        raise BadInput(f"{what} lacks inputs {missing}; it has {sorted(arrays)}. "
                       f"The model takes {names}")
    out = {}
    for spec in inputs:
        arr, shape = arrays[spec["name"]], spec["shape"]
        if shape is not None and (arr.ndim != len(shape) or any(
                d is not None and d != a for d, a in zip(shape, arr.shape))):
            raise BadInput(f"{what}: input {spec['name']!r} has shape {list(arr.shape)}, "
                           f"the model expects {['?' if d is None else d for d in shape]}")
        want = spec["dtype"]
        if want in FLOAT | INT and arr.dtype.kind not in "fiu":
            raise BadInput(f"{what}: input {spec['name']!r} is {arr.dtype}, the model "
                           f"expects {want}")
        out[spec["name"]] = arr.astype(want) if want in FLOAT | INT and want != "bfloat16" else arr
    return out


def batches(arrays: dict[str, np.ndarray], size: int) -> list[dict[str, np.ndarray]]:
    n = min(len(a) for a in arrays.values())
    return [{k: v[i:i + size] for k, v in arrays.items()} for i in range(0, n, size)]
