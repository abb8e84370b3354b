"""The web view's run list with 10,000 tracked runs, over real HTTP.

    .venv/bin/python benchmarks/web_runs.py [--runs 10000] [--repeat 200]

Target: p99 under 200 ms for a page of the run list (50 rows), unfiltered, sorted by a
metric, filtered by a parameter and a metric, by a per-step series' minimum, and deep in the
list. Every run has 10 epochs of 3 metrics (300,000 metric rows), 20 logged steps of the loss
(200,000 step rows) and 6 parameters. The baseline, on the same server in the same
run, is /healthz (the HTTP round trip and uvicorn with no database work and no template), so the
ratios say what the list itself costs.
"""
from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx  # noqa: E402

from bot import commands  # noqa: E402
from bot.config import load_config  # noqa: E402
from bot.permissions import member  # noqa: E402
from bot.services import Services  # noqa: E402
from bot.web.auth import Sessions  # noqa: E402
from bot.web.server import WebServer  # noqa: E402
from core import statedb  # noqa: E402
from runners import run_list, tracking  # noqa: E402
from runners.store import JobStore  # noqa: E402

OWNERS = [f"U{i:04d}" for i in range(40)]
TARGET_MS = 200.0


def populate(home: Path, n: int) -> None:
    """n jobs as the store makes them (its create), with their metrics written in bulk."""
    store = JobStore(home / "state.sqlite")
    conn = tracking.open_tracking(home / "state.sqlite")
    rnd = random.Random(7)
    ids = []
    for i in range(n):
        job, _ = store.create("train", {
            "script_name": f"model{i % 30}.py", "workers": rnd.choice([1, 2, 4]),
            "launcher": rnd.choice(["horovod", "tf-distribute", "python"]),
            "script_sha256": f"{i % 97:064x}",
            "args": ["--lr", rnd.choice(["0.1", "0.01", "0.001"]), "--batch-size",
                     rnd.choice(["32", "64", "128"])]},
            rnd.choice(OWNERS), {}, "local", home / "jobs")
        ids.append(job.id)
    rows = []
    for jid in ids:
        acc = rnd.uniform(0.5, 0.99)
        for e in range(1, 11):
            rows += [(jid, e, "loss", 1.0 / (e + acc * 10), 0.0),
                     (jid, e, "val_loss", 1.1 / (e + acc * 9), 0.0),
                     (jid, e, "val_accuracy", acc * (0.9 + e / 100), 0.0)]
    # 20 logged steps of the loss per run (200,000 step rows): the per-step filters' case
    steps = [(jid, s, "loss", 1.0 / (s + rnd.uniform(1, 50)))
             for jid in ids for s in range(50, 1050, 50)]
    with statedb.transaction(conn):
        conn.executemany("INSERT INTO job_metrics VALUES (?,?,?,?,?)", rows)
        conn.executemany("INSERT INTO run_step_metrics VALUES (?,?,?,?)", steps)
        conn.executemany("UPDATE jobs SET state = ? WHERE id = ?",
                         [(rnd.choice(["succeeded", "failed", "running"]), j) for j in ids])
    t0 = time.perf_counter()
    run_list.list_runs(conn, run_list.RunQuery())  # the first list indexes every run
    print(f"indexed {n} runs' parameters on first list in {time.perf_counter() - t0:.2f} s")
    store.close()
    conn.close()


def measure(client: httpx.Client, path: str, repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        r = client.get(path)
        times.append((time.perf_counter() - t0) * 1e3)
        assert r.status_code == 200, (path, r.status_code, r.text[:300])
    return times


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=200)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        t0 = time.perf_counter()
        populate(home, args.runs)
        print(f"{args.runs} runs made in {time.perf_counter() - t0:.1f} s")
        commands.load()
        config = load_config({"TFDESK_HOME": str(home)})
        services = Services(config)
        server = WebServer(config, services, host="127.0.0.1", port=0, env={}).start()
        token = Sessions(services.catalog, server.settings).open(member("U0001"))
        cases = {
            "baseline /healthz": "/healthz",
            "runs, newest first": "/runs",
            "runs by val_accuracy": "/runs?sort=metric:val_accuracy",
            "lr=0.01, val_accuracy>0.8": "/runs?param=lr%3D0.01&metric=val_accuracy%3E0.8"
                                         "&sort=-metric:val_loss",
            "runs by min(step:loss)": "/runs?sort=-metric:min(step:loss)",
            "max(step:loss)>0.015": "/runs?metric=max(step:loss)%3E0.015",
            "owner + state, page 3": f"/runs?owner={OWNERS[3]}&state=succeeded&page=3",
            "page 150 of all": "/runs?page=150",
        }
        worst = 0.0
        try:
            with httpx.Client(base_url=server.url.rstrip("/"), timeout=30,
                              cookies={"tfdesk_session": token}) as client:
                for path in cases.values():
                    measure(client, path, 5)  # warm: templates compiled, pages cached
                base = None
                print(f"{'case':<28} {'p50 ms':>8} {'p99 ms':>8} {'x base p50':>10}")
                for name, path in cases.items():
                    t = sorted(measure(client, path, args.repeat))
                    p50, p99 = statistics.median(t), t[int(len(t) * 0.99) - 1]
                    base = base or p50
                    if name != "baseline /healthz":
                        worst = max(worst, p99)
                    print(f"{name:<28} {p50:8.1f} {p99:8.1f} {p50 / base:10.1f}")
        finally:
            server.stop()
            services.close()
        verdict = "PASS" if worst < TARGET_MS else "FAIL"
        print(f"worst p99 {worst:.1f} ms (target < {TARGET_MS:.0f} ms): {verdict}")
        return 0 if worst < TARGET_MS else 1


if __name__ == "__main__":
    raise SystemExit(main())
