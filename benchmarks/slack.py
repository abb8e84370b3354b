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
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from slack_stub import (BOT_TOKEN, SIGNING_SECRET, SlackStub, command_body,  # noqa: E402
                        sign)


def free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_serve(home: Path, stub: SlackStub) -> tuple[subprocess.Popen, str]:
    """The real ``tfdesk serve`` in its own process, as in production."""
    port = free_port()
    env = {**os.environ, "TFDESK_HOME": str(home), "SLACK_BOT_TOKEN": BOT_TOKEN,
           "SLACK_SIGNING_SECRET": SIGNING_SECRET, "SLACK_API_URL": stub.api_url}
    env.pop("SLACK_APP_TOKEN", None)
    proc = subprocess.Popen([sys.executable, "-m", "bot.cli", "serve", "--host", "127.0.0.1",
                             "--port", str(port)], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(base + "/healthz", timeout=1).status_code == 200:
                return proc, base
        except httpx.HTTPError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit("tfdesk serve did not come up within 60 s")


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q / 100 * (len(values) - 1))))]


def burst(n: int, concurrency: int, request) -> list[float]:
    """``n`` requests, ``concurrency`` in flight at once, from one asyncio loop (threads in
    the client would measure the client's own GIL contention); latencies in ms.
    ``request(client)`` returns the awaitable of one request."""
    async def run() -> list[float]:
        latencies: list[float] = []
        sem = asyncio.Semaphore(concurrency)
        limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=0)
        async with httpx.AsyncClient(timeout=30, limits=limits) as client:
            async def one():
                async with sem:
                    t = time.perf_counter()
                    resp = await request(client)
                    latencies.append((time.perf_counter() - t) * 1000)
                    return resp
            results = await asyncio.gather(*(one() for _ in range(n)))
        burst.statuses = [r.status_code for r in results]
        return latencies
    return asyncio.run(run())


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--concurrency", type=int, default=200)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        stub = SlackStub().start()
        proc, base = start_serve(Path(tmp), stub)
        endpoint = base + "/slack/events"
        try:
            burst(20, 20, lambda c: c.get(base + "/healthz"))  # warm both sides up
            health = burst(args.n, args.concurrency, lambda c: c.get(base + "/healthz"))

            def slash(client):
                body = command_body("help", user="UBENCH", channel="CBENCH")
                headers = {"Content-Type": "application/x-www-form-urlencoded", **sign(body)}
                return client.post(endpoint, content=body.encode(), headers=headers)

            started = time.perf_counter()
            acks = burst(args.n, args.concurrency, slash)
            statuses = burst.statuses

            def answered() -> int:
                return len([c for c in stub.calls_to("chat.postMessage") if c["status"] == 200])
            deadline = time.monotonic() + 180
            while answered() < args.n and time.monotonic() < deadline:
                time.sleep(0.05)
            drained = time.perf_counter() - started
            answered = answered()
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
            stub.stop()
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
