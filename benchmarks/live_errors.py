"""Pasted errors raised by live TensorFlow: the oracle for error answering (issue 27).

``kb_errors.py`` asks error lines filled from templates; those templates are only as right as
their reading of Python's and Keras' sources. Here each generated case (``error_cases.py``)
becomes a script that really makes the mistake (``x = tf.Session``, ``from
tensorflow.keras.utils import np_utils``, ``tf.keras.optimizers.Adam(lr=0.1)``, a removed
method of a real instance), run in a tfdesk runtime (``knowledge_base/live``). What the runtime
raised, its last lines and its whole traceback as the user would paste them, is asked of the
KB; the fix must be in the top 3, the traceback no worse than its error line, and a keyword
error must name the replacement keyword where the KB knows it.

A script that raises nothing means the KB calls a name removed that the runtime still has (a
fact to fix); one that raises something else is "not reproduced" (this harness could not build
the call). Both are counted, never dropped.

    python benchmarks/live_errors.py [--per-family 40] [--seed 27] [--show-misses 10]
"""
from __future__ import annotations

import argparse
import ast
import json
import re
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.error_cases import Case, aliases_of, generate, names_replacement  # noqa: E402
from benchmarks.kb_errors import KERAS, open_answers  # noqa: E402

# The newest runtime: every name the KB calls removed is gone there (the 2.15 runtime still
# has what 2.16 removed, so its cases would not be mistakes there).
RUNTIMES = {"2.21": ROOT / ".venv-runner-tf221" / "bin" / "python"}

# Values for a callable's required arguments, by the argument's name (first match wins): what
# a user would pass, so that the call fails on the keyword and not on a missing argument.
ARGUMENT_VALUES = [
    (r"shape$", "(2, 2)"),
    (r"^(kernel|pool)_size$|^size$|^strides?$", "2"),
    (r"^(units|filters|input_dim|output_dim|num_\w+|n|k|depth|dim|max_tokens|num_tokens)$", "2"),
    (r"rate$|^alpha$|^stddev$|^l[12]?$", "0.5"),
    (r"^axis$", "0"),
    (r"^dtype$", "'float32'"),
    (r"^(name|path|filepath|logdir|directory|file_pattern|filename\w*)$", "'x'"),
    (r"^(layer|cell)$", "tf.keras.layers.Dense(2)"),
    (r"^(layers|cells)$", "[tf.keras.layers.Dense(2)]"),
    (r"^(fn|func|function|map_fn|py_func)$", "lambda *a: a"),
    (r"^(padding)$", "'SAME'"),
    (r"^(inputs|outputs)$", "[tf.keras.Input((2,))]"),
    (r"", "tf.ones((2, 2))"),
]


@dataclass
class Live:
    case: Case
    script: str
    outcome: str = ""        # raised | resolves | other_error | not_built
    message: str = ""
    traceback: str = ""


def required(signature: str | None) -> list[str] | None:
    """The required positional arguments of a signature string, or None when unreadable."""
    if not signature:
        return []
    try:
        fn = ast.parse(f"def f{signature}: pass").body[0]
    except SyntaxError:
        return None
    args = fn.args.posonlyargs + fn.args.args
    names = [a.arg for a in args[:len(args) - len(fn.args.defaults)]]
    return [n for n in names if n not in ("self", "cls")]


def call_args(names: list[str]) -> str:
    out = []
    for n in names:
        value = next(v for pat, v in ARGUMENT_VALUES if re.search(pat, n))
        out.append(f"{n}={value}")
    return ", ".join(out)


def _newest_signature(kb, name: str) -> str | None:
    sym = kb.symbol(name)
    spans = kb.spans(sym["id"]) if sym else []
    return spans[-1]["signature"] if spans else None


def instance(kb, cls: str) -> str | None:
    """Code that makes an instance of ``cls``, or None when its arguments cannot be guessed."""
    req = required(_newest_signature(kb, cls))
    return None if req is None else f"{cls}({call_args(req)})"


