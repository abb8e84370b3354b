"""Proof harness: any folder of training scripts through conversion and two-worker runs.

    .venv/bin/python benchmarks/convert_corpus.py [FOLDER] [--targets horovod,tf-distribute]
        [--only NAME ...] [--no-equivalence] [--json OUT.json] [--markdown OUT.md] [--timeout S]

FOLDER defaults to tests/scripts/; a folder outside the repository (public scripts with their
data swapped for synthetic data) works the same. For each script and target it prints:

- conversion: converted, refused (a ConversionError, or error findings: the reason), or
  unchanged (no training / already distributed);
- run: the converted script on two workers (Horovod over Gloo, or two processes with TF_CONFIG)
  in the runner environment: "agree" (both exit 0 and every trained weight is identical on both),
  "diverged" (weights differ), "crash" (a worker failed: its last error line), "timeout";
- equivalence (where it is defined): the first distributed step against one single-process step
  of the ORIGINAL script on the union of both workers' batches (batch x 2; learning rate x 2 for
  Horovod, unchanged for tf.distribute): gradients within float32 tolerance, or "not equivalent"
  with the factor it is off by (x0.5: a loss scaled twice; x1 on one worker only: gradients not
  averaged); "not comparable" says why (batch normalisation, random augmentation, ...);
- the seconds it took.

The runner environment (.venv-runner: TF 2.15 + Horovod) must be built (make runner-env).
"""
from __future__ import annotations

import argparse
import ast
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from converters.script import ConversionError, convert  # noqa: E402
from convert_runs import (compare_step1, load_weights, run_horovod, run_single,  # noqa: E402
                          run_tf_distribute, runner_ready)

TARGETS = ("horovod", "tf-distribute")
WORKERS = 2
# The documented semantics each target promises: global batch = per-worker batch x workers; the
# learning rate x workers with Horovod (gradients are averaged), unchanged with tf.distribute
# (the loss is averaged over the global batch).
LR_FACTOR = {"horovod": WORKERS, "tf-distribute": 1}


@dataclass
class Row:
    script: str
    target: str
    conversion: str = ""   # converted | refused | unchanged
    reason: str = ""
    run: str = ""          # agree | diverged | crash | timeout | "" (not run)
    run_detail: str = ""
    equivalence: str = ""  # equivalent | not equivalent | not comparable | "" (not run)
    equivalence_detail: str = ""
    seconds: float = 0.0


