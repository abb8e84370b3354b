"""ONNX Runtime (fp32 and INT8) against TensorFlow on this CPU, through tfdesk's own conversion.

    .venv/bin/python benchmarks/models.py [--zoo small] [--models dense,cnn,...] [--batch 1,32]
    .venv/bin/python benchmarks/models.py --zoo applications [--models ResNet50:96,...] \
        [--batch 1,8] [--markdown table.md]

``small``: tests/model_zoo.py's tiny models, fp32 (mostly TensorFlow's per-call overhead).
``applications``: Keras Applications architectures (benchmarks/applications_zoo.py: weights=None,
briefly trained on a synthetic task so agreement means something), each converted to INT8
with a calibration file; the same job also runs the float ONNX model, so one row gives
conversion time, fp32 and INT8 errors, and TF / ORT fp32 / ORT INT8 speed side by side.
INT8 agreement is measured on held-out samples the calibration never saw.

The baseline is the original model run by TensorFlow (its SavedModel serving signature), in
the same worker process, with the same thread count, on the same inputs, right before the
converted models: the ratios (TF p50 / ORT p50) are what tfdesk's convert-model reports.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from runners.model_run import run_model_job  # noqa: E402

TARGET_BATCH1 = 2.0
TARGET_AGREEMENT = 0.99
APPLICATIONS = ("MobileNetV2,MobileNetV3Small,ResNet50,EfficientNetB0,DenseNet121,ConvNeXtTiny,"
                "InceptionV3,Xception,NASNetMobile,VGG16,RegNetX002")


def runner_env() -> dict:
    return {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}


def small(a, tmp: Path) -> int:
    names = a.models.split(",")
    print(f"building {', '.join(names)} in the runner env ...", flush=True)
    subprocess.run([a.runner, str(ROOT / "tests" / "model_zoo.py"), str(tmp / "zoo"), *names],
                   check=True, capture_output=True, env=runner_env())
    print(f"\n{'model':<10} {'batch':>5} {'TF p50 ms':>10} {'ORT p50 ms':>11} {'p50 ratio':>10} "
          f"{'TF /s':>10} {'ORT /s':>10} {'thr ratio':>10}")
    worst_b1, failed = None, []
    for name in names:
        _, r = run_model_job("convert-model", {"model": str(tmp / "zoo" / name),
                                               "batch": a.batch}, a.runner,
                             {"iterations": a.iterations, "warmup": 10, "budget_s": 30},
                             home=tmp / f"{name}.home")
        if r.get("status") != "succeeded":
            failed.append(name)
            print(f"{name:<10} failed: {r.get('error', {}).get('error') or r.get('status')}")
            continue
        b = r["benchmark"]
        for o, c, s in zip(b["original"], b["converted"], b["speedups"]):
            print(f"{name:<10} {o['batch']:>5} {o['p50_ms']:>10.3f} {c['p50_ms']:>11.3f} "
                  f"{s['p50_speedup']:>9.1f}x {o['throughput_per_s']:>10.0f} "
                  f"{c['throughput_per_s']:>10.0f} {s['throughput_speedup']:>9.1f}x")
            if o["batch"] == 1:
                worst_b1 = s["p50_speedup"] if worst_b1 is None else min(worst_b1, s["p50_speedup"])
    if worst_b1 is not None:
        verdict = "meets" if worst_b1 >= TARGET_BATCH1 else "MISSES"
        print(f"\nslowest batch-1 speedup {worst_b1:.1f}x: {verdict} the >= {TARGET_BATCH1:g}x target")
    return 1 if failed or (worst_b1 is not None and worst_b1 < TARGET_BATCH1) else 0


def application_row(name: str, report: dict, build_s: float) -> dict:
    """One model's numbers out of its INT8 conversion report."""
    conv, bench = report.get("conversion") or {}, report.get("benchmark") or {}
    agree = next(iter(((report.get("validation") or {}).get("int8") or {})
                      .get("outputs", {}).values()), {})
    row = {"model": name, "status": report.get("status"), "build_s": round(build_s, 1),
           "convert_s": (conv.get("onnx") or {}).get("seconds"),
           "quantize_s": (conv.get("quantized") or {}).get("seconds"),
           "fp32_max_err": (agree.get("fp32") or {}).get("max_abs_diff"),
           "fp32_top1": (agree.get("fp32") or {}).get("agreement"),
           "int8_top1": (agree.get("int8") or {}).get("agreement"),
           "int8_max_err": (agree.get("int8") or {}).get("max_abs_diff"),
           "held_out": ((report.get("validation") or {}).get("int8") or {}).get("samples"),
           "error": (report.get("error") or {}).get("error"), "batches": {}}
    for key in ("original", "onnx_fp32", "converted"):
        for r in bench.get(key, []):
            row["batches"].setdefault(r["batch"], {})[key] = {
                k: r[k] for k in ("p50_ms", "p99_ms", "throughput_per_s")}
    return row


