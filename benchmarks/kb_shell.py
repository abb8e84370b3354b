"""``tfdesk ask`` from a shell, process start included: a name lookup and a question in words,
each against ``python -c pass`` measured in the same run (the interpreter's own start, which
no tfdesk change can remove). Targets: a name under 0.4 s, a question under 0.8 s.

Wall time on a shared machine includes waiting for a core, so the CPU time of each run (user +
system, from the child's rusage) is reported beside it; the medians are what the targets are
read against. Also lists which heavy modules ``tfdesk ask NAME`` loaded, through the CLI as a
shell runs it (none of NumPy, sqlite-utils, LibCST, the converters, catalog, runners, the
vectors should be), and the name lookup without its cached name tables (``KB.names`` beside
the KB file, see knowledge_base/name_cache.py) removed before each run.

The children write and read ``.pyc`` files as an installed tfdesk does
(``PYTHONDONTWRITEBYTECODE`` is dropped from their environment): otherwise every start
compiles the changed modules again, which a user's shell never does.

Run: ``.venv/bin/python benchmarks/kb_shell.py [--kb PATH] [-n 10]`` (without ``--kb`` a KB is
built from the shipped extract in a temporary folder first).
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

HEAVY = ("numpy", "lightgbm", "yaml", "sqlite_utils", "libcst", "converters", "catalog",
         "runners", "knowledge_base.qa.semantic", "knowledge_base.qa.questions")
TARGETS = {"name": 0.4, "question": 0.8}


def run(argv: list[str], env: dict, first=None) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one run of ``argv`` (after calling ``first``)."""
    if first is not None:
        first()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(argv, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def loaded_by_name_lookup(env: dict) -> list[str]:
    code = ("import sys\nfrom bot.cli import main\nmain(['ask', 'tf.pad'])\n"
            f"print('LOADED', ' '.join(m for m in {HEAVY!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout
    return out.rpartition("LOADED")[2].split()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kb", help="KB file (default: built from the shipped extract)")
    ap.add_argument("-n", type=int, default=10, help="runs of each command")
    args = ap.parse_args()
    tmp = tempfile.TemporaryDirectory()
    kb = Path(args.kb) if args.kb else Path(tmp.name) / "kb.sqlite"
    if not args.kb:
        from knowledge_base.pipeline import load_shipped
        from knowledge_base.qa.semantic import Vectors
        load_shipped(kb, indexes=[Vectors()])
    env = {**os.environ, "TFDESK_KB": str(kb), "TFDESK_HOME": tmp.name,
           "PYTHONPATH": str(ROOT)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    from knowledge_base.name_cache import path_for
    cache = path_for(kb)
    tfdesk = [sys.executable, "-m", "bot.cli", "ask"]
    cases = {"python -c pass": ([sys.executable, "-c", "pass"], None),
             "name": (tfdesk + ["tf.nn.softmax"], None),
             "name, no cache": (tfdesk + ["tf.nn.softmax"],
                                lambda: cache.unlink(missing_ok=True)),
             "question": (tfdesk + ["how do I pad a tensor with zeros"], None)}
    for argv, first in cases.values():  # warm the page cache and .pyc files
        run(argv, env, first)
    results = {label: [run(argv, env, first) for _ in range(args.n)]
               for label, (argv, first) in cases.items()}
    base_wall = statistics.median(w for w, _ in results["python -c pass"])
    print(f"tfdesk ask from a shell, {args.n} runs each (load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    for label, runs in results.items():
        wall = statistics.median(w for w, _ in runs)
        cpu = statistics.median(c for _, c in runs)
        target = TARGETS.get(label.split(",")[0])
        verdict = "" if target is None else (
            f"  target < {target} s: {'met' if cpu <= target else 'NOT met'} (CPU), "
            f"{'met' if wall <= target else 'not met'} (wall)")
        print(f"  {label:<15} wall median {wall:6.3f} s  CPU median {cpu:6.3f} s  "
              f"{wall / base_wall:5.1f}x python -c pass{verdict}")
    heavy = loaded_by_name_lookup(env)
    print(f"  a name lookup loaded: {', '.join(heavy) or 'none of ' + ', '.join(HEAVY)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
