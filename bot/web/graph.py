"""A pipeline as a picture: steps as boxes in layers (a step sits one layer below the last step
it waits for), arrows for "waits for", dashed arrows for outputs passed on that add no wait;
colours for a run's step states. Drawn on the server (matplotlib, Agg)."""
from __future__ import annotations

from typing import Any

from matplotlib.figure import Figure
from matplotlib.patches import FancyBboxPatch

from runners.run_charts import figure_png

COLOURS = {"succeeded": "#cdeccd", "reused": "#d8e8f8", "running": "#fff2b3",
           "failed": "#f6c6c6", "pending": "#eeeeee", "not-run": "#f4f4f4", None: "#f7f7f7"}


def edges(steps: list[dict[str, Any]]) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(waits-for edges, outputs-passed edges), as catalog.pipeline_graph runs them."""
    from catalog.pipeline_graph import dependencies, reads
    deps = dependencies(steps)
    order = [(d, s["name"]) for s in steps for d in deps[s["name"]]]
    data = [(r, s["name"]) for s in steps for r in reads(s) if (r, s["name"]) not in order]
    return order, data


def layers(steps: list[dict[str, Any]], order: list[tuple[str, str]]) -> dict[str, int]:
    depth = {s["name"]: 0 for s in steps}
    for _ in steps:  # longest path; the definition is acyclic (checked when it was added)
        for a, b in order:
            depth[b] = max(depth[b], depth[a] + 1)
    return depth


def pipeline_png(steps: list[dict[str, Any]], states: dict[str, str] | None = None,
                 title: str = "") -> bytes:
    states = states or {}
    order, data = edges(steps)
    depth = layers(steps, order)
    rows: dict[int, list[str]] = {}
    for s in steps:
        rows.setdefault(depth[s["name"]], []).append(s["name"])
    width = max(len(r) for r in rows.values())
    pos = {name: ((i - (len(r) - 1) / 2) * 2.6, -d * 1.4) for d, r in rows.items()
           for i, name in enumerate(r)}
    fig = Figure(figsize=(max(4.0, 2.8 * width), 1.2 + 1.25 * len(rows)))
    ax = fig.subplots()
    kinds = {s["name"]: s.get("kind") or s.get("component") or "" for s in steps}
    for a, b in order + data:
        (x1, y1), (x2, y2) = pos[a], pos[b]
        ax.annotate("", xy=(x2, y2 + 0.36), xytext=(x1, y1 - 0.36),
                    arrowprops={"arrowstyle": "->", "color": "#555",
                                "linestyle": "--" if (a, b) in data else "-"})
    for name, (x, y) in pos.items():
        state = states.get(name)
        ax.add_patch(FancyBboxPatch((x - 1.1, y - 0.35), 2.2, 0.7,
                                    boxstyle="round,pad=0.02", fc=COLOURS.get(state, "#f7f7f7"),
                                    ec="#444"))
        label = name + (f"\n{kinds[name]}" if kinds[name] else "")
        label += f" · {state}" if state else ""
        ax.text(x, y, label, ha="center", va="center", fontsize=8)
    xs = [p[0] for p in pos.values()]
    ys = [p[1] for p in pos.values()]
    ax.set_xlim(min(xs) - 1.4, max(xs) + 1.4)
    ax.set_ylim(min(ys) - 0.7, max(ys) + 0.7)
    ax.axis("off")
    if title:
        ax.set_title(title, fontsize=9)
    return figure_png(fig)
