"""The local backend: each job runs under its own supervisor process (see supervise.py) in its
own process group and working directory; tfdesk follows the log and the exit record. The
supervisor starts with a clean environment and, when tfdesk is root, as the job user
(see isolation.py)."""
from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from runners import isolation
from runners.kinds import LocalPlan

log = logging.getLogger(__name__)

SUPERVISOR = Path(__file__).with_name("supervise.py")
LOG_NAME = "job.log"
META_DIR = ".tfdesk"
# The supervisor needs only the standard library: tfdesk's own interpreter, or a system one
# when tfdesk's is out of the job user's reach.
SUPERVISOR_PYTHONS = (sys.executable, "/usr/bin/python3", "/usr/local/bin/python3")


def paths(workdir: Path) -> dict[str, Path]:
    meta = Path(workdir) / META_DIR
    return {"log": Path(workdir) / LOG_NAME, "exit": meta / "exit.json", "plan": meta / "plan.json"}


def proc_start_time(pid: int) -> int | None:
    """Start time of a pid in clock ticks since boot: a pid number can be reused, the pair can't."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    if fields[0] == "Z":  # a zombie has finished
        return None
    return int(fields[19])


def pid_alive(pid: int | None, pid_start: int | None) -> bool:
    """Is the process ``pid`` (started at ``pid_start``) still there on this machine?"""
    if not pid:
        return False
    start = proc_start_time(pid)
    return start is not None and start == (pid_start if pid_start is not None else start)


class LocalBackend:
    name = "local"

    def __init__(self, grace_s: float = 10.0, user: str | None = None):
        """``user``: the ``[runner] user`` setting (None: ``tfdesk-job`` when root)."""
        self.grace_s = grace_s
        self._children: dict[str, subprocess.Popen] = {}
        self.user, self.user_note = isolation.resolve_user(user)
        (log.info if self.user else log.warning)("%s", self.user_note)
        self._warned: set[str] = set()

    def _run_as(self, plan: LocalPlan, workdir: Path) -> tuple[isolation.JobUser | None, str]:
        """The user this job runs as and the supervisor's interpreter: the job user when every
        program of the plan and the folder are within its reach, else tfdesk's own user
        (said in the log, once per cause)."""
        if self.user is None:
            return None, sys.executable
        programs = sorted({str(pr.argv[0]) for pr in plan.procs})
        missing = isolation.unreachable(self.user, programs, workdir)
        supervisor = next((py for py in SUPERVISOR_PYTHONS if os.path.exists(py) and not
                           isolation.unreachable(self.user, [py], workdir)), None)
        if missing or supervisor is None:
            why = missing or "no Python for the supervisor"
            if why not in self._warned:
                self._warned.add(why)
                log.warning("a local job runs as %s, not %s: %s is out of that user's reach "
                            "(make it and its parent folders readable by %s)",
                            isolation.pwd.getpwuid(os.geteuid()).pw_name, self.user.name, why,
                            self.user.name)
            return None, sys.executable
        return self.user, supervisor

    def start(self, job_id: str, workdir: Path, plan: LocalPlan, timeout: float | None) -> dict[str, Any]:
        p = paths(workdir)
        p["plan"].parent.mkdir(parents=True, exist_ok=True)
        p["log"].touch()
        p["plan"].write_text(json.dumps({
            "procs": [{"argv": [str(a) for a in pr.argv], "env": pr.env, "name": pr.name}
                      for pr in plan.procs],
            "cwd": str(workdir), "log": str(p["log"]), "exit": str(p["exit"]),
            "timeout": timeout, "grace": self.grace_s}))
        user, python = self._run_as(plan, workdir)
        as_user: dict[str, Any] = {}
        if user is not None:
            isolation.hand_over(workdir, user, (LOG_NAME, META_DIR))
            as_user = {"user": user.uid, "group": user.gid, "extra_groups": [], "umask": 0o007}
        proc = subprocess.Popen([python, str(SUPERVISOR), str(p["plan"])], cwd=workdir,
                                env=isolation.clean_env(Path(workdir)),
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=open(p["plan"].parent / "supervisor.err", "wb"),
                                process_group=0, close_fds=True, **as_user)
        self._children[job_id] = proc
        return {"pid": proc.pid, "pgid": proc.pid, "pid_start": proc_start_time(proc.pid),
                "host": os.uname().nodename}

    def alive(self, handle: dict[str, Any]) -> bool:
        return pid_alive(handle.get("pid"), handle.get("pid_start"))

    def exit_record(self, workdir: Path) -> dict[str, Any] | None:
        try:  # written by the job's user: never followed through a link it planted
            fd = os.open(paths(workdir)["exit"], os.O_RDONLY | os.O_NOFOLLOW)
            with os.fdopen(fd, "rb") as f:
                return json.loads(f.read(65536))
        except (OSError, ValueError):
            return None

    def wait_a_little(self, job_id: str, seconds: float) -> None:
        """Sleep until the supervisor exits or ``seconds`` pass (reaping it when it is ours)."""
        proc = self._children.get(job_id)
        if proc is None:
            time.sleep(seconds)
            return
        try:
            proc.wait(seconds)
            self._children.pop(job_id, None)
        except subprocess.TimeoutExpired:
            pass

    def cancel(self, handle: dict[str, Any]) -> bool:
        """SIGTERM to the supervisor's group; the supervisor stops every descendant and, after
        its grace period, kills them. False when the process was already gone."""
        if not self.alive(handle):
            return False
        try:
            os.killpg(handle["pgid"], signal.SIGTERM)
        except ProcessLookupError:
            return False
        return True

    def kill(self, handle: dict[str, Any]) -> None:
        if self.alive(handle):
            try:
                os.killpg(handle["pgid"], signal.SIGKILL)
            except ProcessLookupError:
                pass


def collect_artifacts(workdir: Path) -> list[dict[str, Any]]:
    """Everything the job wrote in its working directory, a SavedModel directory as one entry."""
    workdir = Path(workdir)
    out: list[dict[str, Any]] = []
    skip = {LOG_NAME, META_DIR}
    stack = [workdir]
    while stack:
        d = stack.pop()
        for entry in sorted(d.iterdir()):
            rel = entry.relative_to(workdir)
            if rel.parts[0] in skip or (d == workdir and entry.name.startswith("script")):
                continue
            if entry.is_symlink():  # the job's links may point at anything of tfdesk's
                continue
            if entry.is_dir():
                if (entry / "saved_model.pb").exists():
                    size = sum(f.lstat().st_size for f in entry.rglob("*")
                               if f.is_file() and not f.is_symlink())
                    out.append({"path": str(rel), "size": size, "kind": "saved_model"})
                else:
                    stack.append(entry)
            elif entry.is_file():
                out.append({"path": str(rel), "size": entry.stat().st_size, "kind": _kind(entry)})
    return sorted(out, key=lambda a: a["path"])


ARTIFACT_KINDS = [  # (suffixes or name parts, kind), first match wins
    ((".keras", ".h5"), "model"),
    ((".index", ".ckpt", "checkpoint"), "checkpoint"),
    ((".csv", ".json"), "metrics"),
    ((".onnx", ".plan", ".engine"), "model"),
    ((".png", ".svg"), "chart"),
]


def _kind(path: Path) -> str:
    name = path.name
    for marks, kind in ARTIFACT_KINDS:
        if any(name.endswith(m) or m in name.split(".data-")[0] for m in marks):
            return kind
    if ".data-" in name:
        return "checkpoint"
    return "file"
