"""Keeping members' code away from tfdesk's secrets on the tfdesk machine.

A local job's code (and its supervisor) starts with a clean environment: an allow-list, never
tfdesk's own variables (``SLACK_*`` tokens, config paths). When tfdesk runs as root, jobs run
as an unprivileged user (``[runner] user``, ``tfdesk-job`` by default, created when missing):
that user cannot read tfdesk's processes (``/proc/<pid>/environ``), its state database or its
config (mode 0600). When that is not possible (tfdesk is not root, or the job's interpreter or
folder is out of that user's reach), jobs run as tfdesk's own user and tfdesk says so.

Job folders: the folder itself stays root's, group-writable by the job user and sticky (the
job can create files but cannot replace ``job.log`` or ``.tfdesk/``, which tfdesk reads); what
the engine wrote into it is handed to the job user.
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
INHERITED = ("LANG", "LC_ALL", "TZ", "TMPDIR")
NEVER = ("SLACK_", "TFDESK_CONFIG", "TFDESK_HOME", "AWS_", "KUBECONFIG")
SECRET_SUFFIXES = ("", "-wal", "-shm", "-journal")
PR_SET_DUMPABLE = 4


@dataclass(frozen=True)
class JobUser:
    name: str
    uid: int
    gid: int


def clean_env(home: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment a supervisor starts with; ``extra`` may not smuggle secrets back in."""
    env = {"PATH": BASE_PATH, "HOME": str(home), "LANG": "C.UTF-8"}
    env.update({k: os.environ[k] for k in INHERITED if k in os.environ})
    for key, value in (extra or {}).items():
        if not key.startswith(NEVER):
            env[key] = value
    return env


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
    """The user local jobs run as, and one sentence saying so (for the start-up log)."""
    me = pwd.getpwuid(os.geteuid()).pw_name
    if os.geteuid() != 0:
        return None, (f"local jobs run as {me}, tfdesk's own user (tfdesk is not root, so it "
                      "cannot switch users): a job can read tfdesk's state database, config "
                      "and environment; run tfdesk as root or send jobs to Kubernetes")
    name = DEFAULT_JOB_USER if setting is None else str(setting).strip()
    if name.lower() in OFF:
        return None, ("local jobs run as root ([runner] user is off): a job can read every "
                      "secret of tfdesk")
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        problem = _create(name)
        if problem:
            return None, f"local jobs run as root: {problem}"
        entry = pwd.getpwnam(name)
    if entry.pw_uid == 0:
        return None, f"local jobs run as root: [runner] user {name!r} is root"
    return JobUser(name, entry.pw_uid, entry.pw_gid), f"local jobs run as {name} (uid {entry.pw_uid})"


def _interpreters(path: str) -> list[str]:
    """``path`` and, for a script, the interpreter its ``#!`` line names."""
    out = [path]
    try:
        with open(path, "rb") as f:
            first = f.readline(256)
    except OSError:
        return out
    if first.startswith(b"#!"):
        parts = first[2:].decode(errors="replace").split()
        if parts:
            out.append(parts[0])
    return out


def unreachable(user: JobUser, executables: list[str], cwd: Path) -> str | None:
    """The first of ``executables`` (or ``cwd``) the job user cannot use, else None. Asked of
    the kernel as that user: permissions of every parent folder count (a Python under /root
    is out of reach)."""
    files = [f for e in executables for f in _interpreters(e)]
    script = 'cd "$1" || { echo "$1"; exit 1; }; shift; ' \
             'for f; do [ -x "$f" ] || { echo "$f"; exit 1; }; done'
    try:
        done = subprocess.run(["/bin/sh", "-c", script, "sh", str(cwd), *files],
                              user=user.uid, group=user.gid, extra_groups=[],
                              env={"PATH": BASE_PATH}, capture_output=True, timeout=30,
                              cwd="/")
    except (OSError, subprocess.SubprocessError) as exc:
        return f"(could not check: {exc})"
    return done.stdout.decode(errors="replace").strip() or None if done.returncode else None


def hand_over(workdir: Path, user: JobUser, tfdesk_owned: tuple[str, ...]) -> None:
    """Give the job user its folder, keeping ``tfdesk_owned`` entries (log, metadata) where
    the job cannot replace them (sticky folder owned by tfdesk, group-writable by the job)."""
    workdir = Path(workdir)
    for root, dirs, files in os.walk(workdir):
        here = Path(root)
        for name in dirs + files:
            path = here / name
            if here == workdir and name in tfdesk_owned:
                continue
            os.lchown(path, user.uid, user.gid)
    os.chown(workdir, 0, user.gid)
    os.chmod(workdir, 0o1770)
    for name in tfdesk_owned:
        path = workdir / name
        if path.is_symlink():
            path.unlink()
        if path.is_dir():
            os.chown(path, 0, user.gid)
            os.chmod(path, 0o1770)
            for child in path.iterdir():
                if not child.is_symlink():
                    os.chown(child, 0, user.gid)
                    os.chmod(child, 0o640 if child.is_file() else 0o750)
        elif path.exists():
            os.chown(path, 0, user.gid)
            os.chmod(path, 0o660)  # the supervisor (the job user) appends the output


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
