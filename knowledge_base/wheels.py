"""Locating and downloading the wheels of one TensorFlow minor release.

A release is the TF wheel (``tensorflow-cpu`` or ``tensorflow``) plus its companions: the
``keras`` wheel that supplies ``tf.keras`` (Keras 2 for 2.6-2.15, the Keras 3 that TF declares
for 2.16+) and ``tensorflow-estimator`` (2.2-2.15). Wheels are fetched with ``pip download``
for a foreign interpreter and platform, so old releases download from any Python here.
"""
from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

from packaging.version import InvalidVersion, Version

from .errors import WheelError

PLATFORMS = ("manylinux2010_x86_64", "manylinux2014_x86_64", "manylinux_2_17_x86_64",
             "manylinux_2_27_x86_64")
FIRST_MINOR = 2        # 2.0 and 2.1 are no longer served
LAST_ESTIMATOR = 15    # tensorflow-estimator ends with 2.15
FIRST_KERAS2 = 6       # keras 2.x wheels split out of TF at 2.6
FIRST_KERAS3 = 16
LAST_TENSORBOARD_SUMMARY = 15  # up to 2.15 tf.summary's writers come from tensorboard

# Wheel file names: distribution-version(-build)?-python-abi-platform.whl
_WHEEL_RE = re.compile(r"^(?P<dist>[A-Za-z0-9_.]+?)-(?P<ver>[^-]+)-.*\.whl$")
_KERAS_REQ_RE = re.compile(r"^Requires-Dist:\s*keras\s*\(?\s*>=\s*(\d+)\.(\d+)", re.M)


@dataclass
class ReleaseWheels:
    version: str                      # minor release, "2.16"
    tf: Path
    keras: Path | None = None
    estimator: Path | None = None
    tf_keras: Path | None = None      # supplies tf.compat.v1.layers/keras from 2.16 on
    tensorboard: Path | None = None   # supplies the TF 2 tf.summary API up to 2.15

    @property
    def minor(self) -> int:
        return minor_of(self.version)


def minor_of(version: str) -> int:
    """2 for "2.2" / "2.2.3"; raises WheelError for anything that is not a TF 2.x version."""
    m = re.fullmatch(r"2\.(\d+)(?:\.\S*)?", version.strip())
    if not m:
        raise WheelError(f"not a TensorFlow 2.x version: {version!r}")
    return int(m.group(1))


def python_for(minor: int) -> str:
    # The newest interpreter every wheel of that release was built for.
    return "3.8" if minor <= 11 else "3.11"


def wheel_version(path: Path) -> tuple[str, Version] | None:
    m = _WHEEL_RE.match(Path(path).name)
    if not m:
        return None
    try:
        return m.group("dist").lower().replace("-", "_"), Version(m.group("ver"))
    except InvalidVersion:
        return None


def _newest(wheel_dir: Path, dists: tuple[str, ...], major: int, minor: int) -> Path | None:
    best: tuple[Version, Path] | None = None
    for p in Path(wheel_dir).glob("*.whl"):
        dv = wheel_version(p)
        if not dv or dv[0] not in dists:
            continue
        v = dv[1]
        if v.release[:2] == (major, minor) and (best is None or v > best[0]):
            best = (v, p)
    return best[1] if best else None


def keras3_minor_required(tf_wheel: Path) -> tuple[int, int] | None:
    """The Keras 3 (major, minor) a TF 2.16+ wheel declares (``Requires-Dist: keras>=3.x``)."""
    meta = read_metadata(tf_wheel)
    m = _KERAS_REQ_RE.search(meta)
    return (int(m.group(1)), int(m.group(2))) if m else None


def read_metadata(wheel: Path) -> str:
    try:
        with zipfile.ZipFile(wheel) as z:
            names = [n for n in z.namelist() if n.endswith(".dist-info/METADATA")]
            if not names:
                raise WheelError(f"{Path(wheel).name}: no .dist-info/METADATA; not a wheel")
            return z.read(names[0]).decode("utf-8", "replace")
    except (zipfile.BadZipFile, OSError, EOFError) as e:
        raise WheelError(f"{Path(wheel).name}: corrupt wheel ({e})") from e


def find_release_wheels(version: str, wheel_dir: Path) -> ReleaseWheels:
    """The already-downloaded wheels of a minor release (newest patch of each)."""
    minor = minor_of(version)
    wheel_dir = Path(wheel_dir)
    tf = _newest(wheel_dir, ("tensorflow_cpu", "tensorflow"), 2, minor)
    if tf is None:
        raise WheelError(f"no TensorFlow 2.{minor} wheel in {wheel_dir}")
    rw = ReleaseWheels(f"2.{minor}", tf)
    if FIRST_KERAS2 <= minor < FIRST_KERAS3:
        rw.keras = _newest(wheel_dir, ("keras",), 2, minor)
    elif minor >= FIRST_KERAS3:
        req = keras3_minor_required(tf)
        if req:
            rw.keras = _newest(wheel_dir, ("keras",), *req)
    if minor <= LAST_ESTIMATOR:
        rw.estimator = _newest(wheel_dir, ("tensorflow_estimator",), 2, minor)
    if minor >= FIRST_KERAS3:
        rw.tf_keras = _newest(wheel_dir, ("tf_keras",), 2, minor)
    if minor <= LAST_TENSORBOARD_SUMMARY:
        rw.tensorboard = _newest(wheel_dir, ("tensorboard",), 2, minor)
    return rw