def _last_error(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    # horovodrun ends with its own traceback ("Horovod detected that one or more processes
    # exited"), which says nothing about the cause: a worker's exception ([N]<stderr>:) does.
    worker = [ln for ln in lines if re.match(r"\[\d+\]<std(err|out)>:\s*[\w.]*(Error|Exception)\b", ln)]
    if worker:
        return worker[-1][:300]
    for ln in reversed(lines):
        if any(w in ln for w in ("Error", "error:", "Exception", "Traceback")) and "WARNING" not in ln:
            return ln[:300]
    return (lines[-1][:300] if lines else "no output")


def _convert(row: Row, path: Path):
    try:
        result = convert(path.read_bytes(), row.target, path.name)
    except ConversionError as e:
        lines = str(e).splitlines()
        # "X was not converted: N errors ...:" then one line per error finding: give the first
        row.conversion, row.reason = "refused", lines[1] if len(lines) > 1 and "not converted" in lines[0] else lines[0]
        return None
    except Exception as e:  # noqa: BLE001 - a converter crash is a finding of this harness
        row.conversion, row.reason = "converter crash", f"{type(e).__name__}: {e}"
        return None
    errors = [f for f in result.findings if f.severity == "error"]
    if errors:
        row.conversion = "refused"
        row.reason = f"line {errors[0].line}: {errors[0].message}"
        return None
    if not result.changed:
        row.conversion = "unchanged"
        row.reason = result.findings[0].message if result.findings else ""
        return None
    row.conversion = "converted"
    return result


def _two_workers(target: str, script: Path, work: Path, timeout: int, env=None):
    """(ok, log, weight dir): both workers exited 0."""
    work.mkdir(parents=True, exist_ok=True)
    if target == "horovod":
        try:
            proc = run_horovod(script, work, timeout=timeout, env=env)
        except subprocess.TimeoutExpired as e:
            return None, str(e.stdout or "")[-3000:], work / "_shim_weights"
        return proc.returncode == 0, proc.stdout + proc.stderr, work / "_shim_weights"
    procs = run_tf_distribute(script, work, timeout=timeout, env=env)
    (work / "workers.log").write_text("".join(f"--- worker {i} (exit {p.returncode})\n{p.stdout}\n"
                                              for i, p in enumerate(procs)))
    if any(p.returncode == -9 for p in procs):
        return None, procs[0].stdout, work / "_shim_weights"
    bad = [p for p in procs if p.returncode != 0]
    return not bad, (bad[0].stdout if bad else procs[0].stdout), work / "_shim_weights"


def _agreement(weights: Path) -> tuple[str, str]:
    import numpy as np

    try:
        rank0, rank1 = load_weights(weights)
    except FileNotFoundError:
        return "crash", "a worker saved no weights (the script ended before its training?)"
    if not rank0:
        return "crash", "no trained variables were seen"
    if sorted(rank0) != sorted(rank1):
        return "diverged", "the workers built different models"
    for key in rank0:
        if not np.array_equal(rank0[key], rank1[key]):
            return "diverged", f"{key} differs between the workers"
    return "agree", f"{len(rank0)} arrays identical"


def check(path: Path, target: str, work: Path, timeout: int, equivalence: bool,
          references: dict, combined: bool = False) -> Row:
    """One script on one target. ``combined``: one two-worker run, with the equivalence probe
    on, gives both verdicts (half the runs; the agreement is then judged with shuffling and
    dropout off and fixed seeds, as the probe runs)."""
    row = Row(path.name, target)
    start = time.perf_counter()
    result = _convert(row, path)
    if result is not None:
        tdir = work / target / path.stem
        tdir.mkdir(parents=True, exist_ok=True)
        for extra in path.parent.iterdir():  # helper modules and config files next to it
            if extra.is_file() and extra != path and extra.suffix in (".py", ".yaml", ".yml", ".json", ".txt", ".csv"):
                shutil.copy(extra, tdir / extra.name)
        script = tdir / path.name
        script.write_text(result.code)
        probe = {"TFDESK_PROBE_OUT": str(tdir / "run" / "probe")} if combined and equivalence else None
        ok, log, weights = _two_workers(target, script, tdir / "run", timeout, env=probe)
        if target == "horovod":
            (tdir / "run" / "workers.log").write_text(log or "")
        if ok is None:
            row.run, row.run_detail = "timeout", f"no result in {timeout} s"
        elif not ok:
            row.run, row.run_detail = "crash", _last_error(log)
            # A crash counts against the conversion only if the original runs in one process here.
            alone = run_single(path, work / "original" / path.stem, timeout=timeout)
            if alone.returncode != 0:
                row.run = "original fails"
                row.run_detail = ("the original script fails in one process here too: "
                                  + _last_error(alone.stdout + alone.stderr))
        else:
            row.run, row.run_detail = _agreement(weights)
        if equivalence and row.run == "agree":
            row.equivalence, row.equivalence_detail = _equivalence(
                path, target, script, tdir, timeout, references, probed=tdir / "run" if probe else None)
    row.seconds = round(time.perf_counter() - start, 1)
    return row


def _random_in_step(source: str) -> int | None:
    """Line of a random draw (tf.random.*, np.random.*...) in a function that opens a
    GradientTape (a GAN's noise): one process and two workers draw different numbers for their
    step, so the first steps cannot be compared, only agreement checked."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        names = [(c.lineno, ast.unparse(c.func)) for c in ast.walk(fn) if isinstance(c, ast.Call)]
        if any(name.endswith("GradientTape") for _, name in names):
            for line, name in names:
                if ".random." in f".{name}":
                    return line
    return None


def _equivalence(original: Path, target: str, converted: Path, tdir: Path, timeout: int,
                 references: dict, probed: Path | None = None) -> tuple[str, str]:
    line = _random_in_step(original.read_text(errors="replace"))
    if line is not None:
        return "not comparable", f"random numbers drawn in the training step (line {line})"
    if "num_replicas_in_sync" in original.read_text(errors="replace"):
        # The original sizes its batch from its own strategy (MirroredStrategy): in one process
        # it has one replica, so "the same script with twice the batch" is not its single-process
        # counterpart; agreement is what is checked for it.
        return "not comparable", "the script sizes its batch from num_replicas_in_sync"
    factors = f"{WORKERS},{LR_FACTOR[target]}"
    ref = references.get((original, factors))
    if ref is None:
        rdir = tdir.parent.parent / "reference" / f"{original.stem}-{factors.replace(',', 'x')}"
        rdir.mkdir(parents=True, exist_ok=True)
        proc = run_single(original, rdir, timeout=timeout,
                          env={"TFDESK_PROBE_OUT": str(rdir / "probe"),
                               "TFDESK_PROBE_REFERENCE": factors})
        ref = references[(original, factors)] = (proc, rdir / "probe" / "step1-rank0.npz")
    proc, ref_file = ref
    if proc.returncode != 0 and not ref_file.exists():
        return "not comparable", "the single-process reference failed: " + _last_error(proc.stdout + proc.stderr)
    pdir = probed or tdir / "probe-run"
    if probed is None:
        ok, log, _ = _two_workers(target, converted, pdir, timeout,
                                  env={"TFDESK_PROBE_OUT": str(pdir / "probe")})
        if not ok:
            return "not comparable", "the probed two-worker run failed: " + _last_error(log)
    return compare_step1(ref_file, [pdir / "probe" / f"step1-rank{r}.npz" for r in range(WORKERS)])


def summary(rows: list[Row]) -> str:
    converted = [r for r in rows if r.conversion == "converted"]
    agree = [r for r in converted if r.run == "agree"]
    eq = [r for r in rows if r.equivalence == "equivalent"]
    bad_eq = [r for r in rows if r.equivalence == "not equivalent"]
    return (f"{len(rows)} script x target: {len(converted)} converted, "
            f"{sum(r.conversion == 'refused' for r in rows)} refused, "
            f"{sum(r.conversion == 'unchanged' for r in rows)} unchanged; runs: {len(agree)} agree, "
            f"{sum(r.run == 'crash' for r in rows)} crash, {sum(r.run == 'diverged' for r in rows)} "
            f"diverged, {sum(r.run == 'original fails' for r in rows)} whose original fails here too, "
            f"{sum(r.run == 'timeout' for r in rows)} timeout; equivalence: {len(eq)} "
            f"equivalent, {len(bad_eq)} NOT equivalent, "
            f"{sum(r.equivalence == 'not comparable' for r in rows)} not comparable")


def holds(row: Row) -> bool:
    """The rule the harness judges by: a conversion trains like one process (equivalent, or
    agreeing where the first steps cannot be compared, the reason said), or it is refused or
    left unchanged with the reason. A crash, a divergence or a step that is not equivalent
    does not hold (a crash of a script whose original fails here too is not the converter's)."""
    if row.conversion in ("refused", "unchanged"):
        return bool(row.reason)
    if row.conversion != "converted":
        return False
    if row.run == "original fails":
        return True
    return row.run == "agree" and (row.equivalence in ("equivalent", "")
                                   or (row.equivalence == "not comparable" and bool(row.equivalence_detail)))


def markdown(rows: list[Row]) -> str:
    out = ["| script | target | conversion | two-worker run | first step vs one process |",
           "|---|---|---|---|---|"]
    for r in rows:
        conv = r.conversion + (f": {r.reason}" if r.reason and r.conversion != "converted" else "")
        run = r.run + (f" ({r.run_detail})" if r.run in ("crash", "diverged", "timeout", "original fails") else "")
        eq = r.equivalence + (f" ({r.equivalence_detail})" if r.equivalence and r.equivalence != "equivalent" else "")
        cells = [f"`{r.script}`", r.target, conv, run or "-", eq or "-"]
        out.append("| " + " | ".join(c.replace("|", "\\|").replace("\n", " ") for c in cells) + " |")
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("folder", nargs="?", default=str(REPO / "tests" / "scripts"))
    p.add_argument("--targets", default=",".join(TARGETS))
    p.add_argument("--only", nargs="*", help="script file names to check (default: every *.py)")
    p.add_argument("--no-equivalence", action="store_true")
    p.add_argument("--combined", action="store_true",
                   help="one two-worker run per script with the equivalence probe on (half the runs)")
    p.add_argument("--timeout", type=int, default=300)
    p.add_argument("--json", help="write the rows as JSON here")
    p.add_argument("--markdown", help="write a Markdown table here")
    p.add_argument("--keep", help="keep converted scripts and run folders here")
    args = p.parse_args(argv)
    if not runner_ready():
        print("runner environment not built (make runner-env)", file=sys.stderr)
        return 2
    folder = Path(args.folder).resolve()
    scripts = sorted(folder.glob("*.py"))
    if args.only:
        scripts = [s for s in scripts if s.name in set(args.only)]
    targets = [t.strip() for t in args.targets.split(",") if t.strip()]
    work = Path(args.keep or tempfile.mkdtemp(prefix="tfdesk-corpus-"))
    rows, references = [], {}
    print(f"{len(scripts)} scripts from {folder}, targets {', '.join(targets)}", flush=True)
    for path in scripts:
        for target in targets:
            row = check(path, target, work, args.timeout, not args.no_equivalence, references,
                        combined=args.combined)
            rows.append(row)
            detail = row.reason if row.conversion != "converted" else (
                row.run_detail if row.run != "agree" else row.equivalence_detail)
            print(f"{row.script:34} {row.target:14} {row.conversion:10} {row.run or '-':9} "
                  f"{row.equivalence or '-':15} {row.seconds:6.1f}s  {detail[:160]}", flush=True)
    print(summary(rows))
    failed = [r for r in rows if not holds(r)]
    print(f"judge: {len(rows) - len(failed)} of {len(rows)} hold (equivalent, agreeing where not "
          f"comparable, or refused with the reason)"
          + "".join(f"\n  FAILS {r.script} {r.target}: {r.conversion} {r.run} {r.equivalence} "
                    f"{(r.run_detail or r.equivalence_detail or r.reason)[:160]}" for r in failed))
    if args.json:
        Path(args.json).write_text(json.dumps([asdict(r) for r in rows], indent=1))
    if args.markdown:
        Path(args.markdown).write_text(markdown(rows))
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
