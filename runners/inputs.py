"""A job's read-only inputs: the files and folders outside its job folder that it is given to
read (a registered dataset, a catalog model, a file the operator named for it).

The invariant, enforced here at submit time and nowhere else: a job sees, read-only, exactly
the inputs it was given, and an input is only ever something its asker may read:

- a Slack member may give only the local paths of catalog entries (a :class:`Grant` with
  ``roots``); the terminal's operator may name any path (``anywhere``);
- never tfdesk's own folders (its home: state, config, uploads, private copies; the job
  folders), nor a folder holding one of them (``forbidden``), whoever asks.

Each input is resolved (links followed, once, here) and stored in the job's spec as ``inputs``;
the local sandbox binds exactly these read-only at the same paths (sandbox.py), and nothing
else of the machine.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from runners.models import JobError


@dataclass(frozen=True)
class Grant:
    """What an asker may give a job to read. The default grants nothing."""
    roots: tuple[Path, ...] = ()        # these paths and what lies beneath them
    anywhere: bool = False              # the machine's operator (terminal)
    forbidden: tuple[Path, ...] = ()    # tfdesk's folders: never, whoever asks
    # Folders inside a forbidden one whose catalog entries (``roots``) may be given: the
    # catalog's stores in tfdesk's home, one entry at a time, never the folder itself.
    shareable: tuple[Path, ...] = ()
    # Where job folders live: an entry of a job's folder (a catalog model a job made) is
    # given as a private copy, read without following links, bound at the entry's own path.
    jobs: Path | None = None

    def of_engine(self, jobs: Path, home: Path) -> "Grant":
        """This grant with the engine's own folders: never given, job entries copied."""
        return Grant(self.roots, self.anywhere, (*self.forbidden, Path(jobs), Path(home)),
                     self.shareable, Path(jobs))


JOB_FOLDER = re.compile(r"^j-[0-9a-f]{4,32}$")


def _real(value: str) -> Path:
    return Path(os.path.realpath(os.path.expanduser(value)))


def _beneath(path: Path, root: Path) -> bool:
    return path == root or path.is_relative_to(root)


def resolve(raw: Iterable[str] | None, grant: Grant) -> tuple[str, ...]:
    """The inputs as the job will see them (real, absolute paths, each once), or JobError
    saying which one is refused and why."""
    out: list[str] = []
    if isinstance(raw, (str, bytes)):
        raw = [raw]
    forbidden = [_real(str(f)) for f in grant.forbidden]
    roots = [_real(str(r)) for r in grant.roots]
    shareable = [_real(str(f)) for f in grant.shareable]
    for value in raw or ():
        value = os.fsdecode(value) if isinstance(value, bytes) else value
        if not isinstance(value, str) or not value or "\x00" in value:
            raise JobError(f"input {value!r} is not a file name")
        if not os.path.isabs(os.path.expanduser(value)):
            raise JobError(f"input {value!r} is not an absolute path")
        copied = _in_job_folder(value, grant)
        if copied is not None:
            if copied not in out:
                out.append(copied)
            continue
        real = _real(value)
        shared = any(real != f and real.is_relative_to(f) for f in shareable) and \
            any(_beneath(real, r) for r in roots)  # a catalog entry, whoever asks
        for own in forbidden:
            if _beneath(own, real) or (_beneath(real, own) and not shared):
                raise JobError(f"input {value!r} is refused: it is (or holds, or lies in) "
                               f"tfdesk's own folder {own}, which no job may see")
        if not grant.anywhere and not any(_beneath(real, r) for r in roots):
            raise JobError(f"input {value!r} is refused: you may give a job only catalog "
                           "datasets and models you can read (name them), not a path on "
                           "the tfdesk machine")
        if not real.exists():
            raise JobError(f"input {value!r} does not exist")
        if str(real) not in out:
            out.append(str(real))
    return tuple(out)


def _in_job_folder(value: str, grant: Grant) -> str | None:
    """``value`` as an entry of a job's folder (checked by its words alone: nothing in a job
    folder is followed), or None when it lies elsewhere."""
    if grant.jobs is None:
        return None
    lexical = Path(os.path.normpath(os.path.abspath(os.path.expanduser(value))))
    for root in dict.fromkeys((Path(os.path.abspath(grant.jobs)), _real(str(grant.jobs)))):
        if lexical.is_relative_to(root):
            break
    else:
        return None
    parts = lexical.relative_to(root).parts
    if len(parts) < 2 or not JOB_FOLDER.match(parts[0]):
        raise JobError(f"input {value!r} is refused: of tfdesk's job folders only a file or "
                       "folder inside a job's own folder may be given")
    entry = _real(str(grant.jobs)).joinpath(*parts)
    roots = [Path(os.path.normpath(os.path.abspath(r))) for r in grant.roots]
    if not grant.anywhere and not any(_beneath(lexical, r) or _beneath(entry, r) for r in roots):
        raise JobError(f"input {value!r} is refused: you may give a job only catalog "
                       "datasets and models you can read (name them), not a path on "
                       "the tfdesk machine")
    return str(entry)


def place(inputs: list[str], jobs: Path, workdir: Path) -> dict[str, Any]:
    """What a job's stored spec says of its inputs: ``inputs`` (all, in order) and
    ``input_copies``: private copies of those in job folders, made in ``workdir/.inputs``
    (read through descriptors, links refused: core/filegate.py), input -> its copy relative
    to ``workdir``. The sandbox binds each copy read-only at the input's own path."""
    return {"inputs": list(inputs), "input_copies": _copies(inputs, jobs, workdir)}


def _copies(inputs: list[str], jobs: Path, workdir: Path) -> dict[str, str]:
    from core import filegate
    jobs, out = _real(str(jobs)), {}
    for value in inputs:
        if not Path(value).is_relative_to(jobs):
            continue
        parts = Path(value).relative_to(jobs).parts
        try:
            with filegate.open_beneath(jobs, parts, value) as opened:
                copy = filegate.private_copy(opened, Path(workdir) / ".inputs", parts[-1])
        except FileNotFoundError:
            raise JobError(f"input {value!r} does not exist") from None
        except filegate.GateRefused as exc:
            raise JobError(f"input {value!r} is refused: {exc}") from None
        out[value] = str(copy.relative_to(workdir))
    return out


def on_shared_volume(inputs: Iterable[str], settings: dict) -> None:
    """A cluster job reads its inputs from the shared volume ([kubernetes] pvc, mounted here
    at ``pvc_local_path``); an input elsewhere is refused before any pod starts."""
    local = settings.get("pvc_local_path")
    volume = _real(str(local)) if settings.get("pvc") and local else None
    for value in inputs or ():
        if volume is None or not _beneath(_real(value), volume):
            where = f"the shared volume ({local})" if volume else \
                "a shared volume (set pvc and pvc_local_path under [kubernetes])"
            raise JobError(f"input {value} is not on {where}, so the cluster cannot read it; "
                           "copy it there first, or run the job locally")
