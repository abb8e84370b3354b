"""ONNX Runtime against TensorFlow on the same small models, batch 1 and 32, on this CPU.

    .venv/bin/python benchmarks/models.py [--models dense,cnn,lstm,multi_io,module] \
        [--batch 1,32] [--iterations 200]

The baseline is the original model run by TensorFlow (its SavedModel serving signature), in
the same worker process, on the same inputs, right before the converted model: the ratios
(TF p50 / ORT p50) are what tfdesk's convert-model reports. Target: ORT >= 2x faster at
batch 1 for these small models. Builds the models with tests/model_zoo.py in the runner env.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from converters.model import jobspec  # noqa: E402

TARGET_BATCH1 = 2.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="dense,cnn,lstm,multi_io,module")
    ap.add_argument("--batch", default="1,32")
    ap.add_argument("--iterations", type=int, default=200)
    ap.add_argument("--runner", default=os.environ.get("TFDESK_RUNNER_PYTHON")
                    or str(ROOT / ".venv-runner" / "bin" / "python"))
    a = ap.parse_args()
    names = a.models.split(",")
    tmp = Path(tempfile.mkdtemp(prefix="tfdesk-bench-models-"))
    print(f"building {', '.join(names)} in the runner env ...", flush=True)
    subprocess.run([a.runner, str(ROOT / "tests" / "model_zoo.py"), str(tmp / "zoo"), *names],
                   check=True, capture_output=True, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    print(f"\n{'model':<10} {'batch':>5} {'TF p50 ms':>10} {'ORT p50 ms':>11} {'p50 ratio':>10} "
          f"{'TF /s':>10} {'ORT /s':>10} {'thr ratio':>10}")
    worst_b1, failed = None, []
    for name in names:
        work = tmp / name
        work.mkdir()
        jobspec.prepare({"model": str(tmp / "zoo" / name), "batch": a.batch}, work, a.runner,
                        {"iterations": a.iterations, "warmup": 10, "budget_s": 30})
        r = jobspec.run_foreground(work, a.runner)
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
    print(f"(reports and charts under {tmp})")
    return 1 if failed or (worst_b1 is not None and worst_b1 < TARGET_BATCH1) else 0


if __name__ == "__main__":
    sys.exit(main())
