"""Getting a KB onto disk: from the shipped compact extract (``kb load``) or from wheels
(``kb build``: download through pip, extract each release once, merge)."""
from __future__ import annotations

import hashlib
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Callable, Sequence

from packaging.version import InvalidVersion, Version

from knowledge_base import popularity
from knowledge_base.builder import DerivedIndex, build_kb, merge, read_merged, write_merged
from knowledge_base.errors import KBError
from knowledge_base.records import ReleaseExtract
from knowledge_base.store import FORMAT_VERSION

SHIPPED_EXTRACT = Path(__file__).parent / "data" / "kb-extract.jsonl.xz"
Progress = Callable[[str, int | None, int | None], None]


def file_sha(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()[:16]


def load_shipped(kb_path: Path, extract: Path = SHIPPED_EXTRACT, force: bool = False,
                 progress: Progress | None = None, *,
                 indexes: Sequence[DerivedIndex]) -> dict:
    """Build the KB from the compact extract unless the KB there already came from it (and
    from the same inputs of ``indexes``, the derived tables the caller wants)."""
    if not extract.is_file():
        raise KBError(f"no shipped extract at {extract}; build from wheels with 'tfdesk kb build'")
    sha = file_sha(extract)
    for path in (p for index in indexes for p in index.inputs()):
        sha += "+" + file_sha(path)
    if kb_path.is_file() and not force:
        try:
            meta = dict(sqlite3.connect(f"file:{kb_path}?mode=ro", uri=True).execute(
                "SELECT key, value FROM meta"))
        except sqlite3.DatabaseError:
            meta = {}
        if (meta.get("source") == f"extract:{sha}" and meta.get("format") == FORMAT_VERSION
                and meta.get("usage") == popularity.usage_sha()):
            return {"skipped": True, "reason": "KB already built from this extract",
                    "path": str(kb_path)}
    if progress:
        progress("loading KB extract", None, None)
    merged = read_merged(extract)
    stats = build_kb(merged, kb_path, progress, meta={"source": f"extract:{sha}"},
                     indexes=indexes)
    return {"skipped": False, "path": str(kb_path), **stats}


def parse_versions(spec: str | None, available: list[str]) -> list[str]:
    """'2.10-2.21', '2.15,2.16', '2.16' or None (all) -> the minors among ``available``."""
    if not spec:
        return list(available)

    def v(s: str) -> Version:
        try:
            return Version(s.strip())
        except InvalidVersion:
            raise KBError(f"not a TensorFlow version: {s!r} (expected like 2.16)") from None

    chosen: list[str] = []
    for part in spec.split(","):
        if "-" in part:
            lo, hi = part.split("-", 1)
            chosen += [a for a in available if v(lo) <= v(a) <= v(hi)]
        else:
            want = ".".join(part.strip().split(".")[:2])
            v(want)
            if want not in available:
                raise KBError(f"TensorFlow {want} is not available; available: "
                              f"{available[0]}–{available[-1]}")
            chosen.append(want)
    if not chosen:
        raise KBError(f"no release matches {spec!r}; available: {available[0]}–{available[-1]}")
    return sorted(set(chosen), key=Version)


def build_from_wheels(versions: list[str], wheel_dir: Path, extract_dir: Path, kb_path: Path,
                      download: bool = True, export: Path | None = None,
                      progress: Progress | None = None, *,
                      indexes: Sequence[DerivedIndex]) -> dict:
    """Extract each release once (cached under ``extract_dir``), then build the KB."""
    from knowledge_base import extract as extractor
    from knowledge_base import wheels as wheelmod

    wheel_dir.mkdir(parents=True, exist_ok=True)
    extract_dir.mkdir(parents=True, exist_ok=True)
    extracts: list[ReleaseExtract] = []
    done: list[dict] = []
    for i, version in enumerate(versions):
        cached = extract_dir / f"{version}.jsonl.gz"
        if progress:
            progress(f"releases: {version}", i, len(versions))
        if cached.is_file():
            try:
                extracts.append(ReleaseExtract.read(cached))
                done.append({"version": version, "extracted": "cached"})
                continue
            except (OSError, ValueError, EOFError):
                cached.unlink()  # a damaged cache is redone, not trusted
        if download:
            rw = wheelmod.download_release_wheels(version, wheel_dir)
        else:
            rw = wheelmod.find_release_wheels(version, wheel_dir)
        ex = extractor.extract_release(rw)
        ex.write(cached)
        extracts.append(ex)
        done.append({"version": version, "extracted": "now", "symbols": len(ex.symbols)})
    # Releases extracted by earlier builds stay in the KB: builds accumulate.
    for cached in sorted(extract_dir.glob("*.jsonl.gz")):
        version = cached.name.removesuffix(".jsonl.gz")
        if version not in versions:
            try:
                extracts.append(ReleaseExtract.read(cached))
                done.append({"version": version, "extracted": "cached (earlier build)"})
            except (OSError, ValueError, EOFError):
                pass
    merged = merge(extracts)
    stats = build_kb(merged, kb_path, progress, meta={"source": "wheels"}, indexes=indexes)
    if export:
        write_merged(merged, export)
        # What derived indexes ship beside the extract (question-search vectors): kb load
        # reuses it.
        with closing(sqlite3.connect(kb_path)) as db:
            for index in indexes:
                index.export(db, export)
        stats["exported"] = str(export)
    return {**stats, "per_release": done}
