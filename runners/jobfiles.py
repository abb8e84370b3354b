"""Reading a job folder as tfdesk: never through a link the job planted.

A job folder belongs to the job user once the job starts. tfdesk reads it only after every job
process is gone, and then only through these functions, which open through the file gate
(core/filegate.py ``open_beneath``: each component opened relative to the one before with
``O_NOFOLLOW``), so a link anywhere in the path is refused rather than followed, and walks
never descend into links. tfdesk never writes into a job folder after the job started (its
own files live in the job's record folder, runners/local.py ``records``).
"""
from __future__ import annotations

import os
import stat
from pathlib import Path, PurePosixPath
from typing import Any, Iterator

from core.filegate import GateRefused, open_beneath


class LinkRefused(OSError):
    """A path inside a job folder named a link, a special file, or left the folder."""


def _parts(rel: str | Path) -> list[str]:
    # Stricter than the gate's own name rule: an absolute name is refused, not read below.
    parts = PurePosixPath(str(rel)).parts
    if not parts or parts[0] == "/" or any(p in ("..", ".", "") for p in parts):
        raise LinkRefused(f"{rel!s}: not a plain path inside the job folder")
    return list(parts)


def _open(workdir: Path | str, rel: str | Path):
    """The gate's Opened for ``rel`` below ``workdir``; LinkRefused for what it refuses,
    FileNotFoundError when a component is missing."""
    try:
        return open_beneath(workdir, _parts(rel), str(rel))
    except GateRefused as exc:
        raise LinkRefused(f"{exc}; tfdesk does not follow links in a job folder") from None


def open_job_file(workdir: Path | str, rel: str | Path, max_bytes: int | None = None):
    """The regular file ``rel`` inside ``workdir``, opened for binary reading without
    following a link at any component; raises :class:`LinkRefused` or OSError."""
    opened = _open(workdir, rel)
    if opened.is_dir:
        opened.close()
        raise LinkRefused(f"{rel!s} is not a regular file")
    os.set_blocking(opened.fd, True)
    return os.fdopen(opened.fd, "rb")


def plain(workdir: Path | str, rel: str | Path) -> bool:
    """Is ``rel`` a plain path in ``workdir``: no link at any component, a regular file or a
    folder at the end? (What a job kind lists as artifacts must be, whoever listed it.)"""
    try:
        _open(workdir, rel).close()
        return True
    except OSError:
        return False


def read_job_text(workdir: Path | str, rel: str | Path, max_bytes: int = 1 << 24) -> str:
    with open_job_file(workdir, rel) as f:
        return f.read(max_bytes).decode("utf-8", errors="replace")


def walk(workdir: Path | str) -> Iterator[tuple[str, os.stat_result]]:
    """(relative path, lstat) of every regular file and folder below ``workdir``; links and
    special files are skipped, never followed."""
    root = str(workdir)
    for here, dirs, files, dir_fd in os.fwalk(root, follow_symlinks=False):
        rel_here = os.path.relpath(here, root)
        for name in sorted(dirs + files):
            try:
                st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode):
                yield (name if rel_here == "." else f"{rel_here}/{name}"), st


def collect_artifacts(workdir: Path) -> list[dict[str, Any]]:
    """Everything the job wrote in its folder, a SavedModel folder as one entry; hidden
    entries (tools' caches and settings) and the script tfdesk wrote are left out."""
    entries = dict(walk(workdir))
    saved = sorted(rel.rsplit("/", 1)[0] if "/" in rel else "" for rel in entries
                   if rel.endswith("saved_model.pb") and Path(rel).name == "saved_model.pb")
    saved = [s for s in saved if s]
    out: list[dict[str, Any]] = []
    for rel, st in entries.items():
        parts = rel.split("/")
        if any(p.startswith(".") for p in parts) or (len(parts) == 1 and rel.startswith("script")):
            continue
        inside = next((s for s in saved if rel == s or rel.startswith(s + "/")), None)
        if inside is not None:
            if rel == inside:
                size = sum(e.st_size for r, e in entries.items()
                           if r.startswith(inside + "/") and stat.S_ISREG(e.st_mode))
                out.append({"path": rel, "size": size, "kind": "saved_model"})
            continue
        if stat.S_ISREG(st.st_mode):
            out.append({"path": rel, "size": st.st_size, "kind": kind_of(parts[-1])})
    return sorted(out, key=lambda a: a["path"])


ARTIFACT_KINDS = [  # (suffixes or name parts, kind), first match wins
    ((".keras", ".h5"), "model"),
    ((".index", ".ckpt", "checkpoint"), "checkpoint"),
    ((".csv", ".json"), "metrics"),
    ((".onnx", ".plan", ".engine"), "model"),
    ((".png", ".svg"), "chart"),
]


def kind_of(name: str) -> str:
    for marks, kind in ARTIFACT_KINDS:
        if any(name.endswith(m) or m in name.split(".data-")[0] for m in marks):
            return kind
    if ".data-" in name:
        return "checkpoint"
    return "file"
