"""A hostile job, run through the real engine and local backend in the real sandbox, tries
what a member's script could try against tfdesk: read every interesting file outside its
folder, signal every process it can name, write everywhere, plant links for tfdesk to follow,
fork-bomb, allocate memory, burn CPU, fill the disk and print without end. Every attempt is
contained, tfdesk (this process) lives, and nothing of tfdesk's or of other jobs is lost.

The probe reports what it managed; the test compares that with what the same probe manages
when run by tfdesk's own user outside the sandbox (it must find the token there: the search
can fail)."""
from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.jobs_helpers import make_engine, write
from runners import sandbox
from runners.local import paths

TOKEN = "xoxb-hostile-probe-token-1234567890"
pytestmark = pytest.mark.skipif(sandbox.probe(sandbox.Sandbox(
    sandbox.Identity(os.geteuid(), os.getegid(), "me"), sandbox.Limits())) is not None and
    os.geteuid() != 0, reason="no bubblewrap sandbox on this machine")

PROBE = r'''
import json, os, signal, sys, time
token, targets, tfdesk_pid = sys.argv[1].encode(), json.loads(sys.argv[2]), int(sys.argv[3])
me = os.getcwd()
skip = tuple(p for p in {sys.prefix, sys.base_prefix, "/usr", "/proc", "/sys", "/dev"})
report = {"uid": os.getuid(), "read": [], "found": [], "written": [], "signalled": [],
          "pids_seen": 0}
for path in targets["read"]:
    try:
        with open(path, "rb") as f:
            data = f.read(1 << 20)
        report["read"].append(path)
        if token in data:
            report["found"].append(path)
    except OSError:
        pass
# -- walk
for root, dirs, files in os.walk("/"):  # every file it can see, for the token
    if root.startswith(skip) and root != "/":
        dirs[:] = []
        continue
    for name in files:
        p = os.path.join(root, name)
        try:
            with open(p, "rb") as f:
                if token in f.read(1 << 20):
                    report["found"].append(p)
        except OSError:
            pass
for pid in [d for d in os.listdir("/proc") if d.isdigit()]:
    report["pids_seen"] += 1
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            if token in f.read():
                report["found"].append(f"/proc/{pid}/environ")
    except OSError:
        pass
# -- signals
for pid in [1, tfdesk_pid, *targets["pids"]]:
    try:
        os.kill(pid, signal.SIGTERM)
        if pid != os.getpid():
            report["signalled"].append(pid)
    except OSError:
        pass
for d in targets["write"] + [me, "/tmp"]:
    try:
        with open(os.path.join(d, "planted-by-job"), "w") as f:
            f.write("x")
        report["written"].append(d)
    except OSError:
        pass
# Links for tfdesk to follow when it reads the folder after the job.
for name, target in targets["links"].items():
    os.symlink(target, name)
# A fork bomb: children that sleep until the process limit stops the forks.
kids = []
try:
    for _ in range(100000):
        pid = os.fork()
        if pid == 0:
            time.sleep(60)
            os._exit(0)
        kids.append(pid)
except OSError as exc:
    report["fork_stopped"] = type(exc).__name__
report["forked"] = len(kids)
for pid in kids:
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
try:
    big = bytearray(4 << 30)
    report["allocated"] = len(big)
except MemoryError:
    report["allocated"] = 0
report["own_userns"] = open("/proc/self/uid_map").read().split() != ["0", "0", "4294967295"]
import ctypes  # a user namespace of its own making would give it capabilities there
report["made_userns"] = ctypes.CDLL(None, use_errno=True).unshare(0x10000000) == 0
print("PROBE " + json.dumps(report), flush=True)
os.kill(-1, signal.SIGKILL)  # everything it may signal: its own sandbox, nothing else
'''

FLOOD = "import sys\nwhile True:\n    sys.stdout.write('x' * 4096)\n    sys.stdout.flush()\n"
FILL = r'''
import os
i = 0
while True:
    try:
        with open(f"fill-{i}", "wb") as f:
            for _ in range(64):
                f.write(b"\0" * (1 << 20))
    except OSError:
        pass
    i += 1
'''
BURN = "while True:\n    pass\n"
OTHER = "open('other-job-secret.txt', 'w').write('OTHER-JOB-SECRET')\n"
SLEEPER = "import time\nprint('sleeping', flush=True)\ntime.sleep(120)\n"

LIMITS = {"processes": 256, "memory": "1G", "file_size": "8M", "disk": "24M",
          "output_head": "64K", "output_tail": "16K", "cpu_seconds": 2, "tmp": "4M"}


def _submit(engine, home, name, source, **spec):
    script = write(home / f"{name}.py", source)
    return engine.submit("train", {"script_path": str(script), "convert": "none", **spec},
                         owner=name)


