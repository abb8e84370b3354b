"""Job engine benchmark: submission latency, a burst of concurrent submissions through a small
pool (nothing lost or duplicated, the queue drains, the pool bound holds), and event delivery
latency to a subscriber (target: p99 under 100 ms).

    .venv/bin/python benchmarks/jobs.py [--jobs 200] [--pool 2]

Ratios are against baselines measured in the same run: a bare SQLite WAL insert+commit for
submission, a bare thread-to-thread queue hand-off for delivery, and the same short processes
started directly two at a time for draining the queue.
"""
from __future__ import annotations

import argparse
import queue
import sqlite3
import statistics
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from runners.engine import Engine, EngineConfig  # noqa: E402

SHORT = "print('Epoch 1/1')\nprint('1/1 - 0s - loss: 0.5')\n"


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def baseline_insert(path: Path, n: int) -> float:
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)")
    t = time.perf_counter()
    for i in range(n):
        db.execute("BEGIN IMMEDIATE")
        db.execute("INSERT INTO t (v) VALUES (?)", (str(i),))
        db.execute("COMMIT")
    return (time.perf_counter() - t) / n


def baseline_handoff(n: int) -> list[float]:
    q: queue.Queue = queue.Queue()
    out = []

    def consume():
        for _ in range(n):
            out.append(time.perf_counter() - q.get())
    t = threading.Thread(target=consume)
    t.start()
    for _ in range(n):
        q.put(time.perf_counter())
        time.sleep(0.0005)
    t.join()
    return out


def baseline_processes(script: Path, n: int, pool: int) -> float:
    t = time.perf_counter()
    with ThreadPoolExecutor(pool) as ex:
        list(ex.map(lambda _: subprocess.run([sys.executable, str(script)], capture_output=True), range(n)))
    return time.perf_counter() - t


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=200)
    ap.add_argument("--pool", type=int, default=2)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="tfdesk-bench-jobs-"))
    script = tmp / "short.py"
    script.write_text(SHORT)

    eng = Engine(EngineConfig(state_path=tmp / "state.sqlite", jobs_dir=tmp / "jobs",
                              runner_python=Path(sys.executable), local_workers=args.pool,
                              per_owner=args.pool, poll_s=0.05, schedule_s=0.5)).start()
    delivery: list[float] = []
    phase = {"name": "single"}
    by_phase: dict[str, list[float]] = {"single": [], "burst": [], "drain": []}
    running, peak, starts = [0], [0], {}
    lock = threading.Lock()

    def on_event(ev):
        delivery.append(time.time() - ev.ts)
        by_phase[phase["name"]].append(delivery[-1])
        if ev.type == "state":
            with lock:
                if ev.data["state"] == "running":
                    running[0] += 1
                    peak[0] = max(peak[0], running[0])
                    starts[ev.job_id] = starts.get(ev.job_id, 0) + 1
                elif ev.data.get("from") == "running":
                    running[0] -= 1
    eng.subscribe(on_event)

    # 1. Submission latency, one at a time (the pool is busy, so most wait queued).
    base_insert = baseline_insert(tmp / "baseline.sqlite", 200)
    lat = []
    for _ in range(20):
        t = time.perf_counter()
        eng.submit("train", {"script_path": str(script)}, owner="solo")
        lat.append(time.perf_counter() - t)
    # 2. A burst: N submissions from 16 threads at once.
    phase["name"] = "burst"
    t0 = time.perf_counter()
    with ThreadPoolExecutor(16) as ex:
        ids = list(ex.map(lambda i: eng.submit("train", {"script_path": str(script)},
                                               owner=f"user{i % 7}").id, range(args.jobs)))
    burst_submit = time.perf_counter() - t0
    phase["name"] = "drain"
    total = len(ids) + 20
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and eng.store.active_count():
        time.sleep(0.2)
    drain = time.perf_counter() - t0
    time.sleep(0.3)
    jobs = eng.list()
    eng.close()
    states = {}
    for j in jobs:
        states[j.state] = states.get(j.state, 0) + 1
    base_proc = baseline_processes(script, 40, args.pool) * (total / 40)
    base_delivery = baseline_handoff(500)

    lost = total - len(jobs)
    dup = sum(1 for c in starts.values() if c > 1) + (len(ids) - len(set(ids)))
    print(f"jobs benchmark ({total} short local jobs, pool {args.pool}, per-owner {args.pool})")
    print(f"  submit latency      p50 {statistics.median(lat) * 1e3:7.2f} ms  p99 {pct(lat, 99) * 1e3:7.2f} ms"
          f"   baseline sqlite insert {base_insert * 1e3:.2f} ms  ratio {statistics.median(lat) / base_insert:.1f}x")
    print(f"  burst of {len(ids)} submits from 16 threads: {burst_submit:.2f} s"
          f" ({burst_submit / len(ids) * 1e3:.1f} ms each)")
    print(f"  drain               {drain:7.2f} s   baseline same processes {args.pool} at a time"
          f" {base_proc:.2f} s  ratio {drain / base_proc:.2f}x")
    print(f"  final states        {states}")
    print(f"  lost {lost}  duplicated {dup}  left queued {states.get('queued', 0)}"
          f"  peak running {peak[0]} (bound {args.pool})")
    print(f"  event delivery      p50 {pct(delivery, 50) * 1e3:7.2f} ms  p99 {pct(delivery, 99) * 1e3:7.2f} ms"
          f"   baseline queue hand-off p99 {pct(base_delivery, 99) * 1e3:.2f} ms"
          f"  {'OK' if pct(delivery, 99) < 0.1 else 'OVER'} (target p99 < 100 ms)")
    for name, values in by_phase.items():
        if values:
            print(f"    {name:<7} ({len(values):4d} events) p50 {pct(values, 50) * 1e3:7.2f} ms"
                  f"  p99 {pct(values, 99) * 1e3:7.2f} ms")
    ok = (lost == 0 and dup == 0 and states.get("succeeded", 0) == total and peak[0] <= args.pool)
    print("  result:", "OK" if ok else "PROBLEM")
    shutil.rmtree(tmp, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
