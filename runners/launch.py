"""Starts a job's several processes together, inside the job's sandbox (stdlib only).

Run as the job user by the sandbox (``python -I -S launch.py PROCS.json``): starts every
process with its own environment, prefixes each output line with the process's rank
(``[0] ...``), and when one fails stops the others (they would wait for it forever) and exits
with its status. Output is read in chunks, so a line without end cannot fill this process.

Usage: python launch.py PROCS.json
"""
import json
import os
import signal
import subprocess
import sys
import threading
import time

CHUNK = 65536


def main(path):
    with open(path) as f:
        plan = json.load(f)
    out = sys.stdout.buffer
    lock = threading.Lock()
    procs = [subprocess.Popen(p["argv"], env=p["env"], stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
             for p in plan["procs"]]

    def pump(proc, prefix):
        at_start = True
        fd = proc.stdout.fileno()
        while data := os.read(fd, CHUNK):
            lines = data.split(b"\n")
            chunk = bytearray()
            for i, part in enumerate(lines):
                if at_start and (part or i < len(lines) - 1):
                    chunk += prefix
                chunk += part
                if i < len(lines) - 1:
                    chunk += b"\n"
                    at_start = True
                elif part:
                    at_start = False
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
