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
                self.home / "catalog", self.home / "slack")

    def upload_owner(self, key: str) -> str | None:
        try:
            meta = json.loads((self.uploads / key / "upload.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return meta.get("user") if isinstance(meta, dict) else None

    def upload_file(self, key: str) -> Path | None:
        try:
            meta = json.loads((self.uploads / key / "upload.json").read_text(encoding="utf-8"))
            return self.uploads / key / meta["name"]
        except (OSError, ValueError, KeyError, TypeError):
            return None


JobOwner = Callable[[str], "str | None"]


def may_read(actor: Actor, real: Path, areas: Areas, job_owner: JobOwner) -> bool:
    """May a remote ``actor`` read the resolved path ``real``? Their own outputs, uploads and
    job folders (an admin: anyone's), never the folders holding them."""
    if real.is_relative_to(areas.outputs(actor.id)):
        return True
    for root, owner in ((areas.uploads, areas.upload_owner), (areas.jobs, job_owner),
                        (areas.outputs_root, lambda _: None)):
        if real.is_relative_to(root) and real != root:
            first = real.relative_to(root).parts[0]
            if root == areas.jobs and not JOB_ID.match(first):
                return False  # engine scratch (pipeline steps): nobody's to name
            return actor.is_admin or owner(first) == actor.id
    return False


CatalogModel = Callable[[str], "str | None"]


def readable(actor: Actor, value: str, areas: Areas, job_owner: JobOwner,
             names_ok: bool = False, catalog: CatalogModel | None = None) -> str:
    """The server path a remote ``actor`` means by ``value``: their own file, or (``names_ok``)
    the files of the catalog model named so; a URI comes back unchanged. Raises PathRefused
    for anything else."""
    if value.startswith("file://"):
        value = value[len("file://"):]
    elif "://" in value:
        return value  # s3://, pvc://: not a file here
    p = Path(value)
    candidates: list[Path] = []
    if p.is_absolute():
        candidates.append(p)
    elif value and not value.startswith("~") and ".." not in p.parts:
        first, rest = p.parts[0], p.parts[1:]
        if JOB_ID.match(first):
            candidates.append(areas.jobs / value)
        if first == "outputs" and rest:
            candidates.append(areas.outputs(actor.id).joinpath(*rest))
        if UPLOAD_KEY.match(first) and (areas.uploads / first / "upload.json").is_file():
            candidates.append(areas.uploads.joinpath(first, *rest) if rest
                              else areas.upload_file(first) or areas.uploads / first)
        if not rest:
            candidates += own_uploads_named(actor, first, areas)
            candidates.append(areas.outputs(actor.id) / first)
    for c in candidates:
        real = c.resolve()
        if real.exists() and may_read(actor, real, areas, job_owner):
            return str(real)
    if names_ok and catalog is not None:
        found = catalog(value)
        if found:
            return found  # a catalog model ("resnet:3"): shared for everyone to read
    raise PathRefused(REFUSED.format(value=value))


def own_uploads_named(actor: Actor, name: str, areas: Areas) -> list[Path]:
    """The actor's uploads with this file name, newest first."""
    found = []
    try:
        keys = list(os.scandir(areas.uploads))
    except OSError:
        return []
    for entry in keys:
        f = Path(entry.path) / name
        if f.exists() and areas.upload_owner(entry.name) == actor.id:
            found.append((f.stat().st_mtime, f))
    return [f for _, f in sorted(found, reverse=True)]


def writable(actor: Actor, value: str, areas: Areas) -> str:
    """Where a file a remote ``actor`` asks to write goes: always their own output folder."""
    p = Path(value)
    if p.is_absolute():
        real = p.resolve()
        if real.is_relative_to(areas.outputs(actor.id).resolve()) and \
                real != areas.outputs(actor.id).resolve():
            return str(real)
        raise PathRefused(f"{value!r}: from Slack, outputs go to your own output folder; name "
                          "a file (e.g. -o train_hvd.py) and find it later as outputs/NAME")
    parts = p.parts[1:] if p.parts[:1] == ("outputs",) else p.parts
    base = areas.outputs(actor.id)
    out = base.joinpath(*parts).resolve() if parts else base
    if ".." in p.parts or not out.is_relative_to(base.resolve()) or out == base.resolve():
        raise PathRefused(f"{value!r} leaves your output folder; name a file in it "
                          "(e.g. -o train_hvd.py)")
    return str(out)


def outside_job_folders(value: str, areas: Areas) -> None:
    """Job folders are written by the job engine only, whoever asks."""
    real = Path(value).expanduser().resolve()
    if real.is_relative_to(areas.jobs):
        raise PathRefused(f"{value!r} is inside tfdesk's job folders, which only the job "
                          "engine writes; choose another place")


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
