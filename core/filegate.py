"""The one file gate: a file someone names is opened once, beneath a root, without links.

Every file a Slack member (or the operator at the terminal) names reaches a handler through
here. The name is split into components; ``..``, NUL and over-long names are refused; each
component is opened relative to the one before (``openat``) with ``O_NOFOLLOW``, so a symbolic
link anywhere below the root — planted before or swapped in while the gate walks — makes the
open fail instead of leading elsewhere. What was opened is checked (a regular file or a folder,
no other names for it), and the caller gets the open descriptor or a private copy made from it,
never a name to open again.

Only an allow-list of remote schemes is a URI (compared case-insensitively), and a URI is never
turned back into a local path: ``file://``, ``FILE://`` and ``x://..`` are refused.

Messages name the file and the reason, never its content.
"""
from __future__ import annotations

import errno
import os
import re
import secrets
import stat
import time
from dataclasses import dataclass
from pathlib import Path

# What tfdesk reads remotely (datasets, models on a cluster volume or object store).
REMOTE_SCHEMES = ("s3", "gs", "pvc")
MAX_NAME = 4096          # PATH_MAX
MAX_COMPONENT = 255      # NAME_MAX, in bytes
MAX_ENTRIES = 100_000    # files and folders in one copied tree
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: a FIFO opens at once (and is then refused) instead of hanging the bot.
LEAF_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
NEW_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_URI_PART = re.compile(r"^[A-Za-z0-9._~/:@!$&'()*+,;=%-]*$")


class GateRefused(Exception):
    """A name the gate will not open, with the reason in words (never the file's content)."""
    user_facing = True


# -- names ---------------------------------------------------------------------------------------
def components(name: str) -> tuple[str, ...]:
    """The components of a relative name; empty and ``.`` components drop out. Refuses ``..``,
    NUL, names too long for the file system, and text that is not a file name here."""
    if not isinstance(name, str) or "\x00" in name:
        raise GateRefused("a file name cannot hold a NUL character")
    if len(name) > MAX_NAME:
        raise GateRefused(f"a file name of {len(name):,} characters is longer than the "
                          f"{MAX_NAME:,} a path may have")
    parts = tuple(p for p in name.split("/") if p not in ("", "."))
    for p in parts:
        if p == "..":
            raise GateRefused(f"{_shown(name)}: '..' is not followed; name the file itself")
        try:
            size = len(os.fsencode(p))
        except UnicodeError:
            raise GateRefused(f"{_shown(name)} is not a valid file name") from None
        if size > MAX_COMPONENT:
            raise GateRefused(f"{_shown(name)}: a part of it is longer than "
                              f"{MAX_COMPONENT} bytes")
    return parts


def _shown(name: str, most: int = 120) -> str:
    """A name as messages show it: quoted, cut, control characters escaped."""
    text = repr(name if len(name) <= most else name[:most] + "…")
    return text


def uri_scheme(value: str) -> str | None:
    """The scheme of ``value`` if it is written as a URI (anything with ``://``), lower-cased;
    None for a plain name. Whether tfdesk reads that scheme is :func:`remote_uri`'s answer."""
    if "://" not in value:
        return None
    return value.split("://", 1)[0].lower()


def remote_uri(value: str) -> str:
    """``value`` as a remote URI tfdesk reads (scheme lower-cased), or GateRefused. Never a
    local path: ``file://`` and every scheme off the allow-list are refused."""
    scheme = uri_scheme(value)
    if scheme is None:
        raise GateRefused(f"{_shown(value)} is not a URI")
    if scheme not in REMOTE_SCHEMES:
        allowed = ", ".join(f"{s}://" for s in REMOTE_SCHEMES)
        raise GateRefused(f"{_shown(value)}: {_shown(scheme)} is not a scheme tfdesk reads "
                          f"(remote data is {allowed}; a file:// URI is never a local path)")
    rest = value.split("://", 1)[1]
    if "\x00" in rest or not _URI_PART.match(rest) or ".." in rest.split("/") or not rest:
        raise GateRefused(f"{_shown(value)} is not a valid {scheme}:// URI (no '..', spaces "
                          "or control characters; bucket or claim first)")
    return f"{scheme}://{rest}"


