"""The conversion report: a PNG chart (matplotlib) and a short text summary.

Both read only the JSON report, so the bot can redraw a chart from a report a remote
(Kubernetes) run sent back.
"""
from __future__ import annotations

from pathlib import Path


def chart(report: dict, out: Path) -> Path | None:
    bench = report.get("benchmark") or {}
    series = {k: bench[k] for k in ("original", "onnx_fp32", "converted") if bench.get(k)}
    if not series:
        return None
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    labels = {"original": bench.get("original_label", "TensorFlow"),
              "onnx_fp32": bench.get("onnx_fp32_label", "ONNX Runtime fp32"),
              "converted": bench.get("converted_label", "converted")}
    batches = sorted({r["batch"] for rows in series.values() for r in rows})
    x = np.arange(len(batches))
    width = 0.8 / len(series)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    for i, (key, rows) in enumerate(series.items()):
        by = {r["batch"]: r for r in rows}
        p50 = [by[b]["p50_ms"] if b in by else 0 for b in batches]
        p99 = [by[b]["p99_ms"] if b in by else 0 for b in batches]
        err = [np.subtract(p99, p50).clip(0), np.zeros(len(batches))]
        ax1.bar(x + i * width, p50, width, yerr=err[::-1], capsize=3, label=labels[key])
        ax2.bar(x + i * width, [by[b]["throughput_per_s"] if b in by else 0 for b in batches],
                width, label=labels[key])
    for ax, title, unit in ((ax1, "Latency p50 (bar) to p99 (whisker)", "ms"),
                            (ax2, "Throughput", "samples/s")):
        ax.set_xticks(x + width * (len(series) - 1) / 2, [str(b) for b in batches])
        ax.set_xlabel("batch size")
        ax.set_ylabel(unit)
        ax.set_title(title)
        ax.legend()
    fig.suptitle(f"{report.get('model', {}).get('name', 'model')}: "
                 f"{labels['original']} vs {labels['converted']}")
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out


def summary(report: dict) -> str:
    lines = []
    model = report.get("model", {})
    conv = report.get("conversion", {})
    if report.get("mode") == "evaluate":
        lines.extend(evaluation_lines(model.get("name", "model"), report.get("evaluation") or {}))
    elif report.get("mode") == "infer":
        lines.append(f"Benchmark of {model.get('name', 'model')} ({report.get('backend', '')})")
    else:
        lines.append(f"Converted {model.get('name', 'model')} -> {conv.get('target', '?')} "
                     f"({conv.get('precision', 'fp32')}"
                     + (f", opset {conv['opset']}" if conv.get("opset") else "") + ")")
    if report.get("status") == "needs_gpu":
        gpu = report.get("needs_gpu", {})
        # The message says where the engine gets built (the GPU environment and its image).
        lines.append("TensorRT engine: needs a GPU runner. " + (gpu.get("message") or gpu.get(
            "reason", "")) + " Kubernetes manifests attached (trt-build.yaml).")
    val = report.get("validation")
    if val and val.get("int8"):
        lines.extend(int8_lines(val["int8"]))
    elif val:
        worst = max((o.get("max_abs_error", 0) for o in val["outputs"].values()), default=0)
        tol = val["tolerance"]
        lines.append(f"Validation: {'PASS' if val['passed'] else 'FAIL'} on "
                     f"{val.get('samples', '?')} samples (max abs error {worst:.3g}; "
                     f"atol {tol['atol']:g}, rtol {tol['rtol']:g})")
    bench = report.get("benchmark") or {}
    fp32 = {r["batch"]: r for r in bench.get("onnx_fp32") or []}
    for s in bench.get("speedups", []):
        o = next(r for r in bench["original"] if r["batch"] == s["batch"])
        c = next(r for r in bench["converted"] if r["batch"] == s["batch"])
        via = (f"fp32 {fp32[s['batch']]['p50_ms']:.2f} ms "
               f"({o['p50_ms'] / fp32[s['batch']]['p50_ms']:.1f}x), int8 "
               if s["batch"] in fp32 else "")
        lines.append(f"  batch {s['batch']:>4}: p50 {o['p50_ms']:.2f} ms -> {via}"
                     f"{c['p50_ms']:.2f} ms ({s['p50_speedup']:.1f}x), "
                     f"{c['throughput_per_s']:.0f} samples/s")
    if not bench.get("speedups"):
        for r in bench.get("original", []) or []:
            lines.append(f"  batch {r['batch']:>4}: p50 {r['p50_ms']:.2f} ms, p99 "
                         f"{r['p99_ms']:.2f} ms, {r['throughput_per_s']:.0f} samples/s")
    for w in report.get("warnings", []):
        lines.append(f"note: {w}")
    return "\n".join(lines)


def int8_lines(q: dict) -> list[str]:
    """INT8 against TensorFlow on held-out samples (never seen by the calibration)."""
    lines = [f"Validation: {'PASS' if q['passed'] else 'FAIL'} — INT8 agreement with "
             f"TensorFlow on {q['samples']} held-out samples (needs >= {q['min_agreement']:.0%})"]
    for name, row in q["outputs"].items():
        kind = "top-1" if row["task"] == "classification" else "rows within tolerance"
        line = (f"  {name}: INT8 {row['int8']['agreement']:.1%} {kind}, max abs error "
                f"{row['int8']['max_abs_diff']:.3g}")
        if row.get("fp32"):
            line += (f"; ONNX fp32 {row['fp32']['agreement']:.1%}, max abs error "
                     f"{row['fp32']['max_abs_diff']:.3g}")
        lines.append(line)
    return lines


def _fmt(name: str, value: float) -> str:
    return f"{value:.2%}" if name == "accuracy" or name.startswith("top") else f"{value:.4g}"


def evaluation_lines(name: str, ev: dict) -> list[str]:
    """The metrics as a small table, one column per model."""
    data = ev.get("data", {})
    lines = [f"Evaluation of {name} on {data.get('file', '?')} ({data.get('rows', '?')} rows, "
             f"output {ev.get('output', '?')!r}, {ev.get('task', '')})"]
    models = ev.get("models", [])
    if not models:
        return lines
    heads = [f"{m['label']} ({m['backend']})" for m in models]
    width = max(len(h) for h in heads) + 2
    lines.append("  " + "metric".ljust(10) + "".join(h.rjust(width) for h in heads)
                 + ("difference".rjust(12) if ev.get("differences") else ""))
    for metric in ev.get("metrics", []):
        row = "  " + metric.ljust(10) + "".join(_fmt(metric, m["metrics"][metric]).rjust(width)
                                                for m in models)
        if ev.get("differences"):
            d = ev["differences"][metric]
            row += (f"{d * 100:+.2f} pt" if metric == "accuracy" or metric.startswith("top")
                    else f"{d:+.3g}").rjust(12)
        lines.append(row)
    agree = ev.get("agreement")
    if agree:
        lines.append(f"Agreement: {agree['agreement']:.2%} of rows predict the same "
                     f"({agree['disagreeing_rows']} differ); max abs difference "
                     f"{agree['max_abs_diff']:.3g}")
    return lines
