"""The local backend: each job runs in its sandbox (sandbox.py) under its own supervisor
(supervise.py), a process of tfdesk's user in its own process group; tfdesk follows the log and
the exit record the supervisor writes in the job's record folder, outside the job folder.

tfdesk writes into a job folder only before the job starts (its script, inputs), then hands it
to the job user; after the job ended it reads from it without following links. Its own files
about a job (plan, log, exit record, charts) live in the record folder, which no job can see.
No sandbox, no local job: unless the operator sets ``[runner] unsandboxed = true``."""
from __future__ import annotations

import dataclasses
import json
import logging
import os
import re
import shlex
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from runners import isolation, sandbox
from runners.backends import Observation
from runners.kinds import LocalPlan
from runners.models import CANCELLED, FAILED, LOST, SUCCEEDED, JobError

log = logging.getLogger(__name__)

SUPERVISOR = Path(__file__).with_name("supervise.py")
LAUNCHER = Path(__file__).with_name("launch.py")
LOG_NAME = "job.log"
RECORDS = ".records"  # beside the job folders: <jobs>/.records/<job id>/
INSIDE = "/run/tfdesk"  # where the launcher and its plan appear in the sandbox
ERROR_LINE = re.compile(r"^(?:\[\d+(?:,\d+)?\](?:<std\w+>)?:?\s?)?(\w+(?:Error|Exception|Exit)\b.*)$")
SIGNALS = {signal.SIGXCPU: "its CPU time limit", signal.SIGXFSZ: "its file size limit",
           signal.SIGKILL: "SIGKILL"}


def records(workdir: Path) -> Path:
    """tfdesk's own folder about a job: outside the job folder, never mounted in a sandbox."""
    workdir = Path(workdir)
    return workdir.parent / RECORDS / workdir.name


def paths(workdir: Path) -> dict[str, Path]:
    rec = records(workdir)
    return {"records": rec, "log": rec / LOG_NAME, "exit": rec / "exit.json",
            "plan": rec / "plan.json", "procs": rec / "procs.json"}


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


# The notes already said in this process (see LocalBackend.note_user).
_NOTED: set[str] = set()