# -- opening -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Opened:
    """A file or folder the gate opened: the descriptor (the caller closes it), what it is,
    and the name it was asked by (for messages)."""
    fd: int
    name: str
    st: os.stat_result

    @property
    def is_dir(self) -> bool:
        return stat.S_ISDIR(self.st.st_mode)

    @property
    def identity(self) -> tuple[int, int]:
        return self.st.st_dev, self.st.st_ino

    def close(self) -> None:
        try:
            os.close(self.fd)
        except OSError:
            pass

    def __enter__(self) -> "Opened":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def open_beneath(root: str | os.PathLike, parts: tuple[str, ...] | list[str], name: str = "",
                 *, single_link: bool = True) -> Opened:
    """Open ``root/parts...`` without following a link below ``root`` (``root`` itself is
    tfdesk's own setting and opened as it is). Raises FileNotFoundError when a component is
    missing (the caller may try another candidate) and GateRefused for everything else.
    ``single_link``: a regular file with other hard links is refused (it has other names,
    maybe outside the root)."""
    name = name or "/".join(parts)
    for p in parts:
        if p in ("", ".", "..") or "/" in p or "\x00" in p:
            raise GateRefused(f"{_shown(name)}: {_shown(p)} is not a file name")
    dfd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            try:
                fd = os.open(part, LEAF_FLAGS if last else DIR_FLAGS, dir_fd=dfd)
            except OSError as exc:
                _why(exc, dfd, part, name)
            os.close(dfd)
            dfd = fd
        fd, dfd = dfd, -1
    finally:
        if dfd >= 0:
            os.close(dfd)
    st = os.fstat(fd)
    if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
        os.close(fd)
        raise GateRefused(f"{_shown(name)} is not a regular file or a folder")
    if single_link and stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
        os.close(fd)
        raise GateRefused(f"{_shown(name)} has other names (hard links); copy it instead")
    return Opened(fd, name, st)


def _why(exc: OSError, dfd: int, part: str, name: str):
    """Turn a failed component open into the right exception."""
    try:
        link = stat.S_ISLNK(os.lstat(part, dir_fd=dfd).st_mode)
    except OSError:
        link = False
    if link or exc.errno == errno.ELOOP:
        raise GateRefused(f"{_shown(name)} is reached through a link ({_shown(part)}); links "
                          "are not followed") from None
    if exc.errno == errno.ENOENT:
        raise FileNotFoundError(errno.ENOENT, "no such file", name) from None
    if exc.errno == errno.ENOTDIR:
        raise GateRefused(f"{_shown(name)}: {_shown(part)} is not a folder") from None
    if exc.errno in (errno.EACCES, errno.EPERM):
        raise GateRefused(f"{_shown(name)} cannot be read by tfdesk") from None
    if exc.errno == errno.ENAMETOOLONG:
        raise GateRefused(f"{_shown(name)} is too long a name") from None
    raise GateRefused(f"{_shown(name)} cannot be opened ({os.strerror(exc.errno or 0)})") \
        from None


def make_dirs_beneath(root: str | os.PathLike, parts: tuple[str, ...] | list[str],
                      mode: int = 0o700) -> None:
    """``mkdir -p root/parts...`` where no component may be a link (an existing link or file
    is refused, never followed)."""
    dfd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in parts:
            try:
                os.mkdir(part, mode, dir_fd=dfd)
            except FileExistsError:
                pass
            try:
                fd = os.open(part, DIR_FLAGS, dir_fd=dfd)
            except OSError as exc:
                _why(exc, dfd, part, "/".join(parts))
            os.close(dfd)
            dfd = fd
    finally:
        os.close(dfd)


def refuse_link_at(root: str | os.PathLike, parts: tuple[str, ...] | list[str]) -> None:
    """Refuse when ``root/parts`` exists as a link or a folder (a file is written over by
    rename, which replaces a link rather than following it; refusing says so plainly)."""
    try:
        st = os.lstat(os.path.join(root, *parts))
    except FileNotFoundError:
        return
    name = "/".join(parts)
    if stat.S_ISLNK(st.st_mode):
        raise GateRefused(f"{_shown(name)} is a link; tfdesk does not write through links")
    if stat.S_ISDIR(st.st_mode):
        raise GateRefused(f"{_shown(name)} is a folder; name a file")


