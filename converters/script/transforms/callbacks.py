"""Horovod's callbacks first in every fit(): broadcast rank 0's weights, average metrics."""
from __future__ import annotations

import libcst as cst

from converters.script.names import add_kwarg, expr, find_arg, has_name, operand, replace_arg
from converters.script.transforms.base import RuleTransform


def is_fit(node: cst.Call, analysis=None) -> bool:
    """A Keras fit() call (not scaler.fit() from scikit-learn and the like)."""
    return isinstance(node.func, cst.Attribute) and node.func.attr.value == "fit" and not (
        analysis is not None and analysis.not_keras(node.func.value))


class HorovodCallbacks(RuleTransform):
    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        if not is_fit(updated, self.a):
            return updated
        hvd = self.ctx.hvd
        first = [f"{hvd}.callbacks.BroadcastGlobalVariablesCallback(0)",
                 f"{hvd}.callbacks.MetricAverageCallback()"]
        found = find_arg(updated, "callbacks", None)
        msg = ("added BroadcastGlobalVariablesCallback(0) (all workers start from rank 0's "
               "weights) and MetricAverageCallback() first in the callbacks")
        if found is None:
            self.note(original, msg)
            return add_kwarg(updated, "callbacks", expr("[" + ", ".join(first) + "]"))
        i, arg = found
        if has_name(arg.value, "BroadcastGlobalVariablesCallback"):
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
