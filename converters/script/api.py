"""convert(): check, analyse, apply the target's rules in order, and explain every change."""
from __future__ import annotations

import difflib
import gc
from contextlib import contextmanager
from dataclasses import dataclass, field

from converters.script.analysis import Analysis, analyze
from converters.script import refusals
from converters.script.errors import ConversionError
from converters.script.findings import Finding, format_report
from converters.script.rules import MIRRORED, MIRRORED_RULES, TARGETS, rules_for
from converters.script.transforms.tfd_strategy import SINGLE_MACHINE
from converters.script.positions import Positions
from converters.script.render import render, spans
from converters.script.source import load
from converters.script.transforms.base import Combined, RuleContext

TARGET_ALIASES = {"horovod": "horovod", "hvd": "horovod", "tf-distribute": "tf-distribute",
                  "tf.distribute": "tf-distribute", "tf_distribute": "tf-distribute",
                  "mwms": "tf-distribute"}


@dataclass
class ConversionResult:
    source: str
    code: str
    target: str
    filename: str
    analysis: Analysis
    findings: list[Finding] = field(default_factory=list)
    tree: object = field(default=None, repr=False)  # the converted LibCST module, if any

    @property
    def changed(self) -> bool:
        return self.code != self.source

    @property
    def diff(self) -> str:
        return "".join(difflib.unified_diff(
            self.source.splitlines(keepends=True), self.code.splitlines(keepends=True),
            fromfile=f"a/{self.filename}", tofile=f"b/{self.filename}"))

    @property
    def report(self) -> str:
        return format_report(self.findings, self.filename)

    def counts(self) -> dict[str, int]:
        out = {"info": 0, "warning": 0, "error": 0}
        for f in self.findings:
            out[f.severity] = out.get(f.severity, 0) + 1
        return out

    def to_dict(self) -> dict:
        return {"filename": self.filename, "target": self.target, "changed": self.changed,
                "analysis": self.analysis.to_dict(), "counts": self.counts(),
                "findings": [f.to_dict() for f in sorted(self.findings, key=lambda f: (f.line, f.col))],
                "code": self.code, "diff": self.diff}


def _unchanged(text, target, filename, analysis, finding) -> ConversionResult:
    return ConversionResult(text, text, target, filename, analysis, [finding])


def _distributed(a: Analysis, target: str, filename: str, text: str, probe) -> ConversionResult:
    """A script that already distributes itself: unchanged for its own framework, refused for
    the other one (two frameworks would each start their own copies of the training)."""
    refusals.distributed(a, target, filename, probe)
    prefix = "HVD" if target == "horovod" else "TFD"
    same = (a.already_distributed == "horovod") == (target == "horovod")
    return _unchanged(text, target, filename, a, Finding(
        f"{prefix}000", a.distributed_line or 1, 1, "info" if same else "warning",
        f"already distributed with {a.already_distributed} (line {a.distributed_line}); "
        f"nothing changed"))


def _probe(source, filename: str):
    """What converting the same script to another target gives: None when it converts, else
    the refusal's reason (for refusals that would suggest that target)."""
    def probe(other: str) -> str | None:
        try:
            _convert(source, other, filename, suggest=False)
        except ConversionError as e:
            return refusals.reason_of(e)
        return None
    return probe


def _context(a: Analysis, target: str) -> RuleContext:
    # 'import tensorflow.compat.v1 as tf' takes the name tf: the code tfdesk adds imports
    # TensorFlow 2 under another name rather than shadow the script's tf.
    tf = a.tf_alias or ("tf" if "tf" not in a.names else "_tf")
    if a.keras in ("keras", "tf_keras") and a.keras_alias:
        keras = a.keras_alias
    else:
        keras = f"{tf}.keras"
    hvd = "hvd" if "hvd" not in a.names else "hvd_"
    strategy = "strategy" if "strategy" not in a.names else "dist_strategy"
    module = "horovod.tensorflow.keras" if "keras_fit" in a.styles else "horovod.tensorflow"
    return RuleContext(analysis=a, target=target, hvd=hvd, tf=tf, keras=keras,
                       strategy=strategy, hvd_module=module)


@contextmanager
def _collector_paused():
    # A large script's tree is hundreds of thousands of small objects, and parsing, rewriting
    # and code generation allocate many more: Python's cycle collector would rescan the whole
    # tree again and again (a fifth of the time). Nothing here makes reference cycles that
    # need it; it is switched back on (if it was on) as soon as the conversion returns.
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


def convert(source: str | bytes, target: str = "horovod", filename: str = "script.py",
            warmup_epochs: int | None = None, force: bool = False) -> ConversionResult:
    """Convert a single-process training script; nothing from it is executed.

    ``warmup_epochs`` (Horovod, Keras fit()): ramp the learning rate up from rate / size to the
    scaled rate over that many epochs, with Horovod's LearningRateWarmupCallback.

    A conversion with error-level findings raises ConversionError (its ``findings`` hold them
    all) unless ``force``: then the partial result comes back, errors included.
    """
    with _collector_paused():
        return _convert(source, target, filename, warmup_epochs, force)


