"""Horovod's callbacks first in every fit(): broadcast rank 0's weights, average metrics."""
from __future__ import annotations

import libcst as cst

from converters.script import tables as T
from converters.script.names import add_kwarg, dotted, expr, find_arg, has_name, operand, replace_arg
from converters.script.walk import nodes_of
from converters.script.transforms.base import RuleTransform


def is_fit(node: cst.Call, analysis=None) -> bool:
    """A Keras fit() call (not scaler.fit() from scikit-learn and the like)."""
    return isinstance(node.func, cst.Attribute) and node.func.attr.value == "fit" and not (
        analysis is not None and analysis.not_keras(node.func.value))


WARMUP = "HVD024"


class HorovodCallbacks(RuleTransform):
    def _warmup(self, original: cst.Call, call: cst.Call) -> str | None:
        """Horovod's LearningRateWarmupCallback, starting from the optimizer's (scaled) rate."""
        n = self.ctx.warmup_epochs
        model = dotted(call.func.value)
        why = None
        warmup = f"{self.ctx.hvd}.callbacks.LearningRateWarmupCallback"
        if model is None:
            why = f"the model is not a plain name here; add {warmup} by hand"
        elif self.a.schedule_names or any(self.q(c.func) in T.SCHEDULES for c in nodes_of(call, cst.Call)):
            why = ("the learning rate follows a schedule, which a warm-up would overwrite; "
                   "fold the warm-up into the schedule by hand")
        epochs = find_arg(call, "epochs", None)
        if why is None and epochs and isinstance(epochs[1].value, cst.Integer) \
                and int(epochs[1].value.value) < n:
            why = (f"this fit() runs {epochs[1].value.value} epoch(s), fewer than the {n}-epoch "
                   "warm-up, so the scaled rate would never be reached")
        if why:
            self.note(original, f"learning-rate warm-up not added: {why}", "warning", WARMUP)
            return None
        self.note(original, f"learning rate warms up from rate / {self.ctx.size} to the scaled "
                            f"rate over the first {n} epoch{'s' if n != 1 else ''}", rule_id=WARMUP)
        # Read when fit() is called: the model is compiled by then, its rate already scaled.
        lr = f"{self.ctx.keras}.backend.get_value({model}.optimizer.lr)"
        return f"{warmup}(initial_lr={lr}, warmup_epochs={n})"

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        if not is_fit(updated, self.a):
            return updated
        hvd = self.ctx.hvd
        # Only real variables are broadcast: Keras 2.15's lookup layers (StringLookup, and those
        # FeatureSpace or a helper module builds, which the script does not show) list vocabulary
        # handlers among model.variables, on which BroadcastGlobalVariablesCallback fails.
        first = ["_HvdBroadcastVariables()", f"{hvd}.callbacks.MetricAverageCallback()"]
        found = find_arg(updated, "callbacks", None)
        why = (f" (Horovod's BroadcastGlobalVariablesCallback fails on the vocabulary of "
               f"{', '.join(sorted(self.a.lookup_layers))})" if self.a.lookup_layers else "")
        msg = (f"added _HvdBroadcastVariables() (all workers start from rank 0's weights; only "
               f"real variables are broadcast{why}) and MetricAverageCallback() first in the "
               f"callbacks")
        done = found and (has_name(found[1].value, "BroadcastGlobalVariablesCallback")
                          or has_name(found[1].value, "_HvdBroadcastVariables"))
        if not done:
            self.ctx.helpers.add("broadcast_callback")
        if self.ctx.warmup_epochs and not done:
            warmup = self._warmup(original, updated)
            if warmup:
                first.append(warmup)
        if found is None:
            self.note(original, msg)
            return add_kwarg(updated, "callbacks", expr("[" + ", ".join(first) + "]"))
        i, arg = found
        if done:
            return updated
        self.note(original, msg)
        if isinstance(arg.value, cst.List):
            new_elems = [cst.Element(expr(e), comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
                         for e in first]
            if not arg.value.elements:
                new_elems[-1] = new_elems[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
            return replace_arg(updated, i, arg.value.with_changes(
                elements=[*new_elems, *arg.value.elements]))
        return replace_arg(updated, i, cst.BinaryOperation(
            left=expr("[" + ", ".join(first) + "]"), operator=cst.Add(), right=operand(arg.value)))
