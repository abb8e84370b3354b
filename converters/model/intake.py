"""Take a user's model (folder, .zip, .tar.gz, .keras, .h5) safely onto disk and identify it.

Archives come from strangers (Slack uploads), so extraction refuses anything that could
write outside the target (absolute paths, ``..``, links, devices) and stops at limits on
total size, file count and compression ratio (zip bombs). Sizes are counted while
streaming, because the sizes an archive declares can lie.
"""
from __future__ import annotations

import json
import shutil
import stat
import tarfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO, Any

from packaging.version import InvalidVersion, Version

from converters.model import model_safety
from converters.model.errors import (MissingVariables, NotAModel, ProducerTooNew,
                                     UnsafeArchive)
from converters.model.savedmodel_pb import VARIABLE_OPS, parse_saved_model, serving_meta

CHUNK = 1 << 20
HDF5_MAGIC = b"\x89HDF\r\n\x1a\n"


@dataclass(frozen=True)
class Limits:
    max_total_bytes: int = 4 << 30
    max_files: int = 10_000
    # Model weights barely compress; anything far above this is a bomb. Small files are
    # exempt because a few KiB of zeros legitimately compress a lot.
    max_ratio: float = 200.0
    ratio_min_bytes: int = 1 << 20

    @classmethod
    def from_config(cls, section: dict[str, Any]) -> "Limits":
        keys = {"max_total_bytes", "max_files", "max_ratio", "ratio_min_bytes"}
        return cls(**{k: v for k, v in section.items() if k in keys})


@dataclass
class ModelSource:
    kind: str                 # saved_model | keras | h5
    path: Path                # the SavedModel folder or the model file
    producer: str = ""        # TF (SavedModel) or Keras version that wrote it, if recorded
    info: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "path": str(self.path), "producer": self.producer, **self.info}


def _safe_member_path(name: str, dest: Path) -> Path:
    if not name or "\x00" in name:
        raise UnsafeArchive(f"archive entry with an empty or invalid name: {name!r}")
    p = PurePosixPath(name.replace("\\", "/"))
    if p.is_absolute() or (p.parts and p.parts[0].endswith(":")):
        raise UnsafeArchive(f"archive entry {name!r} has an absolute path; refusing to extract")
    if ".." in p.parts:
        raise UnsafeArchive(f"archive entry {name!r} points outside the archive (..); refusing")
    target = (dest / Path(*p.parts)).resolve() if p.parts else dest.resolve()
    if not target.is_relative_to(dest.resolve()):
        raise UnsafeArchive(f"archive entry {name!r} escapes the target folder; refusing")
    return target


class _Budget:
    def __init__(self, limits: Limits, dest: Path, archive_bytes: int):
        self.limits, self.archive_bytes = limits, max(archive_bytes, 1)
        self.total = self.files = 0
        self.dest = dest.resolve()
        self.dirs: set[Path] = set()

    def add_entry(self, target: Path, is_dir: bool = False) -> None:
        """Files and folders both count, folders made implicitly by a deep path too: 20,000
        empty folders cost inodes and time like 20,000 files."""
        new = [] if is_dir else [target]
        for d in ([target] if is_dir else []) + list(target.parents):
            if d == self.dest or not d.is_relative_to(self.dest):
                break
            if d in self.dirs:
                break
            self.dirs.add(d)
            new.append(d)
        self.files += len(new)
        if self.files > self.limits.max_files:
            raise UnsafeArchive(f"archive has more than {self.limits.max_files} entries (files "
                                f"and folders); refusing (limit max_files)")

    def add_bytes(self, name: str, n: int, entry_written: int, entry_compressed: int | None):
        self.total += n
        if self.total > self.limits.max_total_bytes:
            raise UnsafeArchive(f"archive expands past {self.limits.max_total_bytes} bytes "
                                f"(at {name!r}); refusing (limit max_total_bytes)")
        if self.total >= self.limits.ratio_min_bytes:
            ratio = self.total / self.archive_bytes
            if ratio > self.limits.max_ratio:
                raise UnsafeArchive(f"archive expands {ratio:.0f}x its size (at {name!r}): "
                                    f"looks like a zip bomb; refusing (limit max_ratio "
                                    f"{self.limits.max_ratio:g})")
        if entry_compressed is not None and entry_written >= self.limits.ratio_min_bytes:
            ratio = entry_written / max(entry_compressed, 1)
            if ratio > self.limits.max_ratio:
                raise UnsafeArchive(f"entry {name!r} expands {ratio:.0f}x: looks like a zip "
                                    f"bomb; refusing (limit max_ratio {self.limits.max_ratio:g})")