def accuracies(preds: Path, labels: Path) -> dict:
    """Accuracy on the synthetic task's held-out labels: TF, ORT fp32 and INT8 side by side
    (agreement says how often INT8 differs, this says whether it is worse)."""
    import numpy as np
    if not preds.is_file() or not labels.is_file():
        return {}
    y = np.load(labels)
    with np.load(preds) as z:
        return {f"{key.split('.')[0]}_accuracy": float((z[key].argmax(1) == y).mean())
                for key in z.files}


def applications(a, tmp: Path) -> int:
    names = a.models.split(",") if a.models else APPLICATIONS.split(",")
    rows = []
    for item in names:
        name = item.partition(":")[0]
        print(f"== {name}: building (weights=None, short synthetic training) ...", flush=True)
        t0 = time.perf_counter()
        built = subprocess.run([a.runner, str(ROOT / "benchmarks" / "applications_zoo.py"),
                                *(["--steps", str(a.train_steps)] if a.train_steps else []),
                                str(tmp), item], capture_output=True, text=True, env=runner_env())
        build_s = time.perf_counter() - t0
        if built.returncode != 0:
            rows.append({"model": name, "status": "build_failed",
                         "error": built.stderr.strip()[-300:], "batches": {}})
            print(f"   build failed: {built.stderr.strip()[-300:]}", flush=True)
            continue
        print("   " + built.stdout.strip().splitlines()[-1], flush=True)
        print("   converting, quantising, validating, benchmarking ...", flush=True)
        job, report = run_model_job("convert-model", {
            "model": str(tmp / name), "precision": "int8", "batch": a.batch,
            "calibration": str(tmp / f"{name}.calibration.npz"),
            "input": str(tmp / f"{name}.heldout.npz")}, a.runner,
            {"iterations": a.iterations, "warmup": 5, "budget_s": a.budget},
            home=tmp / f"{name}.home")
        work = Path(job.workdir)
        row = application_row(name, report, build_s)
        row.update(dict(kv.split("=", 1) for kv in built.stdout.split()[-4:] if "=" in kv))
        row.update(accuracies(work / "out" / "held_out_predictions.npz",
                              tmp / f"{name}.heldout_labels.npy"))
        rows.append(row)
        print("   " + json.dumps({k: v for k, v in row.items() if k != "batches"}), flush=True)
    text = markdown(rows)
    print("\n" + text)
    if a.markdown:
        Path(a.markdown).write_text(text)
    (tmp / "applications.json").write_text(json.dumps(rows, indent=2))
    ok = [r for r in rows if r.get("batches")]
    meets = [r for r in ok if ratio(r, 1, "converted") and ratio(r, 1, "converted") >= TARGET_BATCH1
             and (r.get("int8_top1") or 0) >= TARGET_AGREEMENT]
    print(f"\n{len(meets)} of {len(rows)} models reach INT8 >= {TARGET_BATCH1:g}x TensorFlow at "
          f"batch 1 with >= {TARGET_AGREEMENT:.0%} top-1 agreement on held-out samples; "
          f"{len(rows) - len(ok)} failed to convert.")
    return 0 if len(ok) == len(rows) else 1


