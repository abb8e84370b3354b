"""``tfdesk ask --json`` on a few hundred questions, by two trees of tfdesk, compared byte for
byte: a change to how the question search is loaded or evaluated (issue 27's speed work) must
give every answer exactly as before.

The two trees are a git revision (default ``HEAD``, exported with ``git archive``: committed
files only) and this working tree, or any two folders (``--base-tree``, ``--tree``). Each runs
in its own interpreter with its own copy of the same KB file (so caches one tree writes beside
the KB never reach the other) and answers every question through the CLI's own dispatch and
JSON output, in one process; the tree checked runs twice, so that what its first run prepared
and kept beside the KB is what the second one reads. The questions are every ``--every``-th of the sets the sets
manifest lists as training, tuned or book-only (the held-out set is left alone), plus names,
typos and a pasted error. Prints how many answers are identical and the first differences;
exits 1 when any differs.

Run: ``.venv/bin/python benchmarks/kb_same_answers.py [--kb PATH] [--base-rev REV] [--every 20]``
"""
from __future__ import annotations

import argparse
import difflib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

EXTRA = ["tf.nn.softmax", "tf.nn.softmx", "tf.Session", "tf.keras.Model.get_weights",
         "softmax", "tf.contrib.layers.xavier_initializer",
         "AttributeError: module 'tensorflow' has no attribute 'placeholder'",
         "TypeError: Argument(s) not recognized: {'lr': 0.001}", ""]

# Runs inside each tree: the CLI's dispatch and JSON output, one Services for all questions.
DRIVER = """
import io, json, sys, time
from bot import commands
from bot.config import load_config
from bot.dispatch import run_line
from bot.services import Services
from bot.terminal import emit, make_progress_context
commands.load()
config = load_config()
services = Services(config)
out, t0 = [], time.perf_counter()
for q in json.load(sys.stdin):
    ctx, _ = make_progress_context(config, services=services)
    _, reply = run_line(ctx, ["ask", q, "--json"])
    buf = io.StringIO()
    emit(reply, as_json=True, out=buf, err=buf)
    out.append(buf.getvalue())
json.dump({"answers": out, "seconds": time.perf_counter() - t0}, sys.stdout)
"""


def questions(every: int) -> list[str]:
    from knowledge_base.qa import question_sets
    qs: list[str] = []
    for s in question_sets.sets("training", "tuned", "book-only"):
        items = [i["q"] for i in s.items() if isinstance(i, dict) and i.get("q")]
        qs += items[::every]
    return list(dict.fromkeys(qs + EXTRA))


def export(rev: str, into: Path) -> Path:
    tree = into / "base"
    tree.mkdir()
    archive = subprocess.run(["git", "archive", rev], cwd=ROOT, check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    return tree


def answers(tree: Path, kb: Path, home: Path, qs: list[str],
            keep: bool = False) -> tuple[list[str], float]:
    """The answers of ``tree`` in its own home with its own copy of ``kb`` (with ``keep``,
    the copy and what was kept beside it stay for the next call)."""
    own_kb = home / "kb.sqlite"
    if not (keep and own_kb.exists()):
        home.mkdir()
        shutil.copyfile(kb, own_kb)
    env = {**os.environ, "TFDESK_KB": str(own_kb), "TFDESK_HOME": str(home),
           "PYTHONPATH": str(tree)}
    r = subprocess.run([sys.executable, "-c", DRIVER], input=json.dumps(qs), cwd=tree, env=env,
                       capture_output=True, text=True)
    if r.returncode:
        raise SystemExit(f"{tree}: the driver failed:\n{r.stderr[-3000:]}")
    doc = json.loads(r.stdout)
    return doc["answers"], doc["seconds"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kb", help="KB file (default: built from the shipped extract)")
    ap.add_argument("--base-rev", default="HEAD", help="git revision to compare against")
    ap.add_argument("--base-tree", help="a folder with the other tfdesk instead of --base-rev")
    ap.add_argument("--tree", default=str(ROOT), help="the tfdesk to check (default: this one)")
    ap.add_argument("--every", type=int, default=20, help="every N-th question of each set")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        kb = Path(args.kb) if args.kb else tmp / "kb.sqlite"
        if not args.kb:
            from knowledge_base.pipeline import load_shipped
            from knowledge_base.qa.semantic import Vectors
            load_shipped(kb, indexes=[Vectors()])
        base = Path(args.base_tree) if args.base_tree else export(args.base_rev, tmp)
        qs = questions(args.every)
        t0 = time.perf_counter()
        old, old_s = answers(base, kb, tmp / "home-base", qs)
        print(f"{len(qs)} questions, `ask --json` by {args.base_tree or args.base_rev} "
              f"({old_s:.1f} s answering) and by {args.tree}:")
        failed = False
        # Twice: the first run prepares what it keeps beside its KB, the second reads that.
        for run in ("first run", "second run"):
            new, new_s = answers(Path(args.tree), kb, tmp / "home-new", qs, keep=True)
            differ = [i for i, (a, b) in enumerate(zip(old, new)) if a != b]
            failed |= bool(differ)
            print(f"  {run}: {len(qs) - len(differ)} identical, {len(differ)} differ "
                  f"({new_s:.1f} s answering)")
            for i in differ[:5]:
                print(f"--- {qs[i]!r}")
                print("".join(list(difflib.unified_diff(
                    old[i].splitlines(True), new[i].splitlines(True), n=1))[:30]))
        print(f"({time.perf_counter() - t0:.0f} s in all)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
