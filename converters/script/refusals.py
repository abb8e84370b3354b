"""Refusals before any rewrite: what a target cannot run, said with the reason, and the way out
offered only when it is one the converter carries through.

A refusal may point at the other target ("convert with --to tf-distribute"). Such a suggestion
is checked, not assumed: the converter is run on the same script for the suggested target
(statically, nothing executes), and the suggestion is offered only when that conversion goes
through without errors; otherwise the refusal says why the other target refuses too.
"""
from __future__ import annotations

import re
from typing import Callable

from converters.script import tables as T
from converters.script.analysis import Analysis
from converters.script.errors import ConversionError

# The runtime each target runs on (catalog/environments.py builds them; named in refusals).
HOROVOD_RUNTIME = "tfdesk's Horovod runtime (TF 2.15.1, Keras 2.15, Horovod 0.28.1)"
KERAS3_RUNTIME = "tfdesk's Keras 3 runtime (TF 2.21, Keras 3)"
OTHER = {"horovod": "tf-distribute", "tf-distribute": "horovod"}

# (target) -> the refusal that converting to it would give, or None when it converts: set by
# api.convert for the script being converted (a function, so the check runs only when a
# refusal wants to suggest the other target).
Probe = Callable[[str], "str | None"]


def way_out(probe: Probe | None, target: str, filename: str, fallback: str) -> str:
    """'Convert with --to OTHER' when the converter carries that conversion through, else why
    not, followed by ``fallback`` (the way out that does not depend on the other target)."""
    other = OTHER[target]
    why = probe(other) if probe is not None else "not checked"
    if why is None:
        return f"Convert with --to {other} (tfdesk checked that it converts), or {fallback}"
    return f"Converting with --to {other} is no way out either ({why}). Instead, {fallback}"


_FINDING = re.compile(r"^.*?:\d+:\d+: error: \[\w+\] ")


def reason_of(error: ConversionError) -> str:
    """The refusal's rule and first clause: 'TFD053: the training step is written inline ...'."""
    lines = str(error).splitlines()
    text = lines[0]
    if len(lines) > 1 and "was not converted" in lines[0]:
        text = _FINDING.sub("", lines[1])  # the first error finding, without file:line:col
    else:
        text = text.split(" ", 1)[-1]  # without the file name that starts it
    clause = re.split(r"(?<=[a-z)]): |\. |; ", text, maxsplit=1)[0]
    return f"{error.rule_id}: {clause}"


def distributed(a: Analysis, target: str, filename: str, probe: Probe | None) -> None:
    """A script that distributes itself with tf.distribute, converted to Horovod."""
    if not (target == "horovod" and a.already_distributed == "tf.distribute"):
        return
    if a.keras == "keras3":  # the deeper reason: taking the strategy out would not help
        _horovod(a, filename, probe)
    line = a.distributed_line or 1
    strategy = a.strategy_class or "a tf.distribute strategy"
    if strategy in T.SINGLE_MACHINE_STRATEGIES:
        raise ConversionError(
            f"{filename} already uses {strategy} (line {line}), which trains on the GPUs of "
            f"one machine in one process; under horovodrun every process would build its own "
            f"strategy and train its own model, with nothing averaged between them. "
            + way_out(probe, target, filename, "take the strategy out and convert to Horovod again."),
            line=line, rule_id="HVD004")
    raise ConversionError(
        f"{filename} is already distributed with {strategy} (line {line}); Horovod on top "
        f"of it would train separate copies. Run it as it is (tfdesk train --convert "
        f"tf-distribute), or take the strategy out and convert to Horovod again.",
        line=line, rule_id="HVD004")


def before_rules(a: Analysis, target: str, filename: str, probe: Probe | None) -> None:
    if target == "horovod":
        _horovod(a, filename, probe)
    else:
        _tf_distribute(a, filename, probe)


def _horovod(a: Analysis, filename: str, probe: Probe | None) -> None:
    if a.keras == "keras3":
        line, api = a.keras3_evidence[0]
        raise ConversionError(
            f"{filename} uses Keras 3 ({api}, line {line}), and Horovod runs on Keras 2 only: "
            f"{HOROVOD_RUNTIME} cannot run it, and under Keras 3 Horovod's optimizer wrapper and "
            f"callbacks do not average gradients (nothing fails; each worker would train its "
            f"own model). " + way_out(probe, "horovod", filename,
                                      "port the script to tf_keras (TF_USE_LEGACY_KERAS=1) first."),
            line=line, rule_id="HVD002")
    if "keras_fit" in a.styles and "custom_loop" in a.styles:
        raise ConversionError(
            f"{filename} trains with both model.fit (line {a.evidence['keras_fit']}) and a "
            f"custom GradientTape loop (line {a.evidence['custom_loop']}); Horovod needs a "
            f"different recipe for each. "
            + way_out(probe, "horovod", filename, "split the script and convert each part."),
            line=a.evidence["custom_loop"], rule_id="HVD003")


def _tf_distribute(a: Analysis, filename: str, probe: Probe | None) -> None:
    for style, what in (("tf1_session", "TF1 session code (tf.compat.v1.Session / "
                                        "MonitoredTrainingSession)"),
                        ("estimator", "an Estimator (removed in TF 2.16)")):
        if style in a.styles:
            raise ConversionError(
                f"{filename} trains with {what} at line {a.evidence[style]}; "
                f"MultiWorkerMirroredStrategy does not run that code. "
                + way_out(probe, "tf-distribute", filename,
                          "port the script to Keras fit or a GradientTape loop first."),
                line=a.evidence[style], rule_id="TFD002")
    if a.keras == "keras3" and ("keras_fit" in a.styles or a.train_steps):
        line = a.evidence.get("keras_fit") or min(a.train_steps.values())
        limit = T.KERAS3_LIMITS["fit_under_mwms"]
        evidence, at = a.keras3_evidence[0][1], a.keras3_evidence[0][0]
        raise ConversionError(
            f"{filename} needs Keras 3 ({evidence}, line {at}), so it runs on {KERAS3_RUNTIME}, and "
            f"it trains with fit() (line {line}): {limit['what']} (upstream {limit['upstream']}). "
            f"Converted, it would fail at start on every worker. "
            + way_out(probe, "tf-distribute", filename,
                      "rewrite the fit() as a custom training loop (a @tf.function step with a "
                      "GradientTape and optimizer.apply), which tfdesk converts and which trains "
                      "in sync on Keras 3, and convert again."),
            line=line, rule_id="TFD006")