def _pip_download(pip: list[str], req: str, wheel_dir: Path, py: str) -> None:
    cmd = [*pip, "download", "--no-deps", "--only-binary=:all:", "--python-version", py]
    for plat in PLATFORMS:
        cmd += ["--platform", plat]
    cmd += ["-d", str(wheel_dir), req]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise WheelError(f"pip download {req} failed: {' '.join(tail)}")


def download_release_wheels(version: str, wheel_dir: Path,
                            pip: list[str] | None = None) -> ReleaseWheels:
    """Download (or reuse) the wheels of a minor release into ``wheel_dir``."""
    pip = pip or [sys.executable, "-m", "pip"]
    minor = minor_of(version)
    wheel_dir = Path(wheel_dir)
    wheel_dir.mkdir(parents=True, exist_ok=True)
    py = python_for(minor)
    if _newest(wheel_dir, ("tensorflow_cpu", "tensorflow"), 2, minor) is None:
        try:
            _pip_download(pip, f"tensorflow-cpu~=2.{minor}.0", wheel_dir, py)
        except WheelError:
            _pip_download(pip, f"tensorflow~=2.{minor}.0", wheel_dir, py)
    if minor <= LAST_ESTIMATOR and _newest(wheel_dir, ("tensorflow_estimator",), 2, minor) is None:
        _pip_download(pip, f"tensorflow-estimator~=2.{minor}.0", wheel_dir, py)
    if FIRST_KERAS2 <= minor < FIRST_KERAS3 and _newest(wheel_dir, ("keras",), 2, minor) is None:
        _pip_download(pip, f"keras~=2.{minor}.0", wheel_dir, py)
    # Optional companions: a release without them is still extracted, less those names.
    for dist, wanted in (("tf_keras", minor >= FIRST_KERAS3),
                         ("tensorboard", minor <= LAST_TENSORBOARD_SUMMARY)):
        if wanted and _newest(wheel_dir, (dist,), 2, minor) is None:
            try:
                _pip_download(pip, f"{dist.replace('_', '-')}~=2.{minor}.0", wheel_dir, py)
            except WheelError:
                pass
    if minor >= FIRST_KERAS3:
        tf = _newest(wheel_dir, ("tensorflow_cpu", "tensorflow"), 2, minor)
        req = keras3_minor_required(tf)
        if req and _newest(wheel_dir, ("keras",), *req) is None:
            _pip_download(pip, f"keras~={req[0]}.{req[1]}.0", wheel_dir, "3.11")
    return find_release_wheels(version, wheel_dir)


_VERSIONS_RE = re.compile(r"Available versions:\s*(.+)")


def parse_index_versions(output: str) -> list[str]:
    """Minor releases ("2.2", ...) in the output of ``pip index versions``."""
    minors: set[int] = set()
    for m in _VERSIONS_RE.finditer(output):
        for v in m.group(1).split(","):
            try:
                ver = Version(v.strip())
            except InvalidVersion:
                continue
            if ver.major == 2 and ver.minor >= FIRST_MINOR and not ver.is_prerelease:
                minors.add(ver.minor)
    return [f"2.{n}" for n in sorted(minors)]


def available_versions(pip: list[str] | None = None) -> list[str]:
    """The 2.x minors the registry serves (2.2 .. newest), old ones asked for as Python 3.8."""
    pip = pip or [sys.executable, "-m", "pip"]
    out = []
    for dist in ("tensorflow-cpu", "tensorflow"):
        for py in ("3.8", "3.11"):
            cmd = [*pip, "index", "versions", dist, "--python-version", py,
                   "--only-binary=:all:"]
            for plat in PLATFORMS:
                cmd += ["--platform", plat]
            proc = subprocess.run(cmd, capture_output=True, text=True)
            out.append(proc.stdout)
    versions = parse_index_versions("\n".join(out))
    if not versions:
        raise WheelError("the package index lists no TensorFlow 2.x releases")
    return versions


def local_versions(wheel_dir: Path) -> list[str]:
    """The 2.x minors that have a TensorFlow wheel in ``wheel_dir`` (oldest first)."""
    found: set[str] = set()
    for p in Path(wheel_dir).glob("*.whl"):
        dv = wheel_version(p)
        if dv and dv[0] in ("tensorflow", "tensorflow_cpu") and dv[1].release[0] == 2 and \
                dv[1].release[1] >= FIRST_MINOR:
            found.add(f"2.{dv[1].release[1]}")
    if not found:
        raise WheelError(f"no TensorFlow 2.x wheels in {wheel_dir}")
    return sorted(found, key=minor_of)
