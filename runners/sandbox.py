"""The sandbox every local job runs in: bubblewrap (Debian's ``bubblewrap``) around the job.

What a job sees and may do, enforced here and nowhere else:

- its own PID, IPC, UTS, cgroup and mount namespaces, and (``network = "none"``, the default)
  its own network namespace with only a loopback, shared by all of the job's processes, so
  two workers (Horovod gloo, tf.distribute) still connect on localhost;
- a file system built from an allow-list: ``/usr`` and a few files of ``/etc`` read-only, the
  runtime (the runner environment and its base Python, resolved from the interpreter once)
  read-only at the same paths, the code a job kind names read-only, the job's inputs (the
  dataset or model it was given, checked at submit by runners/inputs.py) read-only at their
  own paths, fresh ``/proc``, ``/dev``,
  ``/tmp`` and ``/dev/shm`` (size-capped), and its job folder, the only writable place.
  tfdesk's home (state database, config), other jobs, uploads and outputs are not mounted;
- an unprivileged uid: when tfdesk is root, bubblewrap runs as root only to build the
  namespaces and ``setpriv`` drops to the job user (no capabilities, no new privileges)
  before the job's first instruction, and a second, unprivileged bubblewrap gives the job its
  own user namespace with further ones disabled; otherwise bubblewrap runs unprivileged in a
  user namespace as tfdesk's own user, with further user namespaces disabled;
- rlimits (:class:`Limits`): CPU time, address space, processes, file size, open files. The
  supervisor (supervise.py) adds the wall clock, the job folder's size and the output cap.

No sandbox, no local job: :func:`probe` says why one cannot be built, and the local backend
refuses jobs with that reason unless the operator sets ``[runner] unsandboxed = true``.
"""
from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from runners.models import JobError

BWRAP = "bwrap"
SETPRIV = "/usr/bin/setpriv"
# Files of /etc a job may read: the dynamic loader, names of users and hosts, TLS roots, time
# zone. Nothing else of /etc (an operator's tfdesk.toml there stays out of sight).
ETC = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "passwd", "group", "hosts", "host.conf",
       "nsswitch.conf", "resolv.conf", "gai.conf", "protocols", "services", "ssl",
       "ca-certificates", "ca-certificates.conf", "localtime", "timezone", "alternatives",
       "mime.types", "os-release")
