"""Check, or update, the checksums in knowledge_base/data/MANIFEST.yaml (the manifest of every
shipped data file). ``--update`` rewrites only the sha256 values (and refuses when a file is
missing from the manifest or gone from disk: those need a written entry).

Run: ``.venv/bin/python -m tools.data_manifest [--update]``.
"""
from __future__ import annotations

import argparse
import re
import sys

from knowledge_base import data_manifest


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--update", action="store_true", help="rewrite the sha256 values")
    args = ap.parse_args()
    problems = data_manifest.problems()
    unlisted = [p for p in problems if p.kind != "checksum"]
    if unlisted:
        for p in unlisted:
            print(f"error: {p}", file=sys.stderr)
        return 2
    if not args.update:
        for p in problems:
            print(p)
        return 1 if problems else 0
    text = data_manifest.MANIFEST.read_text(encoding="utf-8")
    for entry in data_manifest.entries():
        digest = data_manifest.sha256(data_manifest.ROOT / entry.path)
        text = re.sub(rf"(- path: {re.escape(entry.path)}\n(?:    .*\n|      .*\n)*?    sha256: )"
                      r"'?[0-9a-f]*'?", rf"\g<1>{digest}", text)
    data_manifest.MANIFEST.write_text(text, encoding="utf-8")
    left = data_manifest.problems()
    for p in left:
        print(f"error: {p}", file=sys.stderr)
    print(f"updated {data_manifest.MANIFEST}" if not left else "not updated cleanly")
    return 2 if left else 0


if __name__ == "__main__":
    sys.exit(main())
