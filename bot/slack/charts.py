"""PNG charts for a job's final message (matplotlib, no display needed)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def _series(metrics: list[dict[str, Any]], word: str) -> dict[str, tuple[list, list]]:
    out: dict[str, tuple[list, list]] = {}
    for row in metrics:
        step = row.get("epoch", row.get("step"))
        for name, value in row.items():
            if name in ("epoch", "step") or word not in name or not isinstance(value, (int, float)):
                continue
            xs, ys = out.setdefault(name, ([], []))
            xs.append(step)
            ys.append(value)
    return out


def training_chart(metrics: list[dict[str, Any]], title: str, path: Path) -> Path | None:
    """Loss curves (and accuracy beside them when there is any) by epoch."""
    losses = _series(metrics, "loss")
    if not losses:
        return None
    accs = _series(metrics, "acc")
    fig, axes = plt.subplots(1, 2 if accs else 1, figsize=(10 if accs else 6, 4), squeeze=False)
    for ax, series, label in zip(axes[0], (losses, accs), ("loss", "accuracy")):
        for name, (xs, ys) in sorted(series.items()):
            ax.plot(xs, ys, marker="o", label=name)
        ax.set_xlabel("epoch")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
        ax.legend()
    fig.suptitle(title)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png", dpi=100)
    plt.close(fig)
    return path


def latency_chart(metrics: list[dict[str, Any]], title: str, path: Path) -> Path | None:
    """The last value of every latency metric, as bars (inference and benchmark jobs)."""
    last: dict[str, float] = {}
    for row in metrics:
        for name, value in row.items():
            if "latency" in name and isinstance(value, (int, float)):
                last[name] = value
    if not last:
        return None
    fig, ax = plt.subplots(figsize=(6, 4))
    names = sorted(last)
    ax.barh(names, [last[n] for n in names])
    ax.set_xlabel("ms")
    ax.set_title(title)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png", dpi=100)
    plt.close(fig)
    return path


def job_chart(metrics: list[dict[str, Any]], title: str, path: Path) -> Path | None:
    return training_chart(metrics, title, path) or latency_chart(metrics, title, path)
