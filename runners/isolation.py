"""Keeping members' code away from tfdesk's secrets on the tfdesk machine.

Every local job runs in a sandbox (runners/sandbox.py); this module holds what the sandbox
starts from: the job's environment (:func:`job_env`, the one builder: an allow-list, never
tfdesk's own variables such as ``SLACK_*`` tokens or config paths), and the job user
(``[runner] user``, ``tfdesk-job`` by default, created when missing) that a root tfdesk drops
to. tfdesk's own secrets on disk are made private (:func:`protect_files`) and its process
undumpable (:func:`protect_process`).
"""
from __future__ import annotations

import ctypes
import logging
import os
import pwd
import shutil
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

DEFAULT_JOB_USER = "tfdesk-job"
OFF = ("", "-", "none", "off")
BASE_PATH = "/usr/local/bin:/usr/bin:/bin"
# Variables of tfdesk's own environment a job may inherit (locale, time zone, temp dir). The
# job kinds add what they need (TF_CONFIG, TFDESK_EPOCHS, CUDA_VISIBLE_DEVICES...).
INHERITED = ("LANG", "LC_ALL", "TZ")  # not TMPDIR: a sandbox has its own /tmp
NEVER = ("SLACK_", "TFDESK_CONFIG", "TFDESK_HOME", "AWS_", "KUBECONFIG")
SECRET_SUFFIXES = ("", "-wal", "-shm", "-journal")
PR_SET_DUMPABLE = 4


@dataclass(frozen=True)
class JobUser:
    name: str
    uid: int
    gid: int


def job_env(workdir: Path, python: Path | str | None = None,
            extra: dict[str, str] | None = None) -> dict[str, str]:
    """The one environment builder for a job's processes (and its supervisor): the runner's
    bin folder first on PATH when ``python`` is given, HOME and Keras' settings in the job
    folder, unbuffered output; ``extra`` (what a job kind adds: TF_CONFIG, TFDESK_EPOCHS,
    CUDA_VISIBLE_DEVICES...) may not smuggle tfdesk's variables back in."""
    workdir = Path(workdir)
    path = BASE_PATH if python is None else f"{Path(python).parent}:{BASE_PATH}"
    env = {"PATH": path, "HOME": str(workdir), "LANG": "C.UTF-8", "PYTHONUNBUFFERED": "1",
           "TF_CPP_MIN_LOG_LEVEL": "2", "MPLBACKEND": "Agg", "TFDESK_WORKDIR": str(workdir),
           # Keras writes its settings under KERAS_HOME (default ~/.keras).
           "KERAS_HOME": str(workdir / ".keras")}
    env.update({k: os.environ[k] for k in INHERITED if k in os.environ})
    for key, value in (extra or {}).items():
        if not key.startswith(NEVER):
            env[key] = str(value)
    return env


def clean_env(home: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """:func:`job_env` without a runner (kept for callers that name it so)."""
    return job_env(home, None, extra)


def _create(name: str) -> str | None:
    useradd = shutil.which("useradd") or "/usr/sbin/useradd"
    try:
        subprocess.run([useradd, "--system", "--user-group", "--no-create-home",
                        "--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin", name],
                       check=True, capture_output=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as exc:
        detail = getattr(exc, "stderr", b"") or b""
        return f"could not create user {name!r}: {detail.decode(errors='replace').strip() or exc}"
    return None


def resolve_user(setting: str | None) -> tuple[JobUser | None, str]:
    """The job user a root tfdesk drops to in the sandbox, and one sentence saying so; when
    tfdesk is not root, None: the sandbox runs jobs as tfdesk's own uid in a user namespace,
    where tfdesk's files are not mounted."""
    me = pwd.getpwuid(os.geteuid()).pw_name
    if os.geteuid() != 0:
        return None, (f"tfdesk runs as {me}, not root: sandboxed jobs keep uid {os.geteuid()} "
                      "inside a user namespace, where tfdesk's files are not mounted")
    name = DEFAULT_JOB_USER if setting is None else str(setting).strip()
    if name.lower() in OFF:
        return None, "[runner] user is off, and a root tfdesk never runs jobs as root"
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        problem = _create(name)
        if problem:
            return None, problem
        entry = pwd.getpwnam(name)
    if entry.pw_uid == 0:
        return None, f"[runner] user {name!r} is root, and a root tfdesk never runs jobs as root"
    return JobUser(name, entry.pw_uid, entry.pw_gid), f"local jobs run as {name} (uid {entry.pw_uid})"


def protect_files(*paths: Path) -> None:
    """Secrets on disk readable by tfdesk's user only (SQLite's side files included)."""
    for path in paths:
        for suffix in SECRET_SUFFIXES:
            p = Path(str(path) + suffix)
            try:
                if p.is_file() and not p.is_symlink() and stat.S_IMODE(p.stat().st_mode) & 0o077:
                    os.chmod(p, 0o600)
            except OSError as exc:
                log.warning("could not make %s private: %s", p, exc)


def protect_process() -> None:
    """Not dumpable: processes of the same user cannot read this one's memory or
    ``/proc/<pid>/environ`` (where tokens passed in the environment stay readable)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    except (OSError, AttributeError):
        pass