def _stream(src: IO[bytes], target: Path, name: str, budget: _Budget,
            compressed: int | None) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    written = 0
    with open(target, "wb") as out:
        while chunk := src.read(CHUNK):
            written += len(chunk)
            budget.add_bytes(name, len(chunk), written, compressed)
            out.write(chunk)


def extract_zip(archive: Path, dest: Path, limits: Limits) -> None:
    budget = _Budget(limits, dest, archive.stat().st_size)
    try:
        zf = zipfile.ZipFile(archive)
    except zipfile.BadZipFile as exc:
        raise NotAModel(f"{archive.name} is not a readable zip archive ({exc})") from None
    with zf:
        for info in zf.infolist():
            target = _safe_member_path(info.filename, dest)
            mode = info.external_attr >> 16
            if stat.S_ISLNK(mode):
                raise UnsafeArchive(f"archive entry {info.filename!r} is a symbolic link; "
                                    "links are not accepted in model archives")
            if info.is_dir():
                budget.add_entry(target, is_dir=True)
                target.mkdir(parents=True, exist_ok=True)
                continue
            # Zips from many tools carry permission bits only (no file type): that is a file.
            if stat.S_IFMT(mode) and not stat.S_ISREG(mode):
                raise UnsafeArchive(f"archive entry {info.filename!r} is not a regular file")
            budget.add_entry(target)
            with zf.open(info) as src:
                _stream(src, target, info.filename, budget, info.compress_size)


def extract_tar(archive: Path, dest: Path, limits: Limits) -> None:
    budget = _Budget(limits, dest, archive.stat().st_size)
    try:
        tf = tarfile.open(archive, mode="r:*")
    except (tarfile.TarError, OSError) as exc:
        raise NotAModel(f"{archive.name} is not a readable tar archive ({exc})") from None
    with tf:
        # Iterating (not getmembers()) streams: a bomb is caught before it is all read.
        for m in tf:
            target = _safe_member_path(m.name, dest)
            if m.issym() or m.islnk():
                raise UnsafeArchive(f"archive entry {m.name!r} is a link; links are not "
                                    "accepted in model archives")
            try:  # the standard library's own verdict too (PEP 706 "data" filter)
                tarfile.data_filter(m, str(dest))
            except tarfile.FilterError as exc:
                raise UnsafeArchive(f"archive entry {m.name!r} refused: {exc}") from None
            if m.isdir():
                budget.add_entry(target, is_dir=True)
                target.mkdir(parents=True, exist_ok=True)
                continue
            if not m.isfile():
                raise UnsafeArchive(f"archive entry {m.name!r} is a device, fifo or other "
                                    "special file; refusing")
            budget.add_entry(target)
            src = tf.extractfile(m)
            with src:
                _stream(src, target, m.name, budget, None)


def archive_kind(path: Path) -> str | None:
    name = path.name.lower()
    if name.endswith(".keras"):
        return None                      # a .keras file is a zip, but it is a model file
    if zipfile.is_zipfile(path):
        return "zip"
    if name.endswith((".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tar.xz")) or _is_tar(path):
        return "tar"
    return None


def _is_tar(path: Path) -> bool:
    try:
        return tarfile.is_tarfile(path)
    except OSError:
        return False


def extract(archive: Path, dest: Path, limits: Limits = Limits()) -> Path:
    """Extract safely into ``dest`` (created, must be empty); on refusal nothing is left."""
    dest.mkdir(parents=True, exist_ok=True)
    if any(dest.iterdir()):
        raise ValueError(f"{dest} is not empty")
    kind = archive_kind(archive)
    try:
        if kind == "zip":
            extract_zip(archive, dest, limits)
        elif kind == "tar":
            extract_tar(archive, dest, limits)
        else:
            raise NotAModel(f"{archive.name} is not a zip or tar archive")
    except BaseException:
        shutil.rmtree(dest, ignore_errors=True)
        raise
    return dest


def _find_saved_model(root: Path, max_depth: int = 3) -> Path | None:
    hits = sorted((p.parent for p in root.rglob("saved_model.pb")
                   if len(p.relative_to(root).parts) <= max_depth + 1),
                  key=lambda p: len(p.parts))
    return hits[0] if hits else None


def _find_model_file(root: Path) -> Path | None:
    files = [p for p in root.rglob("*") if p.is_file() and p.suffix.lower() in (".keras", ".h5", ".hdf5")]
    return files[0] if len(files) == 1 else None


