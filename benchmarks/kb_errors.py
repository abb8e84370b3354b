"""Pasted errors answered with the fix: generated cases (benchmarks/error_cases.py), dev and
held-out halves, each asked as its error line alone, as a whole traceback in each format
users paste (a script's, and a notebook's as IPython 7 and 8 print it: benchmarks/
traceback_formats.py; it counts when every format gets the fix), wrapped as Keras and
TensorFlow wrap an error raised inside a layer or a graph ("Exception encountered when
calling ...", "Graph execution error:"; counts when every wrapper gets the fix) and as its
message alone with typographic quotes (how an issue title or a Slack line quotes it), against a
baseline in the same run (the same text asked without error reading: ask before issue 27).

    .venv/bin/python benchmarks/kb_errors.py [--kb KB] [--per-family 60] [--keras PATH ...]

Reports, per half and family: the fix in the top 3 (error line; traceback; baseline), the
tracebacks that did worse than their error line, and for keyword errors whether the fix names
the replacement keyword where the KB knows one. Targets (issue 27): top 3 >= 90 %, no
traceback worse than its line, the replacement named.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.error_cases import generate, hit, names_replacement  # noqa: E402
from benchmarks.traceback_formats import FORMATS, WRAPPERS  # noqa: E402

KERAS = [ROOT / ".venv-runner-tf221/lib/python3.11/site-packages/keras",
         ROOT / ".venv-runner/lib/python3.11/site-packages/keras"]


def open_answers(kb_path: str | None, scratch: Path):
    """The KB at kb_path, or one built from the shipped extract under scratch (removed by the
    caller: a built KB is about 230 MB, and a benchmark leaves no disk behind)."""
    from knowledge_base.pipeline import load_shipped
    from knowledge_base.qa.answers import Answers
    from knowledge_base.qa.semantic import Vectors
    if kb_path is None:
        kb_path = str(scratch / "kb.sqlite")
        load_shipped(Path(kb_path), indexes=[Vectors()])
    return Answers.open(Path(kb_path), "http://docs.test/")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kb", help="a built KB (default: build one from the shipped extract)")
    ap.add_argument("--per-family", type=int, default=60)
    ap.add_argument("--keras", nargs="*", type=Path, default=KERAS,
                    help="keras packages (site-packages dirs or wheels) to read templates from")
    ap.add_argument("--show-misses", type=int, default=0)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="tfdesk-bench-errors-") as scratch:
        return run(args, open_answers(args.kb, Path(scratch)))


def run(args, answers) -> int:
    cs = generate(answers.kb, args.keras, args.per_family)
    print("templates:", {k: v for k, v in cs.templates.items()})
    stats = defaultdict(lambda: defaultdict(int))
    misses = []
    t0 = time.perf_counter()
    for c in cs.cases:
        line = answers.ask(c.line, limit=5)
        tb_hit = all(hit(answers.ask(c.traceback(fmt), limit=5), c) for fmt in FORMATS)
        wrapped_hit = all(hit(answers.ask(c.traceback(wrapper=w), limit=5), c) for w in WRAPPERS)
        base = answers.ask(c.line, limit=5, errors=False)
        said = c.line.split(": ", 1)[-1].replace("'", "\u2019")
        bare = answers.ask(said, limit=5)
        bare_base = answers.ask(said, limit=5, errors=False)
        for key in (c.half, f"{c.half}/{c.family}"):
            s = stats[key]
            s["n"] += 1
            s["line"] += hit(line, c)
            s["traceback"] += tb_hit
            s["wrapped"] += wrapped_hit
            s["baseline"] += hit(base, c)
            s["bare"] += hit(bare, c)
            s["bare_baseline"] += hit(bare_base, c)
            s["worse"] += hit(line, c) and not (tb_hit and wrapped_hit)
            named = names_replacement(line, c)
            if named is not None:
                s["kw_n"] += 1
                s["kw_named"] += named
        if not hit(line, c) and c.half == "dev":  # tuning looks at dev misses only
            misses.append((c, line))
    dt = time.perf_counter() - t0
    asks = (4 + len(FORMATS) + len(WRAPPERS)) * len(cs.cases)
    print(f"{len(cs.cases)} cases, {asks} asks in {dt:.0f} s")
    print(f"{'set':34} {'n':>4} {'line top3':>9} {'traceback':>9} {'wrapped':>9} {'baseline':>9} "
          f"{'ratio':>6} {'tb worse':>8} {'kw named':>9} {'msg alone':>9} {'its base':>9}")
    for key in sorted(stats, key=lambda k: (k.count("/"), k)):
        s = stats[key]
        n = s["n"]
        ratio = s["line"] / s["baseline"] if s["baseline"] else float("inf")
        kw = f"{s['kw_named']}/{s['kw_n']}" if s["kw_n"] else "-"
        print(f"{key:34} {n:4} {s['line'] / n:9.1%} {s['traceback'] / n:9.1%} "
              f"{s['wrapped'] / n:9.1%} "
              f"{s['baseline'] / n:9.1%} {ratio:6.2f} {s['worse']:8} {kw:>9} "
              f"{s['bare'] / n:9.1%} {s['bare_baseline'] / n:9.1%}")
    for c, ans in misses[:args.show_misses]:
        print(f"MISS [{c.half}] {c.id}: {c.line[:120]}\n     expect {c.expect[:2]}; got "
              f"{[r['name'] for r in ans['results'][:3]]}; fix: {ans.get('fix', '')[:140]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
