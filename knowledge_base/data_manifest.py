"""The manifest of the knowledge base's shipped data files (``data/MANIFEST.yaml``): what each
is, whether tfdesk reads it at run time, which command writes it, from what, and its sha256."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).parent
MANIFEST = ROOT / "data" / "MANIFEST.yaml"
DATA_DIRS = ("data", "qa/data")


@dataclass(frozen=True)
class Entry:
    path: str          # relative to knowledge_base/
    purpose: str
    use: str           # "runtime (...)" or "build-only (...)"
    written_by: str
    inputs: tuple[str, ...]
    sha256: str


@dataclass(frozen=True)
class Problem:
    kind: str          # unlisted, missing, checksum, incomplete
    path: str
    detail: str

    def __str__(self) -> str:
        return f"{self.path}: {self.detail}"


def entries(path: Path = MANIFEST) -> list[Entry]:
    doc = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    return [Entry(e["path"], str(e.get("purpose", "")), str(e.get("use", "")),
                  str(e.get("written_by", "")), tuple(e.get("inputs") or ()),
                  str(e.get("sha256") or "")) for e in doc.get("files") or []]


def shipped(root: Path = ROOT, manifest: Path = MANIFEST) -> set[str]:
    """Every file in the data directories (the manifest itself aside)."""
    return {p.relative_to(root).as_posix() for d in DATA_DIRS for p in (root / d).rglob("*")
            if p.is_file() and p != manifest and "__pycache__" not in p.parts}


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def problems(root: Path = ROOT, manifest: Path = MANIFEST) -> list[Problem]:
    listed = {e.path: e for e in entries(manifest)}
    out = [Problem("unlisted", p, "shipped but not in the manifest: add an entry")
           for p in sorted(shipped(root, manifest) - set(listed))]
    for path, e in sorted(listed.items()):
        f = root / path
        if not f.is_file():
            out.append(Problem("missing", path, "listed but not shipped"))
            continue
        if not (e.purpose and e.use.startswith(("runtime", "build-only")) and e.written_by):
            out.append(Problem("incomplete", path, "needs purpose, use (runtime or "
                               "build-only) and written_by"))
        digest = sha256(f)
        if digest != e.sha256:
            out.append(Problem("checksum", path, f"sha256 {digest} but the manifest says "
                               f"{e.sha256 or 'nothing'}: the file changed; re-run "
                               "'python -m tools.data_manifest --update' and say why in the "
                               "commit"))
    return out
