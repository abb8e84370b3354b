"""The model job's report (report.json): its type, its one loader, a PNG chart (matplotlib) and
a short text summary.

The worker writes report.json; everything on tfdesk's side reads it through
:func:`load_report` as a :class:`ModelReport`. The chart and summary read only the report, so
the bot can redraw a chart from a report a remote (Kubernetes) run sent back.
"""
from __future__ import annotations

import json
import os
import stat
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPORT = "report.json"
# Logs whose tail explains a worker that died before writing its report.
LOGS = ("worker.log", ".tfdesk/log")
# Report states of a job that exited 0 but did not do what it was asked.
FAILURES = {"validation_failed": "the converted model failed numerical validation",
            "failed": "the model job failed"}


@dataclass
class ModelReport:
    """What a model job (convert-model, infer, evaluate) reports. Keys the worker adds that
    have no field here are kept in ``extra`` and written back by :meth:`to_dict`."""
    status: str = "failed"          # succeeded | validation_failed | needs_gpu | failed
    mode: str = "convert"           # convert | infer | evaluate
    id: str = ""
    model: dict[str, Any] = field(default_factory=dict)
    conversion: dict[str, Any] = field(default_factory=dict)
    validation: dict[str, Any] | None = None
    benchmark: dict[str, Any] | None = None
    evaluation: dict[str, Any] | None = None
    needs_gpu: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    artifacts: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ModelReport":
        if not isinstance(data, dict):
            return cls.crashed(f"{REPORT} does not hold a JSON object")
        known = {f for f in cls.__dataclass_fields__ if f != "extra"}
        err = data.get("error")
        if err is not None and not isinstance(err, dict):
            data = {**data, "error": {"error": str(err)}}
        return cls(**{k: v for k, v in data.items() if k in known},
                   extra={k: v for k, v in data.items() if k not in known})

    @classmethod
    def crashed(cls, why: str, code: str = "crash") -> "ModelReport":
        return cls(status="failed", error={"code": code, "error": why})

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        extra = d.pop("extra")
        return {**{k: v for k, v in d.items() if v is not None}, **extra}

    def get(self, key: str, default: Any = None) -> Any:
        """Dict-style reading, for renderers written against the JSON."""
        return self.to_dict().get(key, default)

    @property
    def failed(self) -> bool:
        return self.status in FAILURES

    @property
    def error_text(self) -> str:
        """Why it failed, in words: the worker's own error, else what the status means."""
        detail = (self.error or {}).get("error") or ""
        if self.status == "validation_failed":
            worst = (self.validation or {}).get("max_abs_error")
            return FAILURES[self.status] + (f": {detail}" if detail else "") + \
                (f" (max abs error {worst})" if worst is not None else "")
        return detail or FAILURES.get(self.status, "")

    @property
    def tf_version(self) -> str:
        """The exact TensorFlow the worker ran with (not the version asked for)."""
        return str(self.model.get("runner_tf") or "")


def load_report(workdir: Path | str) -> ModelReport:
    """The one reader of a model job's report.json. A worker that died before writing it gets
    a failed report naming the tail of its log; a report that does not parse says so. The
    file is opened without following a link (the job wrote the folder)."""
    workdir = Path(workdir)
    try:
        text = _read_nofollow(workdir / REPORT)
    except FileNotFoundError:
        tail = ""
        for name in LOGS:
            try:
                tail = _read_nofollow(workdir / name)[-1500:]
            except OSError:
                continue
        return ModelReport.crashed("the conversion stopped before writing its report"
                                   + (f":\n{tail}" if tail else ""))
    except OSError as exc:
        return ModelReport.crashed(f"{REPORT} could not be read: {exc}", "unreadable")
    try:
        return ModelReport.from_dict(json.loads(text))
    except ValueError as exc:
        return ModelReport.crashed(f"{REPORT} is not valid JSON: {exc}", "unreadable")


def _read_nofollow(path: Path, limit: int = 20 << 20) -> str:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path.name} is not a regular file")
        os.set_blocking(fd, True)
        return f.read(limit).decode("utf-8", errors="replace")


CHART = "chart.png"


def ensure_chart(workdir: Path | str) -> Path | None:
    """The job's chart.png, drawn from its report on tfdesk's side, once: the worker's sandbox
    may lack matplotlib and cannot reach the bot's Python. Whoever asks first draws it (the
    engine collecting the job's files); an entry already there, even a link, is left alone."""
    workdir = Path(workdir)
    png = workdir / CHART
    if os.path.lexists(png):
        return png if png.is_file() and not png.is_symlink() else None
    report = load_report(workdir)
    if not report.benchmark:
        return None
    # Drawn beside it, then renamed over the name: a link planted meanwhile is replaced,
    # never written through.
    tmp = workdir / f".{CHART}.{os.getpid()}.png"
    try:
        if chart(report.to_dict(), tmp) is None:
            return None
        os.replace(tmp, png)
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)
    return png


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
                     f"{inputs_used(val.get('samples'), val.get('inputs'))} (max abs error "
                     f"{worst:.3g}; atol {tol['atol']:g}, rtol {tol['rtol']:g})")
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


# Where validation inputs came from (the worker's ``inputs``), in words that say whether the
# numbers are about real data.
INPUT_SOURCES = {"user samples": "of your samples (--input)",
                 "calibration": "held-out samples of your calibration file",
                 "generated": "generated inputs (random, not your data: pass --input FILE "
                              "for real samples)"}


def inputs_used(samples, source) -> str:
    """``8 generated inputs (random, ...)``: how many inputs a check used, and whether real."""
    what = INPUT_SOURCES.get(source or "", "samples (source not recorded)")
    return f"{samples if samples is not None else '?'} {what}"


def int8_lines(q: dict) -> list[str]:
    """INT8 against TensorFlow on held-out samples (never seen by the calibration)."""
    lines = [f"Validation: {'PASS' if q['passed'] else 'FAIL'} — INT8 agreement with "
             f"TensorFlow on {inputs_used(q['samples'], q.get('inputs'))} "
             f"(needs >= {q['min_agreement']:.0%})"]
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