# -- private copies ------------------------------------------------------------------------------
def private_copy(opened: Opened, store: str | os.PathLike, leaf: str,
                 max_bytes: int | None = None) -> Path:
    """Copy what ``opened`` holds into a fresh folder of ``store`` (created 0700) and return
    the copy's path: ``store/<random>/<leaf>``. A folder is copied whole, refusing any link,
    device or pipe inside it. The copy is read from the descriptor, never by name."""
    leaf = components(leaf)[-1] if leaf else "file"
    Path(store).mkdir(parents=True, exist_ok=True, mode=0o700)
    folder = Path(store) / f"{time.strftime('%Y%m%d')}-{secrets.token_hex(8)}"
    os.mkdir(folder, 0o700)
    budget = _Budget(max_bytes, opened.name)
    dfd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        if opened.is_dir:
            os.mkdir(leaf, 0o700, dir_fd=dfd)
            out = os.open(leaf, DIR_FLAGS, dir_fd=dfd)
            try:
                _copy_tree(opened.fd, out, opened.name, budget)
            finally:
                os.close(out)
        else:
            _copy_file(opened.fd, leaf, dfd, budget)
    finally:
        os.close(dfd)
    return folder / leaf


@dataclass
class _Budget:
    max_bytes: int | None
    name: str
    used: int = 0
    entries: int = 0

    def take(self, size: int, entries: int = 0) -> None:
        self.used += size
        self.entries += entries
        if self.max_bytes is not None and self.used > self.max_bytes:
            raise GateRefused(f"{_shown(self.name)} is larger than the {self.max_bytes:,} "
                              "bytes allowed here")
        if self.entries > MAX_ENTRIES:
            raise GateRefused(f"{_shown(self.name)} holds more than {MAX_ENTRIES:,} files")


def _copy_file(src_fd: int, leaf: str, dest_dfd: int, budget: _Budget) -> None:
    counted = os.fstat(src_fd).st_size
    budget.take(counted, 1)
    out = os.open(leaf, NEW_FLAGS, 0o600, dir_fd=dest_dfd)
    try:
        offset = 0
        while True:
            chunk = os.pread(src_fd, 1 << 20, offset)
            if not chunk:
                break
            offset += len(chunk)
            if offset > counted:  # it grew while being copied: what is read counts
                budget.take(offset - counted)
                counted = offset
            view = memoryview(chunk)
            while view:
                view = view[os.write(out, view):]
    finally:
        os.close(out)


def _copy_tree(src_dfd: int, dest_dfd: int, name: str, budget: _Budget) -> None:
    with os.scandir(src_dfd) as it:
        entries = list(it)
    for entry in entries:
        where = f"{name}/{entry.name}"
        st = entry.stat(follow_symlinks=False)
        if stat.S_ISLNK(st.st_mode):
            raise GateRefused(f"{_shown(where)} is a link; links are not followed or copied")
        try:
            fd = os.open(entry.name, LEAF_FLAGS, dir_fd=src_dfd)
        except OSError as exc:
            _why(exc, src_dfd, entry.name, where)
        try:
            got = os.fstat(fd)
            if stat.S_ISDIR(got.st_mode):
                budget.take(0, 1)
                os.mkdir(entry.name, 0o700, dir_fd=dest_dfd)
                sub = os.open(entry.name, DIR_FLAGS, dir_fd=dest_dfd)
                try:
                    _copy_tree(fd, sub, where, budget)
                finally:
                    os.close(sub)
            elif stat.S_ISREG(got.st_mode):
                _copy_file(fd, entry.name, dest_dfd, budget)
            else:
                raise GateRefused(f"{_shown(where)} is not a regular file or a folder")
        finally:
            os.close(fd)


def prune(store: str | os.PathLike, older_than_s: float) -> int:
    """Remove private copies older than ``older_than_s``; returns how many went."""
    import shutil
    gone = 0
    cutoff = time.time() - older_than_s
    try:
        entries = list(os.scandir(store))
    except OSError:
        return 0
    for e in entries:
        try:
            if e.is_dir(follow_symlinks=False) and e.stat(follow_symlinks=False).st_mtime < cutoff:
                shutil.rmtree(e.path, ignore_errors=True)
                gone += 1
        except OSError:
            continue
    return gone
