"""The local backend: each job runs under its own supervisor process (see supervise.py) in its
own process group and working directory; tfdesk follows the log and the exit record."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from runners.kinds import LocalPlan

SUPERVISOR = Path(__file__).with_name("supervise.py")
LOG_NAME = "job.log"
META_DIR = ".tfdesk"


def paths(workdir: Path) -> dict[str, Path]:
    meta = Path(workdir) / META_DIR
    return {"log": Path(workdir) / LOG_NAME, "exit": meta / "exit.json", "plan": meta / "plan.json"}


def _proc_start_time(pid: int) -> int | None:
    """Start time of a pid in clock ticks since boot: a pid number can be reused, the pair can't."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    if fields[0] == "Z":  # a zombie has finished
        return None
    return int(fields[19])


class LocalBackend:
    name = "local"

    def __init__(self, grace_s: float = 10.0):
        self.grace_s = grace_s
        self._children: dict[str, subprocess.Popen] = {}

    def start(self, job_id: str, workdir: Path, plan: LocalPlan, timeout: float | None) -> dict[str, Any]:
        p = paths(workdir)
        p["plan"].parent.mkdir(parents=True, exist_ok=True)
        p["log"].touch()
        p["plan"].write_text(json.dumps({
            "procs": [{"argv": [str(a) for a in pr.argv], "env": pr.env, "name": pr.name}
                      for pr in plan.procs],
            "cwd": str(workdir), "log": str(p["log"]), "exit": str(p["exit"]),
            "timeout": timeout, "grace": self.grace_s}))
        # The supervisor needs nothing but the standard library, so the bot's interpreter runs it.
        proc = subprocess.Popen([sys.executable, str(SUPERVISOR), str(p["plan"])], cwd=workdir,
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=open(p["plan"].parent / "supervisor.err", "wb"),
                                process_group=0, close_fds=True)
        self._children[job_id] = proc
        return {"pid": proc.pid, "pgid": proc.pid, "pid_start": _proc_start_time(proc.pid),
                "host": os.uname().nodename}

    def alive(self, handle: dict[str, Any]) -> bool:
        pid = handle.get("pid")
        if not pid:
            return False
        start = _proc_start_time(pid)
        return start is not None and start == handle.get("pid_start", start)

    def exit_record(self, workdir: Path) -> dict[str, Any] | None:
        try:
            return json.loads(paths(workdir)["exit"].read_text())
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
            if entry.is_dir():
                if (entry / "saved_model.pb").exists():
                    size = sum(f.stat().st_size for f in entry.rglob("*") if f.is_file())
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
