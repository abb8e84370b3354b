"""Slack endpoint under a burst: 200 concurrent /tf commands over real HTTP, signed as Slack
signs them, against a local Slack Web API stand-in.

Prints ack latency p50/p99 (target: p99 under 300 ms, never over 3 s) and checks that every
command got its answer (zero lost replies). The baseline, measured in the same run with the
same concurrency, is a bare GET /healthz on the same server: the ratio shows what signing,
dedupe and Bolt's dispatch add on top of HTTP itself.

    .venv/bin/python benchmarks/slack.py [--n 200] [--concurrency 200]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from slack_stub import SlackEnv, command_body, post_signed  # noqa: E402


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q / 100 * (len(values) - 1))))]


def burst(n: int, concurrency: int, fn) -> list[float]:
    """Start ``n`` calls from ``concurrency`` threads released together; latencies in ms."""
    latencies: list[float] = []
    lock = threading.Lock()
    gate = threading.Barrier(concurrency)
    per = [n // concurrency + (1 if i < n % concurrency else 0) for i in range(concurrency)]

    def worker(count: int):
        with httpx.Client(timeout=30) as client:
            gate.wait()
            for _ in range(count):
                t = time.perf_counter()
                fn(client)
                with lock:
                    latencies.append((time.perf_counter() - t) * 1000)

    threads = [threading.Thread(target=worker, args=(c,)) for c in per]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return latencies


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--concurrency", type=int, default=200)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        env = SlackEnv(Path(tmp))
        try:
            base = f"http://127.0.0.1:{env.port}"
            health = burst(args.n, args.concurrency, lambda c: c.get(base + "/healthz"))
            statuses: list[int] = []

            def slash(client):
                body = command_body("help", user="UBENCH", channel="CBENCH")
                statuses.append(post_signed(env.endpoint, body,
                                            "application/x-www-form-urlencoded",
                                            client=client).status_code)

            started = time.perf_counter()
            acks = burst(args.n, args.concurrency, slash)
            deadline = time.monotonic() + 120
            while (len([c for c in env.stub.calls_to("chat.postMessage") if c["status"] == 200])
                   < args.n and time.monotonic() < deadline):
                time.sleep(0.05)
            drained = time.perf_counter() - started
            answered = len([c for c in env.stub.calls_to("chat.postMessage")
                            if c["status"] == 200])
        finally:
            env.close()
    p50, p99, worst = pct(acks, 50), pct(acks, 99), max(acks)
    h50, h99 = pct(health, 50), pct(health, 99)
    lost = args.n - answered
    print(f"slash commands: {args.n} at concurrency {args.concurrency}")
    print(f"  ack latency    p50 {p50:7.1f} ms  p99 {p99:7.1f} ms  max {worst:7.1f} ms  "
          f"mean {statistics.mean(acks):.1f} ms")
    print(f"  baseline /healthz p50 {h50:7.1f} ms  p99 {h99:7.1f} ms")
    print(f"  ratio to baseline p50 {p50 / h50:5.2f}x  p99 {p99 / h99:5.2f}x")
    print(f"  non-200 acks {sum(s != 200 for s in statuses)}; replies posted {answered}/{args.n} "
          f"(lost {lost}); all answered {drained:.1f} s after the burst began")
    ok = p99 < 300 and worst < 3000 and lost == 0 and all(s == 200 for s in statuses)
    print("PASS" if ok else "FAIL: target is p99 < 300 ms, max < 3 s, zero lost replies")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