def _convert(source, target, filename, warmup_epochs=None, force=False,
             suggest: bool = True) -> ConversionResult:
    target_key = TARGET_ALIASES.get((target or "").strip().lower())
    if target_key is None:
        raise ConversionError(f"unknown target {target!r}; choose one of: {', '.join(TARGETS)}")
    if warmup_epochs is not None:
        if target_key != "horovod":
            raise ConversionError("learning-rate warm-up is a Horovod callback; use it with "
                                  "--to horovod (tf.distribute has no built-in warm-up)")
        if not isinstance(warmup_epochs, int) or not 1 <= warmup_epochs <= 100:
            raise ConversionError(f"warm-up epochs must be a whole number from 1 to 100, not "
                                  f"{warmup_epochs!r}")
    text, module, tree = load(source, filename)
    a = analyze(tree)
    prefix = "HVD" if target_key == "horovod" else "TFD"
    # A MirroredStrategy script (one machine) becomes multi-worker under tf-distribute.
    mirrored = target_key == "tf-distribute" and a.already_distributed == "tf.distribute" \
        and a.strategy_class in SINGLE_MACHINE
    probe = _probe(text, filename) if suggest else None
    if a.already_distributed and not mirrored:
        return _distributed(a, target_key, filename, text, probe)
    if not a.has_training:
        return _unchanged(text, target_key, filename, a, Finding(
            f"{prefix}000", 1, 1, "info", "no training found (no fit(), GradientTape loop, "
            "TF1 session or Estimator); nothing changed"))
    refusals.before_rules(a, target_key, filename, probe)
    ctx = _context(a, target_key)
    ctx.warmup_epochs = warmup_epochs
    # Where original nodes start, for findings: worked out only for the nodes that get one.
    ctx.positions = Positions(module, tree, text)
    styles = [*a.styles, *(["train_step"] if a.train_steps else []), *([MIRRORED] if mirrored else [])]
    rules = rules_for(target_key, styles)
    if mirrored:
        rules = [r for r in rules if r.id in MIRRORED_RULES]
    transforms = [rule.transform(ctx, rule.id) for rule in rules]
    converted = Combined(transforms, ctx.positions.stack).transform(module)
    findings = [f for t in transforms for f in t.findings]
    findings += _left_for_humans(a, target_key, ctx)
    code = render(converted, spans(module, text, ctx.positions.starts))
    result = ConversionResult(text, code, target_key, filename, a, findings, converted)
    errors = [f for f in result.findings if f.severity == "error"]
    if errors and not force:
        errors.sort(key=lambda f: (f.line, f.col))
        raise ConversionError(
            f"{filename} was not converted: {len(errors)} error{'s' if len(errors) != 1 else ''} "
            f"that would leave a script which does not train like the original:\n"
            + format_report(errors, filename)
            + "\nFix the script, or convert with --force to get the partial conversion anyway.",
            line=errors[0].line, rule_id=errors[0].rule_id, findings=result.findings)
    return result


def _left_for_humans(a: Analysis, target: str, ctx: RuleContext) -> list[Finding]:
    out = []
    line = a.first_import_line
    if target == "horovod" and a.keras == "keras":
        out.append(Finding("HVD002", line, 1, "warning",
                           "'import keras' is Keras 3 on TF >= 2.16, where Horovod does not "
                           "average gradients; the converted script stops at start unless Keras 2 "
                           "is installed (TF <= 2.15, or tf_keras with TF_USE_LEGACY_KERAS=1)"))
    if target == "horovod" and "keras_fit" in a.styles and not ctx.warmup_epochs:
        out.append(Finding("HVD024", a.evidence["keras_fit"], 1, "info",
                           "optional: with many workers, ramp the scaled learning rate up over the "
                           "first epochs (convert again with --warmup-epochs 5)"))
    if ctx.warmup_epochs and "keras_fit" not in a.styles:
        out.append(Finding("HVD024", line, 1, "warning",
                           "learning-rate warm-up not added: it is a Keras callback and this "
                           "script does not train with fit(); ramp the rate up in the loop by hand"))
    if "estimator" in a.styles:
        out.append(Finding("HVD062", a.evidence["estimator"], 1, "warning",
                           "Estimators were removed in TF 2.16: this runs on TF <= 2.15 only; "
                           "evaluate() runs on every worker"))
    if target == "tf-distribute":
        out.append(Finding("TFD003", line, 1, "info",
                           "run one process per worker, each with TF_CONFIG naming the cluster and its "
                           "own task index (tfdesk train --workers N --convert tf-distribute does this)"))
    return out