def script(kb, case: Case) -> str | None:
    """A script that makes the case's mistake for real, or None when none can be built."""
    kind, _, rest = case.id.partition(":")
    if kind in ("attr", "tf1"):
        return f"x = {rest}"
    if kind in ("import", "module"):
        return case.code
    if kind == "tf1mod":
        return f"w = {rest}"
    if kind == "misplaced":
        return case.code.replace("(x)", "")
    if kind == "method":
        parent, _, leaf = rest.rpartition(".")
        make = instance(kb, parent)
        return None if make is None else f"obj = {make}\ny = obj.{leaf}"
    if kind == "kw":
        name, _, kw = rest.rpartition(":")
        sym = kb.symbol(name)
        if sym is None:
            return None
        req = required(_newest_signature(kb, name))
        if req is None:
            return None
        args = ", ".join(x for x in (call_args(req), f"{kw}=0.001") if x)
        if sym["kind"] != "method":
            return f"out = {name}({args})"
        make = instance(kb, sym["parent"])
        leaf = name.rpartition(".")[2]
        return None if make is None else f"obj = {make}\nout = obj.{leaf}({args})"
    return None


# How a callable refuses a keyword it does not take (Python's and Keras' messages); a message
# that names the keyword otherwise refused its value, so the keyword is still taken.
REFUSED = re.compile(r"unexpected keyword|not recognized|[Uu]nrecognized keyword|not understood"
                     r"|invalid keyword")


def expected_error(case: Case, message: str) -> bool:
    """Whether the runtime's error is the mistake the case makes, not another one on the way
    (a guessed argument the callable refused)."""
    if case.family == "keyword":
        return case.keyword in message and REFUSED.search(message) is not None
    if case.family in ("no_attribute", "tf1_name", "misplaced", "removed_method"):
        return message.startswith("AttributeError") or "has no attribute" in message
    return message.startswith(("ImportError", "ModuleNotFoundError"))


def missing_name(message: str) -> str | None:
    """The public name an attribute or import error says is missing: Python names only the
    first missing part of a dotted path."""
    from knowledge_base.qa.fixes import public_module
    m = (re.search(r"module '([\w.]+)' has no attribute '(\w+)'", message)
         or re.search(r"cannot import name '(\w+)' from '([\w.]+)'", message))
    if m and m.re.pattern.startswith("cannot"):
        module, name = m.group(2), m.group(1)
    elif m:
        module, name = m.group(1), m.group(2)
    elif m := re.search(r"No module named '([\w.]+)'", message):
        module, name = m.group(1), None
    else:
        return None
    public = public_module(module)
    return None if public is None else (f"{public}.{name}" if name else public)


def fix_of(kb, name: str) -> list[str]:
    """What answers "``name`` is gone", from the KB's history: its replacement, where its
    members went (a removed module), where TF1's upgrade tables send it or its members, and
    tf.compat.v1's copy; else the name itself (its card says it is gone)."""
    from knowledge_base.store import like_prefix
    sym = kb.symbol(name)
    out = [sym["replacement"]] if sym and sym["replacement"] else []
    # What a module held that users import (not members: a method's replacement does not
    # say where a module went).
    held = "s.kind NOT IN ('method', 'property', 'constant')"
    out += [r for (r,) in kb.db.execute(
        f"SELECT replacement FROM symbols s WHERE name LIKE ? ESCAPE '\\' AND replacement IS "
        f"NOT NULL AND {held}", (like_prefix(name),))]
    out += [json.loads(d).get("to") for (d,) in kb.db.execute(  # the history's "moved to"
        f"SELECT e.data FROM events e JOIN symbols s ON s.id = e.symbol_id WHERE e.kind = "
        f"'removed' AND e.data IS NOT NULL AND (s.name = ? OR s.name LIKE ? ESCAPE '\\' AND "
        f"{held})", (name, like_prefix(name)))]
    out = [n for n in out if n]
    if sym and not out:
        out.append(name)  # "removed, nothing replaces it" is said on its own card
    out += [r for (r,) in kb.db.execute(
        "SELECT new FROM renames WHERE (old = ? OR old LIKE ? ESCAPE '\\') AND new IS NOT NULL",
        (name, like_prefix(name)))]
    v1 = "tf.compat.v1." + name[3:]
    if not name.startswith("tf.compat.") and kb.symbol(v1):
        out.append(v1)
    return list(dict.fromkeys(out)) or ([name] if sym else [])