def ratio(row: dict, batch: int, key: str) -> float | None:
    b = row["batches"].get(batch, {})
    if "original" not in b or key not in b:
        return None
    return b["original"]["p50_ms"] / b[key]["p50_ms"]


def _f(v, fmt: str) -> str:
    return "–" if v is None else format(v, fmt)


def markdown(rows: list[dict]) -> str:
    batches = sorted({b for r in rows for b in r["batches"]})
    out = ["| model | px | trained steps | convert s | fp32 max err | INT8 top-1 agreement | INT8 max err | "
           "task accuracy TF · INT8 | "
           + " | ".join(f"batch {b} p50 / p99 ms: TF · ORT fp32 · ORT INT8 | batch {b} "
                        "throughput /s: TF · fp32 · INT8" for b in batches) + " | batch-1 speed-up fp32 · INT8 |",
           "|---|---|---|---|---|---|---|---|" + "---|---|" * len(batches) + "---|"]
    for r in rows:
        if not r["batches"]:
            out.append(f"| {r['model']} | failed: {(r.get('error') or r.get('status') or '')[:120]} |"
                       + " |" * (7 + 2 * len(batches)))
            continue
        cells = [r["model"], str(r.get("size", "?")), str(r.get("steps", "?")),
                 _f(r["convert_s"], ".0f"), _f(r["fp32_max_err"], ".1e"),
                 f"{_f(r['int8_top1'], '.1%')} of {r.get('held_out', '?')}",
                 _f(r["int8_max_err"], ".2g"),
                 f"{_f(r.get('original_accuracy'), '.1%')} · {_f(r.get('converted_accuracy'), '.1%')}"]
        for b in batches:
            d = r["batches"].get(b, {})
            lat = " · ".join(f"{d[k]['p50_ms']:.1f}/{d[k]['p99_ms']:.1f}" if k in d else "–"
                             for k in ("original", "onnx_fp32", "converted"))
            thr = " · ".join(f"{d[k]['throughput_per_s']:.0f}" if k in d else "–"
                             for k in ("original", "onnx_fp32", "converted"))
            cells += [lat, thr]
        cells.append(f"{_f(ratio(r, 1, 'onnx_fp32'), '.2f')}× · {_f(ratio(r, 1, 'converted'), '.2f')}×")
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--zoo", choices=("small", "applications"), default="small")
    ap.add_argument("--models", default=None,
                    help="small: dense,cnn,lstm,multi_io,module; applications: NAME[:SIZE],...")
    ap.add_argument("--batch", default=None)
    ap.add_argument("--iterations", type=int, default=None)
    ap.add_argument("--budget", type=float, default=8.0, help="seconds per series and batch")
    ap.add_argument("--markdown", default=None, help="also write the table to this file")
    ap.add_argument("--train-steps", type=int, default=None,
                    help="applications: training steps per model (default: applications_zoo's)")
    ap.add_argument("--runner", default=os.environ.get("TFDESK_RUNNER_PYTHON")
                    or str(ROOT / ".venv-runner" / "bin" / "python"))
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix=f"tfdesk-bench-{a.zoo}-"))
    if a.zoo == "small":
        a.models = a.models or "dense,cnn,lstm,multi_io,module"
        a.batch, a.iterations = a.batch or "1,32", a.iterations or 200
        code = small(a, tmp)
    else:
        a.batch, a.iterations = a.batch or "1,8", a.iterations or 100
        code = applications(a, tmp)
    print(f"(reports and charts under {tmp})")
    return code


if __name__ == "__main__":
    sys.exit(main())
