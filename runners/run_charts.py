"""PNG charts of runs: several runs' curves overlaid, one panel per metric. Figures are made
without pyplot (its global state is not thread-safe, and the web view draws in threads).

Drawn on the server for every face: the terminal names the file, Slack attaches it, the web
view serves the bytes.
"""
from __future__ import annotations

import io
from pathlib import Path

from matplotlib.figure import Figure

MAX_PANELS = 4


def pick_metrics(names: set[str], wanted: list[str] | None = None) -> list[str]:
    """The metrics to draw: those asked for, else losses first, then the rest, at most
    :data:`MAX_PANELS`."""
    if wanted:
        return [n for n in wanted if n in names][:MAX_PANELS]
    return sorted(names, key=lambda n: ("loss" not in n, n.startswith("val_"), n))[:MAX_PANELS]


def overlay_png(series: dict[str, dict[str, list[tuple[int, float]]]], axis: str = "epoch",
                metrics: list[str] | None = None, title: str = "") -> bytes | None:
    """``series``: run label -> {metric: [(x, y), ...]}. One panel per metric, one line per
    run. None when there is nothing to draw."""
    names = {m for curves in series.values() for m, pts in curves.items() if pts}
    chosen = pick_metrics(names, metrics)
    if not chosen:
        return None
    fig = Figure(figsize=(4.6 * len(chosen), 3.4))
    axes = fig.subplots(1, len(chosen), squeeze=False)
    for ax, metric in zip(axes[0], chosen):
        for label, curves in series.items():
            pts = curves.get(metric) or []
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o" if len(pts) < 40
                        else None, markersize=3, linewidth=1.4, label=label)
        ax.set_title(metric, fontsize=9)
        ax.set_xlabel(axis)
        ax.grid(alpha=0.3)
        ax.xaxis.get_major_locator().set_params(integer=True)
        ax.legend(fontsize=7)
    if title:
        fig.suptitle(title, fontsize=10)
    return figure_png(fig)


def figure_png(fig: Figure) -> bytes:
    """A figure laid out and drawn as PNG bytes: the one way tfdesk's charts are encoded."""
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    return buf.getvalue()


def write_png(data: bytes, path: Path | str) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path





def benchmark_png(bench: dict, title: str = "") -> bytes | None:
    """Latency (p50, ms) per batch size of each benchmarked form of a model (original,
    converted, ...), as grouped bars. None without benchmark rows."""
    series = {k: v for k, v in (bench or {}).items() if isinstance(v, list) and v
              and all(isinstance(r, dict) and "batch" in r and "p50_ms" in r for r in v)}
    if not series:
        return None
    batches = sorted({r["batch"] for rows in series.values() for r in rows})
    fig = Figure(figsize=(max(4.0, 1.2 * len(batches) * len(series)), 3.2))
    ax = fig.subplots()
    width = 0.8 / len(series)
    for i, (name, rows) in enumerate(series.items()):
        by = {r["batch"]: r["p50_ms"] for r in rows}
        xs = [j + i * width for j, b in enumerate(batches) if b in by]
        ax.bar(xs, [by[b] for b in batches if b in by], width, label=name)
    ax.set_xticks([j + width * (len(series) - 1) / 2 for j in range(len(batches))])
    ax.set_xticklabels([f"batch {b}" for b in batches])
    ax.set_ylabel("p50 latency (ms)")
    ax.grid(alpha=0.3, axis="y")
    ax.legend(fontsize=8)
    if title:
        ax.set_title(title, fontsize=9)
    return figure_png(fig)
__all__ = ["benchmark_png", "overlay_png", "pick_metrics", "write_png"]