def expectations(kb, lv: "Live") -> tuple[list[str], list[str]]:
    """The fixes that count for the error line alone and for the whole traceback. The case's
    own fix is about the whole name it wrote; when the runtime stops at a missing part of it
    (tf.estimator of tf.estimator.LinearClassifier), the line alone can only be answered about
    that part, and the traceback about the deepest part its failing line spells."""
    missing = missing_name(lv.message)
    if lv.case.family == "keyword" or missing is None:
        return lv.case.expect, lv.case.expect
    failing = [ln for ln in lv.script.splitlines() if ln.strip()]
    # The script's line that spells the missing part: as the message says it, or through
    # another alias of its module (tf.metrics.experimental where Keras 3 says
    # keras._tf_keras.keras.metrics lacks 'experimental'); the name there, from the
    # missing part on, is the deepest the traceback shows.
    tail = "." + ".".join(missing.split(".")[-2:])
    deepest, at = missing, missing.count(".")  # at: the index of the missing part
    for ln in reversed(failing):
        spelt = re.findall(r"[\w.]+", ln.replace("from tensorflow", "from tf").replace(
            " import ", ".").replace("tensorflow.", "tf."))
        through = [n for n in spelt if n.startswith(missing) or tail + "." in n]
        if through:
            deepest = max(through, key=len)
            at = (missing.count(".") if deepest.startswith(missing)
                  else deepest[:deepest.index(tail + ".") + len(tail)].count("."))
            break
    written = _written(lv.case)
    # The whole name is missing (maybe under another alias of its module: tf.initializers is
    # tf.keras.initializers in Keras 3): the case's own fix.
    whole = missing == deepest and missing.rpartition(".")[2] == written.rpartition(".")[2]
    line = lv.case.expect if whole else fix_of(kb, missing)
    tb = list(lv.case.expect)
    parts = deepest.split(".")
    for depth in range(len(parts), at, -1):
        if fixed := fix_of(kb, ".".join(parts[:depth])):
            tb += fixed
            break
    return line + aliases_of(kb, line), tb + aliases_of(kb, tb)


def _written(case: Case) -> str:
    """The full name the case's script writes."""
    kind, _, rest = case.id.partition(":")
    return {"kw": rest.rpartition(":")[0], "misplaced": f"tf.{rest}"}.get(kind, rest)


def run_cases(kb, cases: list[Case], python: Path) -> tuple[str, list[Live]]:
    from knowledge_base import live
    lives = [Live(c, s) for c in cases if (s := script(kb, c)) is not None]
    built = {lv.case.id for lv in lives}
    version, raised = live.raise_errors(python, {lv.case.id: lv.script for lv in lives})
    for lv in lives:
        r = raised[lv.case.id]
        if not r.raised:
            lv.outcome = "resolves"
        else:
            lv.message, lv.traceback = r.message, r.traceback
            lv.outcome = "raised" if expected_error(lv.case, r.message) else "other_error"
    lives += [Live(c, "", "not_built") for c in cases if c.id not in built]
    return version, lives


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kb", help="a built KB (default: build one from the shipped extract)")
    ap.add_argument("--per-family", type=int, default=40)
    ap.add_argument("--runtime", choices=sorted(RUNTIMES), default="2.21")
    ap.add_argument("--seed", type=int, default=27, help="which cases of each family")
    ap.add_argument("--show-misses", type=int, default=0)
    args = ap.parse_args(argv)
    python = RUNTIMES[args.runtime]
    if not python.is_file():
        print(f"no runtime for {args.runtime} ({python}); `make runner-env` builds it")
        return 2
    with tempfile.TemporaryDirectory(prefix="tfdesk-bench-live-errors-") as scratch:
        answers = open_answers(args.kb, Path(scratch))
        return report(args, answers, python)


