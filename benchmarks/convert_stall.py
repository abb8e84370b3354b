"""How long a large script's conversion stalls the other threads of the process that asks for
it: in-process (the baseline) against the child process the Slack face uses
(converters/script/child.py).

A ticker thread sleeps 1 ms in a loop and records the longest gap between its wake-ups while
N conversions of a generated script run on worker threads; a Slack ack needs that thread time
within 3 s. Prints both longest gaps and their ratio, and the wall time of each phase.

    .venv/bin/python benchmarks/convert_stall.py [--kb 780] [--n 2]
"""
from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def script(kb: int) -> bytes:
    lines = ["import tensorflow as tf\n"]
    size, i = len(lines[0]), 0
    while size < kb * 1024:
        line = f"x{i} = tf.keras.layers.Dense({i % 97 + 1}, activation='relu')(tf.zeros([1, 4]))\n"
        lines.append(line)
        size, i = size + len(line), i + 1
    return "".join(lines).encode()


def longest_stall(convert, source: bytes, n: int) -> tuple[float, float]:
    gaps, stop = [0.0], threading.Event()

    def tick():
        last = time.monotonic()
        while not stop.is_set():
            time.sleep(0.001)
            now = time.monotonic()
            gaps.append(now - last)
            last = now
    ticker = threading.Thread(target=tick)
    ticker.start()
    started = time.monotonic()
    with ThreadPoolExecutor(n) as pool:
        list(pool.map(lambda i: convert(source, "horovod", filename=f"s{i}.py"), range(n)))
    wall = time.monotonic() - started
    stop.set()
    ticker.join()
    return max(gaps), wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kb", type=int, default=780, help="script size in KB")
    ap.add_argument("--n", type=int, default=2, help="conversions at once")
    args = ap.parse_args()
    from converters.script import child
    from converters.script.api import convert
    source = script(args.kb)
    child.convert(b"x = 1\n", "horovod")  # the child started before timing, as in a server
    inproc, wall_in = longest_stall(convert, source, args.n)
    offloaded, wall_child = longest_stall(child.convert, source, args.n)
    print(f"{args.n} conversions of a {len(source) / 1024:.0f} KB script; load average "
          f"{os.getloadavg()[0]:.1f}")
    print(f"  in-process (baseline): longest stall {inproc:.3f} s, wall {wall_in:.1f} s")
    print(f"  child process:         longest stall {offloaded:.3f} s, wall {wall_child:.1f} s")
    print(f"  stall ratio baseline/child: {inproc / max(offloaded, 1e-6):.0f}x")


if __name__ == "__main__":
    main()
