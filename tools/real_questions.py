"""Split collected real users' questions into a held-out set and a training set, by thread.

Real users' questions (issue and forum titles, verbatim, with the answer their thread gives) are
other people's words, so they stay outside the repository (``/tmp/realq`` by default). What the
repository keeps is ``knowledge_base/qa/sets/real_questions_sources.yaml``: for each one its thread URL, the
accepted names and its set, and no wording, so the sets can be collected again from the URLs and
the split is checkable.

Which set a thread falls in is decided by a hash of its URL alone (a third held out), before any
result is seen, so nobody chooses which questions are measured. Entries are checked: every
accepted name must be a KB symbol, a thread counts once, and a question worded like an earlier one
counts once.

Run: ``.venv/bin/python -m tools.real_questions /tmp/realq/pool-*.yaml [--out /tmp/realq]``.
Then ``benchmarks/kb_search.py --real-heldout /tmp/realq/real-heldout.yaml``.
"""
from __future__ import annotations

import argparse
import hashlib
import re
import sys
from pathlib import Path

import yaml

from knowledge_base.builder import read_merged
from knowledge_base.pipeline import SHIPPED_EXTRACT
from knowledge_base.qa import question_sets

ROOT = Path(__file__).resolve().parents[1]
MANIFEST = question_sets.sources()
HELD_OUT_EVERY = 3


def held_out(source: str) -> bool:
    return int(hashlib.sha1(source.encode()).hexdigest(), 16) % HELD_OUT_EVERY == 0


def _norm(q: str) -> str:
    return " ".join(re.findall(r"[a-z0-9_.]+", q.casefold()))


def kb_names(extract: Path = SHIPPED_EXTRACT) -> set[str]:
    """Every symbol the shipped extract holds, read by the KB's own reader of that format."""
    return set(read_merged(extract).spans)


class PoolError(Exception):
    """A pool file that cannot be read as a list of entries: nothing is written."""


def _entries(path: Path) -> list:
    try:
        items = yaml.safe_load(path.read_text(encoding="utf-8")) or []
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise PoolError(f"{path}: cannot be read as YAML: {exc}") from exc
    if not isinstance(items, list):
        raise PoolError(f"{path}: must be a YAML list of {{q, accept, source}} entries")
    return items


def collect(paths: list[Path], names: set[str]) -> tuple[list[dict], list[str]]:
    """The usable entries, and why each other one was dropped."""
    kept, dropped, sources, texts = [], [], set(), set()
    for path in paths:
        for n, item in enumerate(_entries(path), 1):
            where = f"{path.name}:{n}"
            if not isinstance(item, dict) or set(item) != {"q", "accept", "source"}:
                dropped.append(f"{where}: needs exactly q, accept and source")
                continue
            unknown = [a for a in item["accept"] if a not in names]
            if unknown or not item["accept"]:
                dropped.append(f"{where}: not KB symbols: {unknown or 'none given'}")
            elif item["source"] in sources:
                dropped.append(f"{where}: thread already taken")
            elif _norm(item["q"]) in texts:
                dropped.append(f"{where}: same wording as an earlier question")
            else:
                sources.add(item["source"])
                texts.add(_norm(item["q"]))
                kept.append({"q": str(item["q"]), "accept": list(item["accept"]),
                             "source": str(item["source"])})
    return kept, dropped


def _dump(items: list[dict]) -> str:
    """One entry a line, as the question files in benchmarks/ are written."""
    return "".join("- " + yaml.safe_dump(item, width=10_000, default_flow_style=True,
                                         allow_unicode=True, sort_keys=False).strip() + "\n"
                   for item in items)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("pools", nargs="+", type=Path)
    ap.add_argument("--out", type=Path, default=Path("/tmp/realq"))
    ap.add_argument("--manifest", type=Path, default=MANIFEST)
    args = ap.parse_args(argv)
    try:
        kept, dropped = collect(args.pools, kb_names())
    except PoolError as exc:
        print(f"error: {exc}; nothing written", file=sys.stderr)
        return 2
    for why in dropped:
        print("dropped", why)
    sets = {"heldout": [i for i in kept if held_out(i["source"])],
            "train": [i for i in kept if not held_out(i["source"])]}
    args.out.mkdir(parents=True, exist_ok=True)
    for name, items in sets.items():
        path = args.out / f"real-{name}.yaml"
        path.write_text(_dump(items), encoding="utf-8")
        print(f"{path}: {len(items)} questions")
    manifest = sorted(({"source": i["source"], "accept": i["accept"],
                        "set": "heldout" if held_out(i["source"]) else "train"} for i in kept),
                      key=lambda e: e["source"])
    args.manifest.write_text(
        "# Real users' questions used by benchmarks/kb_search.py, by thread: the URL, the names\n"
        "# its answer gives and the set (held out iff sha1(URL) % 3 == 0). The wording is other\n"
        "# people's and is kept outside the repository; written by tools/real_questions.py.\n"
        + _dump(manifest), encoding="utf-8")
    print(f"{args.manifest}: {len(manifest)} threads")
    return 0


if __name__ == "__main__":
    sys.exit(main())