def check_variables(folder: Path, ops: set[str]) -> None:
    var_dir = folder / "variables"
    index = var_dir / "variables.index"
    needs = bool(ops & VARIABLE_OPS)
    if not index.is_file():
        if needs:
            raise MissingVariables(
                f"the SavedModel's graph holds variables but {folder.name}/variables/"
                "variables.index is missing: upload the whole SavedModel folder "
                "(saved_model.pb together with its variables/ folder)")
        return
    shards = sorted(var_dir.glob("variables.data-*-of-*"))
    if not shards:
        raise MissingVariables(f"{folder.name}/variables/ has an index but no "
                               "variables.data-* shard: the weights are missing")
    expected = int(shards[0].name.rsplit("-of-", 1)[1])
    if len(shards) != expected:
        raise MissingVariables(f"{folder.name}/variables/ has {len(shards)} of {expected} "
                               "weight shards: the upload is incomplete")


def _mm(v: str) -> tuple[int, int] | None:
    try:
        rel = Version(v).release
    except InvalidVersion:
        return None
    return (rel + (0, 0))[:2]


def check_producer(producer: str, runner: str | None, what: str = "TensorFlow") -> None:
    """A model written by a newer (major, minor) than the runner may use ops it lacks."""
    if not producer or not runner:
        return
    p, r = _mm(producer), _mm(runner)
    if p and r and p > r:
        raise ProducerTooNew(
            f"this model was written by {what} {producer}, newer than the runner's "
            f"{what} {runner}; it may use ops or formats the runner cannot load. "
            f"Convert it on a runner with {what} >= {p[0]}.{p[1]}, or re-export it with "
            f"{what} {r[0]}.{r[1]}", producer=producer, runner=runner)


def identify(path: Path, runner_tf: str | None = None,
             runner_keras: str | None = None, allow_code: bool = False) -> ModelSource:
    """What is at ``path`` (an extracted folder or a model file), checked without TF. Models
    that would run code or touch files are refused unless ``allow_code`` (model_safety.py)."""
    path = Path(path)
    if path.is_file():
        head = path.read_bytes()[:8]
        if path.suffix.lower() == ".keras" or (zipfile.is_zipfile(path) and _keras_meta(path)):
            meta = _keras_meta(path)
            if meta is None:
                raise NotAModel(f"{path.name} is not a Keras v3 model file "
                                "(no metadata.json / config.json inside)")
            producer = str(meta.get("keras_version", ""))
            check_producer(producer, runner_keras, "Keras")
            code = model_safety.check_keras(path, "keras", allow_code)
            return ModelSource("keras", path, producer, {"keras_metadata": meta,
                                                         **_allowed(code)})
        if head == HDF5_MAGIC:
            code = model_safety.check_keras(path, "h5", allow_code)
            return ModelSource("h5", path, info=_allowed(code))
        raise NotAModel(f"{path.name} is not a model: expected a SavedModel folder or archive, "
                        "a .keras file or an HDF5 (.h5) Keras model")
    if not path.is_dir():
        raise NotAModel(f"{path} does not exist")
    folder = _find_saved_model(path)
    if folder is None:
        model_file = _find_model_file(path)
        if model_file is not None:
            return identify(model_file, runner_tf, runner_keras, allow_code)
        raise NotAModel(f"no saved_model.pb found in {path.name}: not a SavedModel "
                        "(expected saved_model.pb and a variables/ folder)")
    meta = serving_meta(parse_saved_model(folder))
    check_variables(folder, meta.ops)
    check_producer(meta.tensorflow_version, runner_tf)
    unsafe = model_safety.check_saved_model(folder, meta.ops, allow_code)
    return ModelSource("saved_model", folder, meta.tensorflow_version, {
        "tags": meta.tags, "ops": sorted(meta.ops),
        "signatures": {k: s.to_dict() for k, s in meta.signatures.items()},
        **_allowed(sorted(unsafe))})


def _allowed(found: list[str]) -> dict[str, Any]:
    """Recorded in the job spec: the worker loads such a model with safe mode off."""
    return {"allow_code": True, "code_found": found} if found else {}


def _keras_meta(path: Path) -> dict | None:
    try:
        with zipfile.ZipFile(path) as zf:
            names = set(zf.namelist())
            if "metadata.json" not in names or "config.json" not in names:
                return None
            with zf.open("metadata.json") as f:
                return json.loads(f.read(1 << 20))
    except (zipfile.BadZipFile, json.JSONDecodeError, OSError):
        return None


def intake(src: Path, workdir: Path, limits: Limits = Limits(), runner_tf: str | None = None,
           runner_keras: str | None = None, allow_code: bool = False) -> ModelSource:
    """Folder or model file: used where it is. Archive: extracted into ``workdir/source``."""
    src = Path(src)
    if not src.exists():
        raise NotAModel(f"{src} does not exist")
    if src.is_file() and archive_kind(src):
        return identify(extract(src, workdir / "source", limits), runner_tf, runner_keras,
                        allow_code)
    return identify(src, runner_tf, runner_keras, allow_code)
