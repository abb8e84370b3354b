"""Files a Slack member may name, where what they write goes, and how answers show paths.

A member never names a server path: they name their uploads (file name or Slack file id),
their outputs (``outputs/NAME``), their jobs' files (``j-1a2b3c4d/out/model.onnx``) or
catalog entries. What a command writes for them lands in their own output folder; job folders
are written by the job engine only. Answers going to Slack show these same relative names,
never an absolute path on the tfdesk machine.
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from bot.permissions import Actor
from core import filegate as gate

JOB_ID = re.compile(r"^j-[0-9a-f]{4,32}$")
UPLOAD_KEY = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
REFUSED = ("{value!r} is not a file shared with tfdesk here: share the file in this "
           "conversation, or name one of your uploads, outputs (outputs/NAME), job files "
           "(JOB-ID/PATH) or a catalog entry, instead of a path on the tfdesk machine")


class PathRefused(Exception):
    user_facing = True


def jobs_dir(config) -> Path:
    """Where job folders live ([jobs] dir, relative to TFDESK_HOME)."""
    d = Path(config.section("jobs").get("dir") or "jobs").expanduser()
    return d if d.is_absolute() else config.home / d


def _user_dir(user: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", user)[:64] or "_"


@dataclass(frozen=True)
class Areas:
    """The folders tfdesk fills itself."""
    home: Path
    jobs: Path

    @classmethod
    def of(cls, config) -> "Areas":
        return cls(Path(config.home).resolve(), jobs_dir(config).resolve())

    @property
    def uploads(self) -> Path:
        return self.home / "slack" / "uploads"

    @property
    def outputs_root(self) -> Path:
        return self.home / "slack" / "outputs"

    def outputs(self, user: str) -> Path:
        return self.outputs_root / _user_dir(user)

    def own_folders(self) -> tuple[Path, ...]:
        """Folders that are tfdesk's own: never registered, written or deleted by a member."""
        return (self.home, self.jobs, self.uploads, self.outputs_root,
                self.home / "catalog", self.home / "slack", self.gate, self.kept)

    def upload_owner(self, key: str) -> str | None:
        try:
            meta = json.loads((self.uploads / key / "upload.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return meta.get("user") if isinstance(meta, dict) else None

    def upload_name(self, key: str) -> str | None:
        """The member's file in an upload folder (upload.json, written by tfdesk)."""
        try:
            meta = json.loads((self.uploads / key / "upload.json").read_text(encoding="utf-8"))
            name = meta["name"]
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return name if isinstance(name, str) and name and "/" not in name else None

    @property
    def gate(self) -> Path:
        """Private copies of what members and the operator name (bot.paths.read)."""
        return self.home / "gate"

    @property
    def kept(self) -> Path:
        """Private copies a catalog entry points at: kept as long as the entry."""
        return self.home / "catalog" / "files"


JobOwner = Callable[[str], "str | None"]
CatalogModel = Callable[[str], "str | None"]
# Path arguments that register a place (a dataset's data, a model's files) rather than a file
# the command reads now: they may be a remote URI, and from the terminal, outside tfdesk's own
# folders, they stay where they are (a dataset can be terabytes). (command, argparse dest)
PLACES = {("datasets add", "uri"), ("models add", "path")}
KEEP_DAYS = 7  # private copies a command read; copies a catalog entry points at are kept


@dataclass(frozen=True)
class Candidate:
    """A place a name may mean: ``parts`` beneath ``root``, opened by the gate."""
    root: Path
    parts: tuple[str, ...]
    leaf: str = ""


def _refused(value: str, why: str = "") -> PathRefused:
    text = REFUSED.format(value=value[:200])
    why = why.removeprefix(f"{value!r}: ").removeprefix(f"{value!r} ")  # named once
    return PathRefused(text if not why else text.replace(": share", f" ({why}): share", 1))


def _owned(actor: Actor, owner: str | None) -> bool:
    return actor.is_admin or (owner is not None and owner == actor.id)


def candidates(actor: Actor, value: str, areas: Areas, job_owner: JobOwner) -> list[Candidate]:
    """Where a remote ``actor``'s name may point, by its words alone (nothing resolved): their
    uploads, outputs and jobs (an admin: anyone's), never the folders holding them."""
    if value.startswith("~"):
        return []
    parts = gate.components(value)
    if not parts:
        return []
    if value.startswith("/"):
        return _absolute(actor, Path("/", *parts), areas, job_owner)
    first, rest = parts[0], parts[1:]
    found: list[Candidate] = []
    if JOB_ID.match(first) and _owned(actor, job_owner(first)):
        found.append(Candidate(areas.jobs, parts))
    if first == "outputs" and rest:
        found.append(Candidate(areas.outputs_root, (_user_dir(actor.id), *rest)))
    if UPLOAD_KEY.match(first) and _owned(actor, areas.upload_owner(first)):
        leaf = rest or ((areas.upload_name(first),) if areas.upload_name(first) else ())
        if leaf:
            found.append(Candidate(areas.uploads, (first, *leaf)))
    if not rest:
        found += [Candidate(areas.uploads, (key, first)) for key in own_uploads_named(
            actor, first, areas)]
        found.append(Candidate(areas.outputs_root, (_user_dir(actor.id), first)))
    return found


def _absolute(actor: Actor, p: Path, areas: Areas, job_owner: JobOwner) -> list[Candidate]:
    """An absolute name a member typed: only inside their own things, by the same rules."""
    mine = areas.outputs(actor.id)
    if p.is_relative_to(mine) and p != mine:
        return [Candidate(areas.outputs_root, (_user_dir(actor.id), *p.relative_to(mine).parts))]
    for root, owner in ((areas.uploads, areas.upload_owner), (areas.jobs, job_owner),
                        (areas.outputs_root, lambda _: None)):
        if p.is_relative_to(root) and p != root:
            rel = p.relative_to(root).parts
            if root == areas.jobs and not JOB_ID.match(rel[0]):
                return []  # engine scratch (pipeline steps): nobody's to name
            if root == areas.uploads and len(rel) < 2:
                return []
            return [Candidate(root, rel)] if _owned(actor, owner(rel[0])) else []
    return []


def _open_first(value: str, found: list[Candidate]) -> tuple[gate.Opened, Candidate] | None:
    """Open the first candidate that exists (None: none does). A link or anything odd on the
    way raises GateRefused: the name is refused, not tried elsewhere."""
    for c in found:
        try:
            return gate.open_beneath(c.root, c.parts, value), c
        except FileNotFoundError:
            continue
    return None


def readable(actor: Actor, value: str, areas: Areas, job_owner: JobOwner,
             names_ok: bool = False, catalog: CatalogModel | None = None,
             place: bool = False) -> str:
    """What a remote ``actor`` means by ``value``, opened once through the gate: a private
    copy of their own file (read from the descriptor the gate opened); the files of the
    catalog model named so (``names_ok``); an allowed remote URI (``place``). Raises
    PathRefused for anything else."""
    return read(actor, value, areas, job_owner, names_ok, catalog, place).value


@dataclass(frozen=True)
class Read:
    """What a handler gets for a name: ``value`` (a private copy, a URI, a catalog model's
    files, or, from the terminal, a place outside tfdesk's folders), and the identity of the
    file the gate opened (to keep a command from writing over what it reads)."""
    value: str
    identity: tuple[int, int] | None = None
    copy: Path | None = None  # the private copy's folder, when one was made


def discard(copies: list[Path]) -> None:
    """Remove private copies a command that was refused or failed made: it leaves nothing."""
    import shutil
    for folder in copies:
        shutil.rmtree(folder, ignore_errors=True)


def read(actor: Actor, value: str, areas: Areas, job_owner: JobOwner, names_ok: bool = False,
         catalog: CatalogModel | None = None, place: bool = False, copy: bool = True,
         keep: bool | None = None) -> Read:
    """The gate for one name (see :func:`readable`); ``copy=False`` only checks it. ``keep``
    (default: ``place``): the copy is what a catalog entry will point at, kept with it."""
    if gate.uri_scheme(value) is not None:
        return Read(_uri(value, place, actor.remote))
    try:
        got = (_open_first(value, candidates(actor, value, areas, job_owner)) if actor.remote
               else _terminal_open(value, areas))
    except gate.GateRefused as exc:
        raise _refused(value, str(exc)) if actor.remote else PathRefused(str(exc)) from None
    if got is None:
        model = catalog(value) if names_ok and catalog is not None else None
        if model:
            return Read(model)  # a catalog model ("resnet:3"): shared for everyone to read
        if actor.remote:
            raise _refused(value)
        raise PathRefused(f"no such file: {value}" + (" (nor a catalog model of that name)"
                                                      if names_ok else ""))
    opened, where = got
    with opened:
        if not copy:
            return Read(value, opened.identity)
        if place and not actor.remote and where.root == Path("/"):
            return Read(str(Path("/", *where.parts)), opened.identity)  # the operator's data
        keep = place if keep is None else keep
        store = areas.kept if keep else areas.gate
        if not keep:
            gate.prune(store, KEEP_DAYS * 86400)
        try:
            copy = gate.private_copy(opened, store, where.leaf or where.parts[-1])
        except gate.GateRefused as exc:
            raise (_refused(value, str(exc)) if actor.remote else PathRefused(str(exc))) \
                from None
        return Read(str(copy), opened.identity, copy.parent)


def _uri(value: str, place: bool, remote: bool) -> str:
    """A URI is data elsewhere, never a local path; only where a command registers a place."""
    try:
        uri = gate.remote_uri(value)
        if not place:
            raise gate.GateRefused(f"{value[:120]!r}: this command reads a file here, not a URI")
    except gate.GateRefused as exc:
        raise _refused(value, str(exc)) if remote else PathRefused(str(exc)) from None
    return uri


def _terminal_open(value: str, areas: Areas) -> tuple[gate.Opened, Candidate] | None:
    """The operator's name: their own links outside tfdesk's folders are theirs to follow;
    inside tfdesk's folders (jobs write there) nothing is followed, as for a member; tfdesk's
    own folders, and folders holding them, are nobody's to name."""
    if not value or "\x00" in value:
        raise gate.GateRefused("a file name cannot be empty or hold a NUL character")
    try:
        os.fsencode(value)
    except UnicodeError:
        raise gate.GateRefused(f"{value[:120]!r} is not a valid file name") from None
    lexical = Path(os.path.abspath(Path(value).expanduser()))
    real = Path(os.path.realpath(lexical))
    for own in areas.own_folders():
        if any(own.is_relative_to(p) for p in (lexical, real)):
            raise gate.GateRefused(f"{value} is (or holds) tfdesk's own folder {own.name}/; "
                                   "name a file or folder inside it")
    for where in (lexical, real):
        for root in (areas.jobs, areas.home):
            if where.is_relative_to(root):
                return _open_first(value, [Candidate(root, where.relative_to(root).parts)])
    # Resolved just now, so a link met on the way was swapped in since: refused.
    return _open_first(value, [Candidate(Path("/"), real.parts[1:])])


def own_uploads_named(actor: Actor, name: str, areas: Areas) -> list[str]:
    """The keys of the actor's uploads holding a file of this name, newest first."""
    found = []
    try:
        keys = list(os.scandir(areas.uploads))
    except OSError:
        return []
    for entry in keys:
        if not UPLOAD_KEY.match(entry.name) or areas.upload_owner(entry.name) != actor.id:
            continue
        try:
            st = os.lstat(Path(entry.path) / name)
        except (OSError, ValueError):
            continue
        found.append((st.st_mtime, entry.name))
    return [k for _, k in sorted(found, reverse=True)]


def writable(actor: Actor, value: str, areas: Areas) -> str:
    """Where a file a remote ``actor`` asks to write goes: always their own output folder,
    its folders made without following a link, never over a link."""
    if "\x00" in value:
        raise PathRefused("a file name cannot hold a NUL character")
    if value.startswith("/"):
        mine = areas.outputs(actor.id)
        p = Path(os.path.normpath(value))
        if not p.is_relative_to(mine) or p == mine or ".." in Path(value).parts:
            raise PathRefused(f"{value!r}: from Slack, outputs go to your own output folder; "
                              "name a file (e.g. -o train_hvd.py) and find it later as "
                              "outputs/NAME")
        value = str(p.relative_to(mine))
    try:
        parts = gate.components(value)
    except gate.GateRefused as exc:
        raise PathRefused(f"{value!r} leaves your output folder ({exc}); name a file in it "
                          "(e.g. -o train_hvd.py)") from None
    if parts[:1] == ("outputs",):
        parts = parts[1:]
    if not parts or gate.uri_scheme(value) is not None:
        raise PathRefused(f"{value!r} leaves your output folder; name a file in it "
                          "(e.g. -o train_hvd.py)")
    user = _user_dir(actor.id)
    try:
        gate.make_dirs_beneath(areas.home, ("slack", "outputs", user, *parts[:-1]))
        gate.refuse_link_at(areas.outputs_root, (user, *parts))
    except gate.GateRefused as exc:
        raise PathRefused(str(exc)) from None
    return str(areas.outputs(actor.id).joinpath(*parts))


def outside_job_folders(value: str, areas: Areas) -> None:
    """Job folders are written by the job engine only, whoever asks."""
    p = Path(os.path.abspath(Path(value).expanduser()))
    if any(x.is_relative_to(areas.jobs) for x in (p, Path(os.path.realpath(p)))):
        raise PathRefused(f"{value!r} is inside tfdesk's job folders, which only the job "
                          "engine writes; choose another place")


def not_an_input(value: str, inputs: list[tuple[int, int]]) -> None:
    """A command never writes over a file it reads (``convert x.py -o x.py``)."""
    try:
        st = os.stat(value)
    except OSError:
        return
    if (st.st_dev, st.st_ino) in inputs:
        raise PathRefused(f"{value!r} is a file this command reads; write to another path so "
                          "the original is kept")


# -- answers: no server paths ----------------------------------------------------------------
ABS_PATH = re.compile(r"(?<![\w.:/~\\-])/(?:[^\s'\"`<>|,;()\[\]{}*]+)")


def public_path(path: str, areas: Areas) -> str:
    """How a server path reads in Slack: relative to the folder a member knows it by."""
    p = Path(path)
    for root, prefix in ((areas.jobs, ""), (areas.uploads, ""), (areas.outputs_root, "outputs/"),
                         (areas.home, "")):
        if p.is_relative_to(root) and p != root:
            rel = p.relative_to(root)
            if root == areas.outputs_root:
                rel = Path(*rel.parts[1:]) if len(rel.parts) > 1 else Path(".")
            return prefix + str(rel)
    # Elsewhere, only what is a path on this machine: "/tf help" is a command, and a path a
    # member's own script names ("/data/train.npz") is their code, shown as written.
    if len(p.parts) > 2 and os.path.exists(path):
        return p.name
    return path


def public(obj: Any, areas: Areas) -> Any:
    """``obj`` (text, or the JSON-like structure of a message) without absolute server paths."""
    if isinstance(obj, str):
        return ABS_PATH.sub(lambda m: public_path(m.group(0), areas), obj) if "/" in obj else obj
    if isinstance(obj, dict):
        return {k: public(v, areas) for k, v in obj.items()}
    if isinstance(obj, list):
        return [public(v, areas) for v in obj]
    if isinstance(obj, tuple):
        return tuple(public(v, areas) for v in obj)
    return obj
