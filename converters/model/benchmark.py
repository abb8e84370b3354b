"""Latency percentiles and throughput of a model callable at several batch sizes.

Original and converted models are measured in the same process, taking turns call by call,
on the same inputs, so the ratio between them is meaningful on a busy machine.
"""
from __future__ import annotations

import time
from typing import Callable

import numpy as np


def measure(run: Callable[[dict], object], feeds: dict[str, np.ndarray], batch: int,
            warmup: int = 3, iterations: int = 50, budget_s: float = 5.0) -> dict:
    """Run ``warmup`` untimed calls, then up to ``iterations`` timed ones (stopping early
    once ``budget_s`` is spent, but after at least 5)."""
    for _ in range(warmup):
        run(feeds)
    times = []
    start = time.perf_counter()
    while len(times) < iterations:
        t0 = time.perf_counter()
        run(feeds)
        times.append(time.perf_counter() - t0)
        if len(times) >= 5 and time.perf_counter() - start > budget_s:
            break
    return _stats(times, batch)


def measure_interleaved(runs: dict[str, Callable[[dict], object]], feeds: dict[str, np.ndarray],
                        batch: int, warmup: int = 3, iterations: int = 50,
                        budget_s: float = 5.0) -> dict[str, dict]:
    """Like :func:`measure` for several models at once, taking turns call by call: on a shared
    machine a burst of load then slows every model alike instead of whichever ran during it,
    so the ratios between them stay honest. ``budget_s`` is per model."""
    for run in runs.values():
        for _ in range(warmup):
            run(feeds)
    times: dict[str, list[float]] = {k: [] for k in runs}
    start = time.perf_counter()
    while len(times[next(iter(runs))]) < iterations:
        for key, run in runs.items():
            t0 = time.perf_counter()
            run(feeds)
            times[key].append(time.perf_counter() - t0)
        done = len(times[next(iter(runs))])
        if done >= 5 and time.perf_counter() - start > budget_s * len(runs):
            break
    return {k: _stats(v, batch) for k, v in times.items()}


def _stats(times: list[float], batch: int) -> dict:
    ms = np.array(times) * 1e3
    p50, p90, p99 = np.percentile(ms, [50, 90, 99])
    return {"batch": batch, "iterations": len(times), "p50_ms": float(p50),
            "p90_ms": float(p90), "p99_ms": float(p99), "mean_ms": float(ms.mean()),
            "throughput_per_s": float(batch / (ms.mean() / 1e3))}


def speedups(original: list[dict], converted: list[dict]) -> list[dict]:
    by_batch = {r["batch"]: r for r in original}
    return [{"batch": c["batch"],
             "p50_speedup": by_batch[c["batch"]]["p50_ms"] / c["p50_ms"],
             "throughput_speedup": c["throughput_per_s"] / by_batch[c["batch"]]["throughput_per_s"]}
            for c in converted if c["batch"] in by_batch]


def parse_batches(text: str | list[int] | None, default=(1, 8, 32)) -> list[int]:
    from converters.model.errors import BadOption
    if text is None or text == "":
        return list(default)
    if isinstance(text, list):
        values = text
    else:
        try:
            values = [int(v) for v in str(text).split(",") if v.strip()]
        except ValueError:
            raise BadOption(f"--batch {text!r}: write batch sizes as integers, e.g. 1,8,32") from None
    if not values or any(v < 1 or v > 4096 for v in values):
        raise BadOption(f"--batch {text!r}: batch sizes must be between 1 and 4096")
    return sorted(set(values))