def report(args, answers, python: Path) -> int:
    kb = answers.kb
    cases = generate(kb, KERAS, args.per_family, seed=args.seed).cases
    t0 = time.perf_counter()
    version, lives = run_cases(kb, cases, python)
    print(f"{len(cases)} cases, run in TensorFlow {version} in {time.perf_counter() - t0:.0f} s")
    stats: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    misses = []
    for lv in lives:
        fam = stats[lv.case.family]
        fam[lv.outcome] += 1
        if lv.outcome != "raised":
            continue
        by_line = answers.ask(lv.message, limit=5)
        by_tb = answers.ask(lv.traceback, limit=5)
        want_line, want_tb = expectations(kb, lv)
        # Baseline: the template line of the same case (what kb_errors.py asks), and whether
        # the runtime printed exactly that line.
        fam["template_top3"] += _hit(answers.ask(lv.case.line, limit=5), lv.case.expect, None)
        fam["template_same"] += lv.message.splitlines()[-1].strip() == lv.case.line.strip()
        missing = missing_name(lv.message)
        line_hit, tb_hit = _hit(by_line, want_line, missing), _hit(by_tb, want_tb, missing)
        fam["line_top3"] += line_hit
        fam["traceback_top3"] += tb_hit
        fam["traceback_worse"] += line_hit and not tb_hit
        named = names_replacement(by_tb, lv.case)
        if named is not None:
            fam["keyword_known"] += 1
            fam["keyword_named"] += named
        if not (line_hit and tb_hit):
            misses.append((lv, line_hit, tb_hit, [r["name"] for r in by_line["results"][:3]],
                           [r["name"] for r in by_tb["results"][:3]], want_line, want_tb))
    cols = ["raised", "template_same", "template_top3", "line_top3", "traceback_top3",
            "traceback_worse", "keyword_named", "resolves", "other_error", "not_built"]
    print(f"{'family':16}" + "".join(f"{c:>16}" for c in cols))
    total: dict[str, int] = defaultdict(int)
    for fam in sorted(stats):
        row = stats[fam]
        for k, v in row.items():
            total[k] += v
        print(f"{fam:16}" + "".join(f"{_cell(row, c):>16}" for c in cols))
    print(f"{'all':16}" + "".join(f"{_cell(total, c):>16}" for c in cols))
    for lv in [lv for lv in lives if lv.outcome == "resolves"][:20]:
        print(f"  RESOLVES (the KB calls it gone): {lv.case.id}: {lv.script!r}")
    for lv in [lv for lv in lives if lv.outcome == "other_error"][:args.show_misses]:
        print(f"  OTHER ERROR {lv.case.id}: {lv.message.splitlines()[-1][:160]!r}")
    for lv, line_hit, tb_hit, got_line, got_tb, want_line, want_tb in misses[:args.show_misses]:
        print(f"  MISS {lv.case.id}: {lv.message[:160]!r}")
        if not line_hit:
            print(f"       line: got {got_line}, want {want_line[:3]}")
        if not tb_hit:
            print(f"       traceback: got {got_tb}, want {want_tb[:3]}")
    raised = total["raised"]
    line = total["line_top3"] / raised if raised else 0.0
    tb = total["traceback_top3"] / raised if raised else 0.0
    base = total["template_top3"] / raised if raised else 0.0
    print(f"fix in the top 3: error line {line:.1%}, whole traceback {tb:.1%} of {raised} "
          f"real errors (target 90%); traceback worse than its line: {total['traceback_worse']}")
    print(f"baseline, the template lines of the same cases: {base:.1%} (the runtime printed "
          f"{total['template_same']} of them exactly)")
    return 0


def _hit(answer: dict, want: list[str], missing: str | None, k: int = 3) -> bool:
    """The fix in the top 3; where the KB knows nothing to name (tf.contrib), the fix text
    must speak of the missing name."""
    if not want:
        return bool(missing) and f"`{missing}`" in answer.get("fix", "")
    return any(r["name"] in want for r in answer.get("results", [])[:k])


def _cell(row: dict[str, int], col: str) -> str:
    v = row.get(col, 0)
    if col in ("line_top3", "traceback_top3", "template_top3") and row.get("raised"):
        return f"{v}/{row['raised']} {v / row['raised']:.0%}"
    if col == "keyword_named" and row.get("keyword_known"):
        return f"{v}/{row['keyword_known']}"
    return str(v)


if __name__ == "__main__":
    sys.exit(main())