NETWORKS = ("none", "host")
SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*$", re.I)
UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_size(value: Any, key: str) -> int:
    """``8G``, ``512M``, ``1048576`` -> bytes; 0 means no limit."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return int(value)
    m = SIZE.match(str(value))
    if not m:
        raise JobError(f"[runner.limits] {key} = {value!r} is not a size (e.g. 512M, 8G)")
    return int(float(m.group(1)) * UNITS[m.group(2).lower()])


def _memory() -> int:
    """The default address-space limit: the machine's memory; none where NVIDIA GPUs are
    (CUDA reserves far more address space than it uses, and fails under such a limit)."""
    if any(Path("/dev").glob("nvidia[0-9]*")):
        return 0
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return 16 << 30


@dataclass(frozen=True)
class Limits:
    """Per-job limits (``[runner.limits]``); 0 means none. Defaults: a job may use the
    machine's memory but not more (no address-space limit on a GPU machine), 2 days of CPU per process, 4096 processes and threads of
    the job user, 16 GiB per file and 64 GiB in its folder, 8 MiB of output kept (head 6 MiB,
    tail 2 MiB), 256 MiB each for /tmp and /dev/shm."""
    cpu_seconds: int = 2 * 86400
    memory: int = field(default_factory=_memory)  # address space per process
    processes: int = 4096                          # RLIMIT_NPROC: the job user's tasks
    file_size: int = 16 << 30
    open_files: int = 4096
    disk: int = 64 << 30                           # the job folder, checked every second
    disk_reserve: int = 1 << 30                    # free space the job must leave on its disk
    output_head: int = 6 << 20
    output_tail: int = 2 << 20
    tmp: int = 256 << 20

    @classmethod
    def from_settings(cls, section: dict[str, Any] | None) -> "Limits":
        section = dict(section or {})
        known = {f for f in cls.__dataclass_fields__}
        unknown = sorted(set(section) - known)
        if unknown:
            raise JobError(f"unknown [runner.limits] setting(s): {', '.join(unknown)}; "
                           f"known: {', '.join(sorted(known))}")
        values = {}
        for key, value in section.items():
            values[key] = int(value) if key in ("cpu_seconds", "processes", "open_files") \
                else parse_size(value, key)
            if values[key] < 0:
                raise JobError(f"[runner.limits] {key} cannot be negative")
        return cls(**values)

    def rlimits(self) -> dict[str, list[int]]:
        """resource.RLIMIT_* names -> [soft, hard], for the supervisor (stdlib only) to
        apply. CPU: SIGXCPU at the limit (it says why), SIGKILL a second later."""
        pairs = {"RLIMIT_CPU": [self.cpu_seconds, self.cpu_seconds + 1],
                 "RLIMIT_AS": [self.memory] * 2, "RLIMIT_NPROC": [self.processes] * 2,
                 "RLIMIT_FSIZE": [self.file_size] * 2, "RLIMIT_NOFILE": [self.open_files] * 2,
                 "RLIMIT_CORE": [0, 0]}
        return {k: v for k, v in pairs.items() if v[0] or k == "RLIMIT_CORE"}

    def to_dict(self) -> dict[str, int]:
        return asdict(self)


@dataclass(frozen=True)
class Identity:
    """Who the job's processes are: the job user under a root tfdesk, else tfdesk's own uid."""
    uid: int
    gid: int
    name: str


@dataclass(frozen=True)
class Sandbox:
    """How jobs are wrapped on this machine (built once per backend, from ``[runner]``)."""
    identity: Identity
    limits: Limits
    network: str = "none"
    bwrap: str = BWRAP
    # Under a root tfdesk: after dropping to the job user, a second, unprivileged bubblewrap
    # puts the job in its own user namespace and disables further ones (where the kernel lets
    # unprivileged users make user namespaces; see LocalBackend).
    userns: bool = True

    def wrap(self, workdir: Path, programs: list[str], code: list[Path],
             files: dict[str, Path] | None = None, inputs: list[Path] = ()) -> list[str]:
        """The command prefix that runs a command in this job's sandbox; ``files`` maps paths
        inside the sandbox to files bound read-only there (the launcher, its plan);
        ``inputs``: the job's read-only inputs, checked at submit (runners/inputs.py), bound
        at their own paths."""
        workdir = Path(workdir)
        inputs = [Path(p) for p in inputs]
        for p in inputs:  # checked at submit; a stored spec is not trusted to widen the view
            if not p.is_absolute() or p == Path("/") or workdir.is_relative_to(p):
                raise JobError(f"input {p} cannot be shown to a job")
        argv = [self.bwrap, "--unshare-pid", "--unshare-ipc", "--unshare-uts",
                "--unshare-cgroup-try", "--die-with-parent", "--new-session",
                "--hostname", "localhost"]  # gloo resolves its host name: /etc/hosts has it
        if self.network == "none":
            argv.append("--unshare-net")
        rootless = os.geteuid() != 0
        if rootless:
            argv += ["--unshare-user", "--disable-userns"]
        argv += _system_mounts(self.limits.tmp)
        seen: set[str] = set()
        binds: list[list[str]] = []
        for root in [*runtime_roots(tuple(programs)), *map(Path, code)]:
            if str(root) not in seen and not _covered(root, seen):
                seen.add(str(root))
                binds.append(["--ro-bind", str(root), str(root)])
        binds += [["--ro-bind", str(p), str(p)] for p in inputs]
        for inside, outside in (files or {}).items():
            binds.append(["--ro-bind", str(outside), inside])
        binds.append(["--bind", str(workdir), str(workdir)])
        # Folders on the way to each mount, made traversable (bubblewrap makes them 0700).
        for parent in sorted({str(a) for b in binds for a in Path(b[2]).parents}
                             - {"/", "/tmp", "/usr", "/dev"}, key=len):
            if not any(parent == b[2] or parent.startswith(b[2] + "/") for b in binds):
                argv += ["--perms", "0755", "--dir", parent]
        for b in binds:
            argv += b
        argv += ["--chdir", str(workdir), "--"]
        if not rootless:  # drop to the job user before the job's first instruction
            argv += [SETPRIV, "--reuid", str(self.identity.uid), "--regid",
                     str(self.identity.gid), "--clear-groups", "--inh-caps=-all",
                     "--bounding-set=-all", "--no-new-privs", "--"]
            if self.userns:  # the same view, in a user namespace that can make no other
                argv += [self.bwrap, "--unshare-user", "--disable-userns", "--die-with-parent",
                         "--dev-bind", "/", "/", "--chdir", str(workdir), "--"]
        return argv

    def hand_over(self, workdir: Path) -> None:
        """The job folder becomes the job user's (tfdesk wrote it before the job starts and
        touches it again only after every job process is gone)."""
        if os.geteuid() != 0:
            return
        for root, dirs, files, dir_fd in os.fwalk(workdir, follow_symlinks=False):
            for name in dirs + files:
                os.chown(name, self.identity.uid, self.identity.gid, dir_fd=dir_fd,
                         follow_symlinks=False)
        os.chown(workdir, self.identity.uid, self.identity.gid, follow_symlinks=False)
        os.chmod(workdir, 0o700)


def _covered(path: Path, seen: set[str]) -> bool:
    return any(Path(path).is_relative_to(s) for s in seen) or Path(path).is_relative_to("/usr")


def _system_mounts(tmp: int) -> list[str]:
    argv = ["--ro-bind", "/usr", "/usr"]
    for name in ("bin", "sbin", "lib", "lib64", "lib32", "libx32"):
        p = Path("/") / name
        if p.is_symlink():
            argv += ["--symlink", os.readlink(p), str(p)]
        elif p.is_dir():
            argv += ["--ro-bind", str(p), str(p)]
    argv += ["--perms", "0755", "--dir", "/etc"]  # bubblewrap would make it 0700
    for name in ETC:
        argv += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    argv += ["--proc", "/proc", "--dev", "/dev"]
    # NVIDIA GPUs, when the machine has them: their device nodes, and /sys read-only for the
    # driver's topology queries (CUDA_VISIBLE_DEVICES still decides what a job uses).
    gpus = sorted(str(p) for p in Path("/dev").glob("nvidia*") if not p.is_dir())
    for dev in gpus:
        argv += ["--dev-bind", dev, dev]
    if gpus:
        argv += ["--ro-bind", "/sys", "/sys"]
    for where in ("/tmp", "/dev/shm"):
        argv += ["--perms", "1777"] + (["--size", str(tmp)] if tmp else []) + ["--tmpfs", where]
    return argv


@functools.lru_cache(maxsize=64)
def runtime_roots(programs: tuple[str, ...]) -> tuple[Path, ...]:
    """The folders a job's programs need read-only: for each program under a virtual
    environment, that environment and its base Python (``pyvenv.cfg`` ``home``), followed
    through the interpreter's links; for a script, the interpreter its ``#!`` names. Resolved
    once per interpreter (cached)."""
    out: list[Path] = []
    todo = list(programs)
    while todo:
        prog = Path(todo.pop())
        if not prog.is_absolute():
            continue
        todo += _shebang(prog)
        for candidate in _link_chain(prog):
            venv = candidate.parent.parent
            if (venv / "pyvenv.cfg").is_file():
                out.append(venv)
                home = _pyvenv_home(venv / "pyvenv.cfg")
                if home:
                    todo.append(str(Path(home) / "python3"))
            elif candidate.parent.name == "bin":
                out.append(venv)
    return tuple(dict.fromkeys(p for p in out if p != Path("/")))


def _link_chain(path: Path) -> list[Path]:
    """``path`` and every path its links lead through, to the real file: each hop's folder
    must be in the sandbox for the link to resolve there."""
    chain, seen = [path], set()
    while chain[-1].is_symlink() and str(chain[-1]) not in seen and len(chain) < 40:
        seen.add(str(chain[-1]))
        chain.append(chain[-1].parent / os.readlink(chain[-1]))
    return [*chain, path.resolve()]


def _shebang(path: Path) -> list[str]:
    try:
        with open(path, "rb") as f:
            first = f.readline(256)
    except OSError:
        return []
    if first.startswith(b"#!"):
        parts = first[2:].decode(errors="replace").split()
        return parts[:1]
    return []


def _pyvenv_home(cfg: Path) -> str | None:
    for line in cfg.read_text(errors="replace").splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "home":
            return value.strip()
    return None


def identity(user) -> Identity:
    """The sandbox's identity from the resolved job user (isolation.resolve_user)."""
    if os.geteuid() == 0:
        if user is None:
            raise JobError("tfdesk runs as root and has no job user to run jobs as")
        return Identity(user.uid, user.gid, user.name)
    import pwd
    return Identity(os.geteuid(), os.getegid(), pwd.getpwuid(os.geteuid()).pw_name)