class LocalBackend:
    name = "local"
    reattach_note = None

    def __init__(self, grace_s: float = 10.0, user: str | None = None, poll_s: float = 0.2,
                 settings: dict[str, Any] | None = None):
        """``user``: the ``[runner] user`` setting (None: ``tfdesk-job`` when root);
        ``settings``: the ``[runner]`` section (``unsandboxed``, ``network``, ``limits``,
        ``bwrap``)."""
        settings = dict(settings or {})
        self.grace_s = grace_s
        self.poll_s = poll_s  # how often a running job's log and exit record are read
        self._children: dict[str, subprocess.Popen] = {}
        self.limits = sandbox.Limits.from_settings(settings.get("limits"))
        self.unsandboxed = bool(settings.get("unsandboxed", False))
        network = str(settings.get("network", "none"))
        if network not in sandbox.NETWORKS:
            raise JobError(f"[runner] network must be one of {', '.join(sandbox.NETWORKS)}, "
                           f"not {network!r}")
        self._user_setting, self._network = user, network
        self._bwrap = str(settings.get("bwrap") or sandbox.BWRAP)
        self._lock = threading.Lock()
        self._ready = False

    # How jobs run here, worked out once, when first needed (a read-only command never
    # builds a test sandbox): sandbox, refusal (why local jobs are refused, or None),
    # user_note (the sentence said at start).
    @property
    def sandbox(self) -> sandbox.Sandbox | None:
        return self._setup()[0]

    @property
    def refusal(self) -> str | None:
        return self._setup()[1]

    @property
    def user_note(self) -> str:
        return self._setup()[2]

    @property
    def user(self) -> isolation.JobUser | None:
        """The job user a root tfdesk drops to (None when tfdesk is not root)."""
        self._setup()
        return self._user

    def _setup(self) -> tuple[sandbox.Sandbox | None, str | None, str]:
        with self._lock:
            if not self._ready:
                self._state = self._build()
                self._ready = True
            return self._state

    def _build(self) -> tuple[sandbox.Sandbox | None, str | None, str]:
        self._user, why_user = isolation.resolve_user(self._user_setting)
        network, userns = self._network, ""
        try:
            box = sandbox.Sandbox(sandbox.identity(self._user), self.limits, network, self._bwrap)
            problem = sandbox.probe(box)
            if problem and os.geteuid() == 0:  # unprivileged user namespaces may be off
                fallback = dataclasses.replace(box, userns=False)
                if sandbox.probe(fallback) is None:
                    box, problem = fallback, None
                    userns = ", without a user namespace of its own (unprivileged user " \
                             "namespaces are off on this machine)"
        except JobError as exc:
            box, problem = None, f"{why_user}: {exc}"
        me = isolation.pwd.getpwuid(os.geteuid()).pw_name
        if problem is None:
            return box, None, (f"local jobs run in a bubblewrap sandbox as {box.identity.name} "
                               f"(uid {box.identity.uid}), network {network}{userns}")
        if self.unsandboxed:
            return None, None, (f"local jobs run UNSANDBOXED as {me} ([runner] unsandboxed = "
                                f"true): a job can read and change everything {me} can "
                                f"(the sandbox is unavailable: {problem})")
        refusal = (f"local jobs are refused: no sandbox can be built here ({problem}); fix "
                   "that, send jobs to Kubernetes, or accept running them unsandboxed with "
                   "[runner] unsandboxed = true")
        return None, refusal, refusal

    def note_user(self) -> None:
        """Say how local jobs run, once per process: where jobs are really started (a
        long-running engine, the first job launched), not on every read-only command."""
        if self.user_note in _NOTED:
            return
        _NOTED.add(self.user_note)
        (log.info if self.sandbox is not None else log.warning)("%s", self.user_note)

    # -- the backend interface (runners/backends.py) ----------------------------------------
    @staticmethod
    def render(kind, spec, workdir: Path, env, settings: dict) -> dict[str, Any]:
        procs = kind.local_plan(spec, workdir, env).procs
        return {"commands": [p.argv for p in procs],
                "text": "\n".join(shlex.join(str(a) for a in p.argv) for p in procs)}

    def accepts(self, kind) -> None:
        if self.refusal:
            raise JobError(self.refusal)

    def start(self, job, kind, env) -> tuple[dict[str, Any], list]:
        self.accepts(kind)
        plan = with_inputs(kind.local_plan(job.spec, Path(job.workdir), env), job.spec,
                           Path(job.workdir))
        return self.launch(job.id, Path(job.workdir), plan, job.spec.timeout,
                           env.runner_python), []

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
        state, reason = ending(record, job.spec.timeout, self.limits, log_path)
        return Observation(ended=True, state=state, reason=reason, log=log_path, collect=True,
                           data={"returncode": record.get("returncode")})

    def follow(self, job, closed, report) -> None:
        while not closed.is_set():
            if report(self.observe(job)):
                return
            self.wait_a_little(job.id, self.poll_s)

    def cancel(self, job) -> None:
        """SIGTERM to the supervisor; it stops the job's processes and, after its grace
        period, kills the sandbox. Its exit record then says how it ended."""
        self.signal(job.handle, signal.SIGTERM)

    def delete(self, job) -> None:
        self.signal(job.handle, signal.SIGKILL)  # bubblewrap dies with its parent

    # -- processes ---------------------------------------------------------------------------
    def command(self, workdir: Path, plan: LocalPlan, python: Path) -> tuple[list[str], dict]:
        """The supervisor's one command (the sandbox around the job's processes) and its
        environment."""
        p = paths(workdir)
        several = len(plan.procs) > 1
        if several:
            p["procs"].write_text(json.dumps({
                "grace": self.grace_s,
                "procs": [{"argv": [str(a) for a in pr.argv], "env": pr.env} for pr in plan.procs]}))
            inner = [str(python), "-I", "-S"]
            launch = {f"{INSIDE}/launch.py": LAUNCHER, f"{INSIDE}/procs.json": p["procs"]}
            argv, env = inner + [f"{INSIDE}/launch.py", f"{INSIDE}/procs.json"], \
                isolation.job_env(workdir)
        else:
            argv, env, launch = [str(a) for a in plan.procs[0].argv], plan.procs[0].env, {}
        if self.sandbox is None:  # the operator opted in to unsandboxed jobs
            if several:
                argv[-2:] = [str(LAUNCHER), str(p["procs"])]
            return argv, env
        programs = sorted({str(pr.argv[0]) for pr in plan.procs} | {str(python)})
        files = {**plan.input_copies, **launch}
        return self.sandbox.wrap(workdir, programs, plan.code, files, plan.inputs) + argv, env

    def launch(self, job_id: str, workdir: Path, plan: LocalPlan, timeout: float | None,
               python: Path | None = None) -> dict[str, Any]:
        if self.refusal:
            raise JobError(self.refusal)
        p = paths(workdir)
        p["records"].parent.mkdir(mode=0o700, exist_ok=True)
        os.chmod(p["records"].parent, 0o700)
        p["records"].mkdir(mode=0o700)
        p["log"].touch()
        command, env = self.command(workdir, plan, Path(python or sys.executable))
        limits = self.limits
        p["plan"].write_text(json.dumps({
            "command": command, "env": env, "workdir": str(workdir), "log": str(p["log"]),
            "exit": str(p["exit"]), "timeout": timeout, "grace": self.grace_s,
            "rlimits": limits.rlimits(), "disk": limits.disk, "disk_reserve": limits.disk_reserve,
            "output_head": limits.output_head, "output_tail": limits.output_tail}))
        self.note_user()
        if self.sandbox is not None:
            self.sandbox.hand_over(workdir)
        with open(p["records"] / "supervisor.err", "wb") as err:
            proc = subprocess.Popen([sys.executable, "-I", str(SUPERVISOR), str(p["plan"])],
                                    cwd=p["records"], env=isolation.job_env(p["records"]),
                                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                    stderr=err, process_group=0, close_fds=True)
        self._children[job_id] = proc
        return {"pid": proc.pid, "pgid": proc.pid, "pid_start": proc_start_time(proc.pid),
                "host": os.uname().nodename}

    def alive(self, handle: dict[str, Any]) -> bool:
        return pid_alive(handle.get("pid"), handle.get("pid_start"))

    def exit_record(self, workdir: Path) -> dict[str, Any] | None:
        try:
            with open(paths(workdir)["exit"], "rb") as f:
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
        """Signal the supervisor's process group; False when it was already gone."""
        if not self.alive(handle):
            return False
        try:
            os.killpg(handle["pgid"], sig)
        except ProcessLookupError:
            return False
        return True


