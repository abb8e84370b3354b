"""Reading a job folder as tfdesk: never through a link the job planted.

A job folder belongs to the job user once the job starts. tfdesk reads it only after every job
process is gone, and then only through these functions: each path component is opened
relative to the previous one with ``O_NOFOLLOW`` (``openat``-style), so a link anywhere in
the path is refused rather than followed, and walks never descend into links. tfdesk never
writes into a job folder after the job started (its own files live in the job's record
folder, runners/local.py ``records``).
"""
from __future__ import annotations

import os
import stat
from pathlib import Path, PurePosixPath
from typing import Any, Iterator

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK


class LinkRefused(OSError):
    """A path inside a job folder named a link, a special file, or left the folder."""


def _parts(rel: str | Path) -> list[str]:
    parts = PurePosixPath(str(rel)).parts
    if not parts or parts[0] == "/" or any(p in ("..", ".", "") for p in parts):
        raise LinkRefused(f"{rel!s}: not a plain path inside the job folder")
    return list(parts)


def open_job_file(workdir: Path | str, rel: str | Path, max_bytes: int | None = None):
    """The regular file ``rel`` inside ``workdir``, opened for binary reading without
    following a link at any component; raises :class:`LinkRefused` or OSError."""
    parts = _parts(rel)
    fd = os.open(workdir, DIR_FLAGS)
    try:
        for name in parts[:-1]:
            nxt = os.open(name, DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = nxt
        try:
            ffd = os.open(parts[-1], FILE_FLAGS, dir_fd=fd)
        except OSError as exc:
            if exc.errno == 40:  # ELOOP: the last component is a link
                raise LinkRefused(f"{rel!s} is a link; tfdesk does not follow links in a job folder") from None
            raise
    finally:
        os.close(fd)
    st = os.fstat(ffd)
    if not stat.S_ISREG(st.st_mode):
        os.close(ffd)
        raise LinkRefused(f"{rel!s} is not a regular file")
    os.set_blocking(ffd, True)
    return os.fdopen(ffd, "rb")


def plain(workdir: Path | str, rel: str | Path) -> bool:
    """Is ``rel`` a plain path in ``workdir``: no link at any component, a regular file or a
    folder at the end? (What a job kind lists as artifacts must be, whoever listed it.)"""
    try:
        parts = _parts(rel)
    except LinkRefused:
        return False
    fd = os.open(workdir, DIR_FLAGS)
    try:
        for name in parts:
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            if stat.S_ISDIR(st.st_mode):
                nxt = os.open(name, DIR_FLAGS, dir_fd=fd)
                os.close(fd)
                fd = nxt
            elif not (stat.S_ISREG(st.st_mode) and name == parts[-1]):
                return False
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


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