def test_hostile_job_is_contained(tmp_path, monkeypatch):
    monkeypatch.setenv("SLACK_BOT_TOKEN", TOKEN)  # in tfdesk's environment, as in production
    home = tmp_path / "home"
    home.mkdir()
    config = home / "tfdesk.toml"
    config.write_text(f'[slack]\nbot_token = "{TOKEN}"\n')
    uploads = home / "uploads"
    uploads.mkdir()
    (uploads / "member-upload.txt").write_text(f"upload {TOKEN}")
    engine = make_engine(home, local_workers=6, per_owner=6,
                         runner={"limits": LIMITS})
    try:
        other = engine.wait(_submit(engine, home, "other", OTHER).id, timeout=60)
        assert other.state == "succeeded", engine.read_log(other.id)
        sleeper = _submit(engine, home, "sleeper", SLEEPER)
        deadline = time.time() + 30
        while engine.get(sleeper.id).state != "running" and time.time() < deadline:
            time.sleep(0.1)
        before = {p: p.read_bytes() for p in (config, uploads / "member-upload.txt",
                                               Path(other.workdir) / "other-job-secret.txt")}
        jobs_dir = home / "jobs"
        targets = {
            "read": [str(config), str(home / "state.sqlite"), str(uploads / "member-upload.txt"),
                     str(Path(other.workdir) / "other-job-secret.txt"),
                     str(paths(Path(other.workdir))["plan"]), "/root/.bashrc", "/etc/shadow",
                     f"/proc/{os.getpid()}/environ", "/proc/1/environ"],
            "write": [str(home), str(jobs_dir), str(Path(other.workdir)), str(uploads), "/",
                      "/etc", "/usr", sys.prefix, sys.base_prefix, "/root"],
            "pids": [engine.local._children[sleeper.id].pid],
            "links": {"model.keras": str(config), "metrics.csv": str(home / "state.sqlite"),
                      "everything": "/", "job.log": str(config)},
        }
        probe = _submit(engine, home, "probe", PROBE,
                        args=[TOKEN, json.dumps(targets), str(os.getpid())])
        flood = _submit(engine, home, "flood", FLOOD, timeout=3)
        fill = _submit(engine, home, "fill", FILL)
        burn = _submit(engine, home, "burn", BURN)
        done = {j.id: engine.wait(j.id, timeout=90) for j in (probe, flood, fill, burn)}

        # The probe ran as the job user and reached nothing of tfdesk's or of others.
        log = engine.read_log(probe.id)
        report = json.loads(next(x for x in log.splitlines()
                                 if x.startswith("PROBE ")).removeprefix("PROBE "))
        assert report["uid"] != 0
        assert report["found"] == [] and report["read"] == []
        assert report["signalled"] == []
        assert sorted(report["written"]) == sorted([probe.workdir, "/tmp"])
        assert report["pids_seen"] <= 3  # its sandbox: the sandbox's init, itself
        assert report["fork_stopped"] == "BlockingIOError" and report["forked"] < 256
        assert report["allocated"] == 0
        assert report["own_userns"] and not report["made_userns"]
        assert done[probe.id].state == "failed"  # it killed itself at the end
        # Its links are not followed: no artifact leads out of its folder.
        arts = engine.artifacts(probe.id)
        assert all(not Path(a["path"]).is_absolute() and ".." not in a["path"] for a in arts)
        assert {a["path"] for a in arts}.isdisjoint(targets["links"])
        # Endless output: capped, head and tail kept, and the log says so.
        assert done[flood.id].state == "failed" and "timed out" in done[flood.id].reason
        flood_log = paths(Path(flood.workdir))["log"]
        assert flood_log.stat().st_size < (64 + 16 + 2) * 1024
        assert "bytes of output dropped here (output cap)" in flood_log.read_text()
        # Filling the disk: stopped at the folder's limit; a file stops at the size limit.
        assert done[fill.id].state == "failed" and "disk limit" in done[fill.id].reason
        assert all(f.stat().st_size <= 8 << 20 for f in Path(fill.workdir).glob("fill-*"))
        # Burning CPU: killed at its CPU time limit.
        assert done[burn.id].state == "failed" and "CPU time limit" in done[burn.id].reason

        # tfdesk and the other jobs: alive, intact.
        assert engine.get(sleeper.id).state == "running"
        assert {p: p.read_bytes() for p in before} == before
        assert not (home / "planted-by-job").exists() and not (Path("/planted-by-job")).exists()
        assert engine.cancel(sleeper.id, wait=20).state == "cancelled"
        db = sqlite3.connect(home / "state.sqlite")
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert db.execute("SELECT count(*) FROM jobs WHERE state IN ('queued', 'starting', "
                          "'running')").fetchone()[0] == 0
    finally:
        engine.close()

    # The same probe by tfdesk's own user, outside the sandbox, finds the token: the search works.
    mine = subprocess.run([sys.executable, "-c", PROBE.split("# -- walk")[0] +
                           "\nprint('PROBE ' + json.dumps(report))",
                           TOKEN, json.dumps({**targets, "write": [], "links": {}, "pids": []}),
                           str(os.getpid())], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)
    seen = json.loads(mine.stdout.split("PROBE ", 1)[1])
    assert str(config) in seen["found"]
