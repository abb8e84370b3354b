"""Does the converted model give the same answers? Per-output errors against tolerances.

A value passes when |converted - original| <= atol + rtol * |original| (numpy.allclose's
rule); integer and bool outputs must match exactly.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from converters.model.errors import BadOption

# Looser for reduced precision: FP16 keeps ~3 significant digits, INT8 ~2.
DEFAULT_TOLERANCES = {"fp32": (1e-4, 1e-3), "fp16": (1e-2, 1e-2), "int8": (1e-1, 1e-1)}


@dataclass(frozen=True)
class Tolerance:
    atol: float
    rtol: float

    def to_dict(self) -> dict:
        return asdict(self)


def tolerance(precision: str, text: str | None = None) -> Tolerance:
    """Default for the precision, overridden by ``--tolerance``: ``1e-3`` (atol) or
    ``atol=1e-3,rtol=1e-2``."""
    if precision not in DEFAULT_TOLERANCES:
        raise BadOption(f"unknown precision {precision!r}; choose one of "
                        f"{', '.join(DEFAULT_TOLERANCES)}")
    atol, rtol = DEFAULT_TOLERANCES[precision]
    if text:
        try:
            for part in text.split(","):
                key, sep, value = part.strip().rpartition("=")
                key = key.strip() if sep else "atol"
                if key not in ("atol", "rtol"):
                    raise ValueError(f"unknown key {key!r}")
                v = float(value)
                if not np.isfinite(v) or v < 0:
                    raise ValueError(f"{key} must be a finite number >= 0")
                atol, rtol = (v, rtol) if key == "atol" else (atol, v)
        except ValueError as exc:
            raise BadOption(f"--tolerance {text!r}: {exc}; write e.g. 1e-3 or "
                            "atol=1e-3,rtol=1e-2") from None
    return Tolerance(atol, rtol)


def compare(reference: dict[str, np.ndarray], converted: dict[str, np.ndarray],
            tol: Tolerance) -> dict:
    outputs, ok = {}, True
    missing = sorted(set(reference) - set(converted))
    for name in sorted(reference):
        if name in missing:
            continue
        ref, got = np.asarray(reference[name]), np.asarray(converted[name])
        row: dict = {"shape": list(ref.shape), "dtype": str(ref.dtype)}
        if ref.shape != got.shape:
            row.update(passed=False, reason=f"shape {list(got.shape)} != {list(ref.shape)}")
        elif ref.dtype.kind in "biuO" or got.dtype.kind in "bO":
            mismatched = int(np.sum(ref != got))
            row.update(passed=mismatched == 0, mismatched=mismatched, exact=True)
        else:
            r, g = ref.astype(np.float64), got.astype(np.float64)
            diff = np.abs(g - r)
            rel = diff / np.maximum(np.abs(r), np.finfo(np.float32).tiny)
            bad = ~(diff <= tol.atol + tol.rtol * np.abs(r))
            row.update(max_abs_error=float(diff.max(initial=0.0)),
                       max_rel_error=float(rel.max(initial=0.0)),
                       mean_abs_error=float(diff.mean()) if diff.size else 0.0,
                       mismatched=int(bad.sum()), total=int(bad.size), passed=not bad.any())
        ok &= row["passed"]
        outputs[name] = row
    return {"passed": ok and not missing, "tolerance": tol.to_dict(), "outputs": outputs,
            "missing_outputs": missing}
