"""Starts a job's several processes together, inside the job's sandbox (stdlib only).

Run as the job user by the sandbox (``python -I -S launch.py PROCS.json``): starts every
process with its own environment, prefixes each output line with the process's rank
(``[0] ...``), and when one fails stops the others (they would wait for it forever) and exits
with its status. A process's line reaches the log whole: two workers printing at once never
mix inside a line (``print("workers", n)`` unbuffered is three writes). A line ends at "\n" or
at "\r" (progress bars redraw with it, and must show while they run); a longer piece than
CHUNK without either is written as a line of its own, so no output can fill this process.

Usage: python launch.py PROCS.json
"""
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

CHUNK = 65536
_LINE = re.compile(rb"[^\r\n]*(?:\r\n|\r|\n)")


class Lines:
    """One process's output as whole prefixed lines: what ``feed`` returns ends a line."""

    def __init__(self, prefix):
        self.prefix = prefix
        self.pending = b""

    def feed(self, data):
        data = self.pending + data
        # A final "\r" may be the first half of "\r\n": it waits for the next read.
        seen = data[:-1] if data.endswith(b"\r") else data
        end = max(seen.rfind(b"\n"), seen.rfind(b"\r")) + 1
        whole, self.pending = data[:end], data[end:]
        if len(self.pending) > CHUNK:
            whole, self.pending = whole + self.pending + b"\n", b""
        return self._prefixed(whole)

    def close(self):
        rest, self.pending = self.pending, b""
        return self._prefixed(rest if rest.endswith(b"\r") else rest + b"\n") if rest else b""

    def _prefixed(self, whole):
        return b"".join(self.prefix + line for line in _LINE.findall(whole))


def main(path):
    with open(path) as f:
        plan = json.load(f)
    out = sys.stdout.buffer
    lock = threading.Lock()
    procs = [subprocess.Popen(p["argv"], env=p["env"], stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
             for p in plan["procs"]]

    def pump(proc, prefix):
        lines = Lines(prefix)
        fd = proc.stdout.fileno()
        while data := os.read(fd, CHUNK):
            write(lines.feed(data))
        write(lines.close())

    def write(chunk):
        if chunk:
            with lock:
                out.write(chunk)
                out.flush()
    pumps = [threading.Thread(target=pump, args=(p, f"[{i}] ".encode()), daemon=True)
             for i, p in enumerate(procs)]
    for t in pumps:
        t.start()
    signal.signal(signal.SIGTERM, lambda *a: [p.terminate() for p in procs])
    returncode = None
    while returncode is None:
        codes = [p.poll() for p in procs]
        failed = [(i, c) for i, c in enumerate(codes) if c not in (None, 0)]
        if failed:
            rank, returncode = failed[0]
            with lock:
                out.write(f"[tfdesk] worker {rank} exited with status {returncode}; stopping "
                          "the others\n".encode())
                out.flush()
            for p in procs:
                if p.poll() is None:
                    p.terminate()
            end = time.monotonic() + float(plan.get("grace", 10))
            while time.monotonic() < end and any(p.poll() is None for p in procs):
                time.sleep(0.05)
            for p in procs:
                if p.poll() is None:
                    p.kill()
        elif all(c == 0 for c in codes):
            returncode = 0
        else:
            time.sleep(0.05)
    for t in pumps:
        t.join(timeout=5)
    return returncode if returncode >= 0 else 128 - returncode  # killed by a signal


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
