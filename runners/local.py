"""The local backend: each job runs under its own supervisor process (see supervise.py) in its
own process group and working directory; tfdesk follows the log and the exit record. The
supervisor starts with a clean environment and, when tfdesk is root, as the job user
(see isolation.py)."""
from __future__ import annotations

import json
import logging
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from runners import isolation
from runners.backends import Observation
from runners.kinds import LocalPlan
from runners.models import CANCELLED, FAILED, LOST, SUCCEEDED

log = logging.getLogger(__name__)

SUPERVISOR = Path(__file__).with_name("supervise.py")
LOG_NAME = "job.log"
META_DIR = ".tfdesk"
# The supervisor needs only the standard library: tfdesk's own interpreter, or a system one
# when tfdesk's is out of the job user's reach.
SUPERVISOR_PYTHONS = (sys.executable, "/usr/bin/python3", "/usr/local/bin/python3")
ERROR_LINE = re.compile(r"^(?:\[\d+(?:,\d+)?\](?:<std\w+>)?:?\s?)?(\w+(?:Error|Exception|Exit)\b.*)$")


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


# The user notes already said in this process (see LocalBackend.note_user).
_NOTED: set[str] = set()


class LocalBackend:
    name = "local"
    reattach_note = None

    def __init__(self, grace_s: float = 10.0, user: str | None = None, poll_s: float = 0.2,
                 reach: tuple[Path, Path] | None = None):
        """``user``: the ``[runner] user`` setting (None: ``tfdesk-job`` when root).
        ``reach``: (runner Python, jobs folder), checked now so that the start-up message
        says what will really happen."""
        self.grace_s = grace_s
        self.poll_s = poll_s  # how often a running job's log and exit record are read
        self._children: dict[str, subprocess.Popen] = {}
        self.user, self.user_note = isolation.resolve_user(user)
        self.user_reachable = self.user is not None
        if self.user is not None and reach is not None:
            python, jobs_dir = reach
            missing = isolation.unreachable(self.user, [str(python)], Path(jobs_dir))
            if missing:
                self.user_reachable = False
                self.user_note += (f", but {missing} is out of that user's reach, so local jobs "
                                   f"run as {isolation.pwd.getpwuid(os.geteuid()).pw_name} "
                                   "until it is readable by it (see site_docs/admin/security.md)")
        self._warned: set[str] = set()

    def note_user(self) -> None:
        """Say who local jobs run as, once per process: where jobs are really started (a
        long-running engine, the first job launched), not on every read-only command."""
        if self.user_note in _NOTED:
            return
        _NOTED.add(self.user_note)
        (log.info if self.user_reachable else log.warning)("%s", self.user_note)

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

    # -- the backend interface (runners/backends.py) ----------------------------------------
    @staticmethod
    def render(kind, spec: dict, workdir: Path, env, settings: dict) -> dict[str, Any]:
        procs = kind.local_plan(spec, workdir, env).procs
        return {"commands": [p.argv for p in procs],
                "text": "\n".join(shlex.join(str(a) for a in p.argv) for p in procs)}

    def accepts(self, kind) -> None:
        return None

    def start(self, job, kind, env) -> tuple[dict[str, Any], list]:
        plan = kind.local_plan(job.spec, Path(job.workdir), env)
        return self.launch(job.id, Path(job.workdir), plan, job.spec.get("timeout")), []

    def observe(self, job) -> Observation:
        """The exit record (read before the log, so the log is then complete), else whether
        the supervisor still lives."""
        workdir = Path(job.workdir)
        log_path = paths(workdir)["log"]
        record = self.exit_record(workdir)
        if record is None and not self.alive(job.handle):
            record = self.exit_record(workdir)  # it may have finished just now
            if record is None:
                return Observation(ended=True, state=LOST, log=log_path, reason=(
                    f"its process (pid {job.handle.get('pid')}) is gone and left no exit "
                    "record: tfdesk or the machine stopped while it ran"))
        if record is None:
            return Observation(log=log_path)
        rc, why = record.get("returncode"), record.get("reason")
        if why == "cancelled":
            state, reason = CANCELLED, "cancelled by request"
        elif why == "timeout":
            state, reason = FAILED, f"timed out after {job.spec.get('timeout'):g}s (wall clock)"
        elif rc == 0:
            state, reason = SUCCEEDED, ""
        else:
            last = last_error(log_path)
            prefix = "a worker failed" if why == "worker-failed" else f"exit status {rc}"
            state, reason = FAILED, prefix + (f": {last}" if last else "")
        return Observation(ended=True, state=state, reason=reason, log=log_path, collect=True,
                           data={"returncode": rc})

    def follow(self, job, closed, report) -> None:
        while not closed.is_set():
            if report(self.observe(job)):
                return
            self.wait_a_little(job.id, self.poll_s)

    def cancel(self, job) -> None:
        """SIGTERM to the supervisor's group; the supervisor stops every descendant and, after
        its grace period, kills them. Its exit record then says how it ended."""
        self.signal(job.handle, signal.SIGTERM)

    def delete(self, job) -> None:
        self.signal(job.handle, signal.SIGKILL)

    # -- processes ---------------------------------------------------------------------------
    def launch(self, job_id: str, workdir: Path, plan: LocalPlan, timeout: float | None) -> dict[str, Any]:
        p = paths(workdir)
        p["plan"].parent.mkdir(parents=True, exist_ok=True)
        p["log"].touch()
        p["plan"].write_text(json.dumps({
            "procs": [{"argv": [str(a) for a in pr.argv], "env": pr.env, "name": pr.name}
                      for pr in plan.procs],
            "cwd": str(workdir), "log": str(p["log"]), "exit": str(p["exit"]),
            "timeout": timeout, "grace": self.grace_s}))
        self.note_user()
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

    def signal(self, handle: dict[str, Any], sig: int) -> bool:
        """Signal the job's process group; False when it was already gone."""
        if not self.alive(handle):
            return False
        try:
            os.killpg(handle["pgid"], sig)
        except ProcessLookupError:
            return False
        return True


def last_error(log_path: Path) -> str:
    """The last error line of a log (a Python exception's last line), else its last line."""
    try:
        lines = log_path.read_text(encoding="utf-8", errors="replace").splitlines()[-200:]
    except OSError:
        return ""
    for line in reversed(lines):
        m = ERROR_LINE.match(line.strip())
        if m:
            return m.group(1)[:300]
    tail = [line for line in lines if line.strip()]
    return tail[-1].strip()[:300] if tail else ""


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
            if entry.name.startswith("."):  # tools' caches and settings (.horovod, .keras)
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
