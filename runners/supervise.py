"""The supervisor of one local job: a small stdlib-only process that outlives tfdesk.

tfdesk starts it, as tfdesk's own user, as the leader of a new process group, with the job's
record folder (outside the job folder, out of the job's sight) as its working place. It starts
the job's command (the sandbox around the job's processes, see sandbox.py) with the job's
rlimits, writes the job's output to the log with a cap (the head and the tail are kept, and
the log says what was dropped), stops the job when it runs past its wall clock or fills its
folder past the disk limit, turns SIGTERM (cancel) into a clean stop (SIGTERM to the job's
processes, SIGKILL after the grace period), and records how the job ended in ``exit.json``.
Because it records the end itself, a tfdesk restart loses nothing.

Usage: python supervise.py PLAN.json
"""
import ctypes
import json
import os
import resource
import signal
import subprocess
import sys
import threading
import time

CHUNK = 65536
DISK_EVERY_S = 0.1  # at least; a slow look (a big folder) is made less often
PR_SET_CHILD_SUBREAPER = 36


def descendants(root):
    """(pid, comm) of every process below ``root`` (Linux /proc, the host's view, so it
    reaches into the sandbox's PID namespace)."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        head, _, rest = stat.rpartition(")")
        comm = head.partition("(")[2]
        children.setdefault(int(rest.split()[1]), []).append((int(entry), comm))
    out, todo = [], [root]
    while todo:
        for pid, comm in children.get(todo.pop(), []):
            out.append((pid, comm))
            todo.append(pid)
    return out


def signal_job(sig, keep=("bwrap",)):
    """Signal the job's processes; bubblewrap itself is spared (it would take the sandbox
    down with SIGKILL at once, leaving no grace)."""
    for pid, comm in descendants(os.getpid()):
        if comm not in keep:
            try:
                os.kill(pid, sig)
            except OSError:
                pass


class CappedLog:
    """The job's output in its log: the first ``head`` bytes as they come, then the last
    ``tail`` bytes once the job ends, with a line saying how much was dropped between."""

    def __init__(self, path, head, tail):
        self.f = open(path, "ab", buffering=0)
        self.head, self.tail_cap = head, tail
        self.written, self.dropped = 0, 0
        self.capped = False
        self.tail = bytearray()
        self.last = b"\n"

    def _put(self, data):
        if data:
            self.f.write(data)
            self.last = data[-1:]

    def note(self, text):
        self._put((b"" if self.last == b"\n" else b"\n") + f"[tfdesk] {text}\n".encode())

    def write(self, data):
        if not self.head:
            self._put(data)
            return
        room = self.head - self.written
        if room > 0:
            self._put(data[:room])
            self.written += min(room, len(data))
            data = data[room:]
        if data and not self.capped:
            self.capped = True
            self.note(f"the job's output passed {self.head} bytes; the rest is not written "
                      f"as it comes, the last {self.tail_cap} bytes follow when the job ends")
        if data:
            self.tail += data
            over = len(self.tail) - self.tail_cap
            if over > 0:
                self.dropped += over
                del self.tail[:over]

    def close(self):
        if self.capped:
            tail = bytes(self.tail)
            if self.dropped and b"\n" in tail:  # start the tail on a whole line
                cut = tail.index(b"\n") + 1
                self.dropped += cut
                tail = tail[cut:]
            self.note(f"{self.dropped} bytes of output dropped here (output cap); the last "
                      f"{len(tail)} bytes follow")
            self._put(tail)
        self.f.close()


def folder_bytes(path):
    """Bytes the job folder takes on disk; links are not followed."""
    total = 0
    for _root, _dirs, files, dir_fd in os.fwalk(path, follow_symlinks=False):
        for name in files:
            try:
                total += os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_blocks * 512
            except OSError:
                pass
    return total


def disk_problem(plan):
    disk, reserve, workdir = plan.get("disk"), plan.get("disk_reserve"), plan["workdir"]
    if reserve:
        st = os.statvfs(workdir)
        if st.f_bavail * st.f_frsize < reserve:
            return "disk-full"
    if disk and folder_bytes(workdir) > disk:
        return "disk"
    return None


def limiter(rlimits):
    def apply():
        for name, (soft, hard) in rlimits.items():
            resource.setrlimit(getattr(resource, name), (soft, hard))
    return apply


def main(plan_path):
    with open(plan_path) as f:
        plan = json.load(f)
    stop = {"reason": None}
    stop_event = threading.Event()

    def on_term(signum, frame):
        if stop["reason"] is None:
            stop["reason"] = "cancelled"
        stop_event.set()

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    try:  # orphans of an unsandboxed job come back to us, so a stop reaches them too
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    log = CappedLog(plan["log"], plan.get("output_head", 0), plan.get("output_tail", 0))
    proc = subprocess.Popen(plan["command"], cwd=plan["workdir"], env=plan["env"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, process_group=0,
                            preexec_fn=limiter(plan.get("rlimits") or {}))

    def pump():
        fd = proc.stdout.fileno()
        while True:
            data = os.read(fd, CHUNK)
            if not data:
                return
            log.write(data)
    reader = threading.Thread(target=pump, daemon=True)
    reader.start()

    deadline = time.monotonic() + plan["timeout"] if plan.get("timeout") else None
    next_disk = time.monotonic()
    while proc.poll() is None:
        now = time.monotonic()
        if deadline and now > deadline and stop["reason"] is None:
            stop["reason"] = "timeout"
        if now >= next_disk and stop["reason"] is None:
            stop["reason"] = disk_problem(plan)
            # Often while a look is cheap (a small folder), so a fast writer overshoots little.
            took = time.monotonic() - now
            next_disk = now + min(5.0, max(DISK_EVERY_S, 50 * took))
        if stop["reason"] is not None:
            signal_job(signal.SIGTERM)
            # A job filling the disk gets no grace: every moment is more disk.
            end = time.monotonic() + (0 if stop["reason"].startswith("disk") else
                                      plan.get("grace", 10))
            while time.monotonic() < end and proc.poll() is None:
                time.sleep(0.05)
            break
        stop_event.wait(0.05)
    signal_job(signal.SIGKILL, keep=())  # bubblewrap and anything left: the sandbox goes
    returncode = proc.wait()
    reader.join(timeout=5)
    log.close()
    result = {"returncode": returncode, "reason": stop["reason"] or "exited", "ts": time.time()}
    tmp = plan["exit"] + ".tmp"
    with open(tmp, "w") as f:
        json.dump(result, f)
    os.replace(tmp, plan["exit"])  # atomic: a reader sees all of it or nothing
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