def with_inputs(plan: LocalPlan, spec, workdir: Path) -> LocalPlan:
    """The plan with the job's read-only inputs (checked at submit: runners/inputs.py), bound
    by the sandbox at their own paths (those from job folders: their private copies), and
    named to every process in ``TFDESK_INPUTS`` (``:``-separated), so a script given a
    catalog entry by name finds it."""
    inputs, copies = list(spec.inputs), dict(spec.input_copies)  # runners/stored.py Stored
    if not inputs:
        return plan
    procs = [dataclasses.replace(p, env={**p.env, "TFDESK_INPUTS": os.pathsep.join(inputs)})
             for p in plan.procs]
    return dataclasses.replace(plan, procs=procs,
                               inputs=[Path(p) for p in inputs if p not in copies],
                               input_copies={p: workdir / rel for p, rel in copies.items()})


def ending(record: dict[str, Any], timeout, limits: "sandbox.Limits", log_path: Path
           ) -> tuple[str, str]:
    """(state, reason) from the supervisor's exit record."""
    rc, why = record.get("returncode"), record.get("reason")
    if why == "cancelled":
        return CANCELLED, "cancelled by request"
    if why == "timeout":
        return FAILED, f"timed out after {timeout:g}s (wall clock)"
    if why == "disk":
        return FAILED, f"stopped: its folder passed the disk limit of {limits.disk} bytes"
    if why == "disk-full":
        return FAILED, (f"stopped: it left less than {limits.disk_reserve} bytes free on the "
                        "disk of its folder")
    if rc == 0:
        return SUCCEEDED, ""
    prefix = f"exit status {rc}"
    if isinstance(rc, int) and rc > 128 and rc - 128 in SIGNALS:
        prefix += f" (killed: {SIGNALS[rc - 128]})"
    last = last_error(log_path)
    return FAILED, prefix + (f": {last}" if last else "")


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


# What tfdesk reads from a job folder, without following links (runners/jobfiles.py).
from runners.jobfiles import collect_artifacts  # noqa: E402,F401
