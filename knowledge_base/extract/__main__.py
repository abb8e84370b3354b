"""python -m knowledge_base.extract WHEEL_DIR VERSION OUT.jsonl.gz [--download]"""
from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

from ..errors import KBError
from ..wheels import download_release_wheels, find_release_wheels
from .release import extract_release


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m knowledge_base.extract",
                                description="Extract one TensorFlow release's API from its wheels.")
    p.add_argument("wheel_dir", type=Path)
    p.add_argument("version", help="minor release, e.g. 2.16")
    p.add_argument("out", type=Path, help="output .jsonl.gz")
    p.add_argument("--download", action="store_true", help="pip-download missing wheels first")
    a = p.parse_args(argv)
    try:
        wheels = (download_release_wheels(a.version, a.wheel_dir) if a.download
                  else find_release_wheels(a.version, a.wheel_dir))
        t0, c0 = time.perf_counter(), time.process_time()
        ex = extract_release(wheels)
        dt, cpu = time.perf_counter() - t0, time.process_time() - c0
        ex.write(a.out)
    except KBError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    kinds = Counter(s.kind for s in ex.symbols)
    print(f"{ex.info.version} (tf {ex.info.tf_version}, keras {ex.info.keras_version} "
          f"[{ex.info.keras_source}], estimator {ex.info.estimator_version}): "
          f"{len(ex.symbols)} symbols {dict(sorted(kinds.items()))}, {len(ex.renames)} renames, "
          f"{dt:.1f} s wall, {cpu:.1f} s cpu -> {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
