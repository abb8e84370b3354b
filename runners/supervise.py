"""The supervisor of one local job: a small stdlib-only process that outlives tfdesk.

tfdesk starts it as the leader of a new process group. It starts the job's processes, writes
their output to the job's log (prefixed with the rank when there are several), enforces the
wall-clock timeout, turns SIGTERM (cancel) into a clean stop of every descendant, and records
how the job ended in ``exit.json``. Because it records the end itself, a tfdesk restart loses
nothing: the next tfdesk reads ``exit.json``, or sees that the supervisor is gone without one.

Usage: python supervise.py PLAN.json
"""
import ctypes
import json
import os
import signal
import subprocess
import sys
import threading
import time

PR_SET_CHILD_SUBREAPER = 36


def descendants(root):
    """Every process below ``root`` (Linux /proc), so nothing escapes a cancel or a timeout,
    even processes that started their own session (horovodrun does)."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [root]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def signal_all(sig):
    for pid in descendants(os.getpid()):
        try:
            os.kill(pid, sig)
        except OSError:
            pass


def main(plan_path):
    with open(plan_path) as f:
        plan = json.load(f)
    try:  # orphaned grandchildren come back to us instead of init, so we can always stop them
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    stop = {"reason": None}
    stop_event = threading.Event()

    def on_term(signum, frame):
        if stop["reason"] is None:
            stop["reason"] = "cancelled"
        stop_event.set()

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    log = open(plan["log"], "ab", buffering=0)
    lock = threading.Lock()
    procs, pumps = [], []
    many = len(plan["procs"]) > 1
    for rank, p in enumerate(plan["procs"]):
        env = dict(p["env"])
        proc = subprocess.Popen(p["argv"], cwd=plan["cwd"], env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        procs.append(proc)

        def pump(proc=proc, prefix=(f"[{rank}] ".encode() if many else b"")):
            for line in iter(proc.stdout.readline, b""):
                with lock:
                    log.write(prefix + line)
        pumps.append(threading.Thread(target=pump, daemon=True))
        pumps[-1].start()

    deadline = time.monotonic() + plan["timeout"] if plan.get("timeout") else None
    returncode = None
    while True:
        codes = [p.poll() for p in procs]
        failed = [c for c in codes if c not in (None, 0)]
        if all(c is not None for c in codes):
            returncode = failed[0] if failed else 0
            break
        if failed and stop["reason"] is None:  # one worker died: the rest would wait forever
            stop["reason"] = "worker-failed"
            returncode = failed[0]
        if deadline and time.monotonic() > deadline and stop["reason"] is None:
            stop["reason"] = "timeout"
        if stop["reason"] is not None:
            signal_all(signal.SIGTERM)
            end = time.monotonic() + plan.get("grace", 10)
            while time.monotonic() < end and any(p.poll() is None for p in procs):
                time.sleep(0.05)
            signal_all(signal.SIGKILL)
            for p in procs:
                p.wait()
            if returncode is None:
                returncode = next((p.returncode for p in procs if p.returncode), -15)
            break
        stop_event.wait(0.02)
    signal_all(signal.SIGKILL)  # stragglers that daemonised themselves
    for t in pumps:
        t.join(timeout=5)
    with lock:
        log.flush()
    result = {"returncode": returncode, "reason": stop["reason"] or "exited", "ts": time.time()}
    tmp = plan["exit"] + ".tmp"
    with open(tmp, "w") as f:
        json.dump(result, f)
    os.replace(tmp, plan["exit"])  # atomic: a reader sees all of it or nothing
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
