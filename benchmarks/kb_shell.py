"""``tfdesk ask`` from a shell, process start included: a name lookup and a question in words,
each against ``python -c pass`` measured in the same run (the interpreter's own start, which
no tfdesk change can remove). Targets: a name under 0.4 s, a question under 0.8 s.

Wall time on a shared machine includes waiting for a core, so the CPU time of each run (user +
system, from the child's own rusage) is reported beside it, and its peak resident memory (at
least this process's own, which Linux counts for a child forked from it); the
CPU medians are what the targets are read against. Also lists which heavy modules ``tfdesk ask
NAME`` loaded, through the CLI as a shell runs it (none of NumPy, sqlite-utils, LibCST, the
converters, catalog, runners, the vectors should be), and the name lookup without its cached
name tables (``KB.names`` beside the KB file, see knowledge_base/name_cache.py) removed before
each run.

With ``--base-rev REV`` the same cases also run for that git revision (exported with ``git
archive``), interleaved run by run with this tree's, so that both see the same machine load:
the before/after of a change in one run. Each tree has its own copy of the KB, so what one
prepares beside its KB (knowledge_base/prepared.py) never serves the other; the warm-up run
of each case prepares it, as ``tfdesk kb load`` would have.

The children write and read ``.pyc`` files as an installed tfdesk does
(``PYTHONDONTWRITEBYTECODE`` is dropped from their environment): otherwise every start
compiles the changed modules again, which a user's shell never does.

Run: ``.venv/bin/python benchmarks/kb_shell.py [--kb PATH] [-n 10] [--base-rev REV]`` (without
``--kb`` a KB is built from the shipped extract in a temporary folder first).
"""
from __future__ import annotations

import argparse
import os
import resource
import shutil
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
QUESTION = "how do I pad a tensor with zeros"


def run(argv: list[str], env: dict, cwd: Path, first=None) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds, peak RSS in MiB) of one run of ``argv``."""
    if first is not None:
        first()
    t0 = time.perf_counter()
    child = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - t0
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode:
        raise SystemExit(f"{argv} exited with {child.returncode}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def loaded_by_name_lookup(env: dict, cwd: Path) -> list[str]:
    code = ("import sys\nfrom bot.cli import main\nmain(['ask', 'tf.pad'])\n"
            f"print('LOADED', ' '.join(m for m in {HEAVY!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=cwd, check=True,
                         capture_output=True, text=True).stdout
    return out.rpartition("LOADED")[2].split()


def tree_cases(tree: Path, kb: Path, home: Path) -> tuple[dict, dict, Path]:
    """The cases of one tfdesk tree: label -> (argv, before-each-run), its env, its cwd."""
    home.mkdir(parents=True)
    own_kb = home / "kb.sqlite"
    shutil.copyfile(kb, own_kb)
    env = {**os.environ, "TFDESK_KB": str(own_kb), "TFDESK_HOME": str(home),
           "PYTHONPATH": str(tree)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    cache = own_kb.with_name(own_kb.name + ".names")  # knowledge_base/name_cache.py's path
    tfdesk = [sys.executable, "-m", "bot.cli", "ask"]
    return {"name": (tfdesk + ["tf.nn.softmax"], None),
            "name, no cache": (tfdesk + ["tf.nn.softmax"],
                               lambda: cache.unlink(missing_ok=True)),
            "question": (tfdesk + [QUESTION], None)}, env, tree


def export(rev: str, into: Path) -> Path:
    into.mkdir()
    archive = subprocess.Popen(["git", "archive", rev], cwd=ROOT, stdout=subprocess.PIPE)
    subprocess.run(["tar", "-x", "-C", str(into)], stdin=archive.stdout, check=True)
    if archive.wait():
        raise SystemExit(f"git archive {rev} failed")
    return into


def report(label: str, runs: list, base_wall: float) -> str:
    wall = statistics.median(w for w, _, _ in runs)
    cpu = statistics.median(c for _, c, _ in runs)
    rss = statistics.median(r for _, _, r in runs)
    target = TARGETS.get(label.split(",")[0])
    verdict = "" if target is None else (
        f"  target < {target} s: {'met' if cpu <= target else 'NOT met'} (CPU), "
        f"{'met' if wall <= target else 'not met'} (wall)")
    return (f"  {label:<15} wall median {wall:6.3f} s  CPU median {cpu:6.3f} s  "
            f"peak RSS {rss:5.0f} MiB  {wall / base_wall:5.1f}x python -c pass{verdict}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kb", help="KB file (default: built from the shipped extract)")
    ap.add_argument("-n", type=int, default=10, help="runs of each command")
    ap.add_argument("--base-rev", help="also measure this git revision, interleaved")
    args = ap.parse_args()
    tmp = tempfile.TemporaryDirectory()
    kb = Path(args.kb) if args.kb else Path(tmp.name) / "kb.sqlite"
    if not args.kb:  # in a child: this process stays small (see run's peak RSS)
        subprocess.run([sys.executable, "-c", "import sys; from pathlib import Path; "
                        "from knowledge_base.pipeline import load_shipped; "
                        "from knowledge_base.qa.semantic import Vectors; "
                        "load_shipped(Path(sys.argv[1]), indexes=[Vectors()])", str(kb)],
                       cwd=ROOT, check=True)
    trees = {"this tree": ROOT}
    if args.base_rev:
        trees = {args.base_rev: export(args.base_rev, Path(tmp.name) / "base"), **trees}
    setups = {t: tree_cases(path, kb, Path(tmp.name) / f"home-{i}")
              for i, (t, path) in enumerate(trees.items())}
    python = ([sys.executable, "-c", "pass"], None)
    for cases, env, cwd in setups.values():  # warm the page cache, .pyc and prepared files
        for argv, first in [python, *cases.values()]:
            run(argv, env, cwd, first)
    results: dict = {t: {label: [] for label in ["python -c pass", *cases]}
                     for t, (cases, _, _) in setups.items()}
    for _ in range(args.n):
        for t, (cases, env, cwd) in setups.items():
            for label, (argv, first) in [("python -c pass", python), *cases.items()]:
                results[t][label].append(run(argv, env, cwd, first))
    floor = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"tfdesk ask from a shell, {args.n} runs each (load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; a child's peak RSS counts "
          f"this process's {floor:.0f} MiB, which it was forked from)")
    for t, (cases, env, cwd) in setups.items():
        base_wall = statistics.median(w for w, _, _ in results[t]["python -c pass"])
        print(f"{t}:")
        for label, runs in results[t].items():
            print(report(label, runs, base_wall))
        heavy = loaded_by_name_lookup(env, cwd)
        print(f"  a name lookup loaded: {', '.join(heavy) or 'none of ' + ', '.join(HEAVY)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