def probe(sandbox: Sandbox) -> str | None:
    """Why a job sandbox cannot be built on this machine (None: it can): bubblewrap missing,
    user namespaces off for a non-root tfdesk, setpriv missing..."""
    if shutil.which(sandbox.bwrap) is None:
        return (f"bubblewrap ({sandbox.bwrap}) is not installed; install it with "
                "'make system-deps' (Debian package bubblewrap)")
    if os.geteuid() == 0 and not Path(SETPRIV).exists():
        return f"{SETPRIV} (util-linux) is missing, so jobs cannot drop to the job user"
    scratch = Path("/tmp")
    argv = sandbox.wrap(scratch, [], []) + ["/usr/bin/id", "-u"]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"bubblewrap could not start: {exc}"
    if done.returncode != 0:
        return f"bubblewrap could not build a sandbox: {done.stderr.strip()[-300:]}"
    if done.stdout.strip() != str(sandbox.identity.uid):
        return f"the sandbox ran as uid {done.stdout.strip()}, not {sandbox.identity.uid}"
    return None


def check_runtime(python: str, user_setting: str | None = None) -> str:
    """Run ``python`` in a job sandbox as the job user and return what it says of itself:
    proof that the runtime ``make runner-env`` built is whole and readable there. Raises
    JobError with the reason when it is not."""
    import tempfile

    from runners.isolation import job_env, resolve_user
    box = Sandbox(identity(resolve_user(user_setting)[0]), Limits())
    problem = probe(box)
    if problem:
        raise JobError(f"no job sandbox can be built here: {problem}")
    code = ("import os, sys; print(f'{sys.executable} runs as uid {os.getuid()} in a job sandbox "
            "(Python {sys.version.split()[0]})')")
    with tempfile.TemporaryDirectory(prefix="tfdesk-check-") as tmp:
        box.hand_over(Path(tmp))
        done = subprocess.run(box.wrap(Path(tmp), [python], []) + [python, "-c", code],
                              capture_output=True, text=True, timeout=120,
                              env=job_env(Path(tmp), python), stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        raise JobError(f"{python} does not start in a job sandbox as "
                       f"{box.identity.name}: {done.stderr.strip()[-500:]}")
    return done.stdout.strip()


if __name__ == "__main__":  # python -m runners.sandbox PYTHON...: make runner-env's last check
    import sys
    try:
        for interpreter in sys.argv[1:]:
            print(check_runtime(str(Path(interpreter).absolute())))
    except JobError as exc:
        sys.exit(f"error: {exc}")
