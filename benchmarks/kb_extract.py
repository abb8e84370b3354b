"""Extraction speed per release, next to a baseline measured in the same run.

    .venv/bin/python benchmarks/kb_extract.py [WHEEL_DIR] [VERSION ...]

It ends with the time of `tfdesk kb load` from the shipped compact extract, for comparison.

Baseline: ``ast.parse`` of every ``.py`` file in the TF wheel (the naive "read it all"
approach). Target: extraction under 20 s per release (CPU seconds; wall time is printed too,
as it depends on what else the machine runs).
"""
from __future__ import annotations

import ast
import gc
import sys
import time
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from knowledge_base.extract import extract_release  # noqa: E402
from knowledge_base.wheels import find_release_wheels  # noqa: E402


def parse_everything(wheel: Path) -> int:
    gc.disable()
    try:
        n = 0
        with zipfile.ZipFile(wheel) as z:
            for name in z.namelist():
                if name.endswith(".py"):
                    try:
                        ast.parse(z.read(name))
                        n += 1
                    except (SyntaxError, ValueError):
                        pass
        return n
    finally:
        gc.enable()


def main() -> None:
    wheel_dir = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("/work/wheels")
    versions = sys.argv[2:] or ["2.3", "2.15", "2.21"]
    print(f"{'release':8} {'symbols':>8} {'wall s':>7} {'cpu s':>6} {'baseline cpu s':>15} {'ratio':>6}")
    for v in versions:
        wheels = find_release_wheels(v, wheel_dir)
        c0, t0 = time.process_time(), time.perf_counter()
        ex = extract_release(wheels)
        cpu, wall = time.process_time() - c0, time.perf_counter() - t0
        c0 = time.process_time()
        parse_everything(wheels.tf)
        base = time.process_time() - c0
        print(f"{v:8} {len(ex.symbols):8d} {wall:7.1f} {cpu:6.1f} {base:15.1f} {cpu / base:6.2f}"
              f"  {'OK' if cpu < 20 else 'OVER 20 s'}")
    shipped_load()


def shipped_load() -> None:
    """The other way onto a fresh machine: the KB from the shipped compact extract, no wheels."""
    import tempfile

    from knowledge_base.pipeline import SHIPPED_EXTRACT, load_shipped
    from knowledge_base.qa.semantic import Vectors
    with tempfile.TemporaryDirectory() as tmp:
        c0, t0 = time.process_time(), time.perf_counter()
        stats = load_shipped(Path(tmp) / "kb.sqlite", indexes=[Vectors()])
        cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    print(f"kb load from the shipped extract ({SHIPPED_EXTRACT.stat().st_size / 1e6:.1f} MB, "
          f"{stats['releases']} releases, {stats['symbols']} symbols): {wall:.1f} s wall, "
          f"{cpu:.1f} s cpu, no downloads")


if __name__ == "__main__":
    main()
