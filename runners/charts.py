"""PNG charts of a job's metrics (matplotlib, Agg: no display needed)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def metrics_chart(metrics: list[dict[str, Any]], path: Path | str, title: str = "") -> Path | None:
    """Loss curves (loss, val_loss, ...) on the left, other metrics on the right; one point per
    epoch. None when there is nothing to draw."""
    path = Path(path)
    names = sorted({k for row in metrics for k in row if k not in ("epoch", "epochs")})
    if not metrics or not names:
        return None
    losses = [n for n in names if "loss" in n]
    others = [n for n in names if "loss" not in n]
    panels = [p for p in (losses, others) if p]
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 3.6), squeeze=False)
    for ax, group in zip(axes[0], panels):
        for name in group:
            pts = [(row["epoch"], row[name]) for row in metrics if name in row]
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", markersize=3, label=name)
        ax.set_xlabel("epoch")
        ax.set_ylabel("loss" if group is losses else "value")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        ax.xaxis.get_major_locator().set_params(integer=True)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
