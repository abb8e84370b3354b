"""Scale the learning rate by the number of workers (Horovod: the batch grows with them)."""
from __future__ import annotations

import libcst as cst

from converters.script import tables as T
from converters.script.names import add_kwarg, code, expr, find_arg, replace_arg, times
from converters.script.walk import nodes_of
from converters.script.transforms.base import RuleTransform


class ScaleLearningRate(RuleTransform):
    def _is_schedule(self, value: cst.BaseExpression) -> bool:
        if isinstance(value, cst.Call) and self.q(value.func) in T.SCHEDULES:
            return True
        return isinstance(value, cst.Name) and value.value in self.a.schedule_names

    @staticmethod
    def _is_rate(node: cst.BaseExpression) -> bool:
        return isinstance(node, cst.Attribute) and node.attr.value in T.LR_KEYWORDS

    def _scale_set_rate(self, original: cst.CSTNode, value: cst.BaseExpression):
        """The new value of a rate set on a live optimizer, scaled; None to leave it."""
        size = self.ctx.size
        # A relative update (lr * 0.1 read from the optimizer) is already scaled.
        if self.ctx.scaled(value) or any(self._is_rate(n) for n in nodes_of(value, cst.Attribute)):
            return None
        self.note(original, f"learning rate set to {code(value).strip()} on the optimizer: scaled by "
                            f"{size} like the initial rate")
        return times(value, size)

    def leave_Assign(self, original: cst.Assign, updated: cst.Assign) -> cst.Assign:
        if len(updated.targets) != 1 or not self._is_rate(updated.targets[0].target):
            return updated
        new = self._scale_set_rate(original, updated.value)
        return updated if new is None else updated.with_changes(value=new)

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        func = updated.func
        if (isinstance(func, cst.Attribute) and func.attr.value == "assign"
                and self._is_rate(func.value) and len(updated.args) == 1):
            new = self._scale_set_rate(original, updated.args[0].value)
            return updated if new is None else replace_arg(updated, 0, new)
        q = self.q(func)
        if q in T.LR_SETTERS and len(updated.args) > T.LR_SETTERS[q] \
                and self._is_rate(updated.args[0].value):
            i = T.LR_SETTERS[q]
            new = self._scale_set_rate(original, updated.args[i].value)
            return updated if new is None else replace_arg(updated, i, new)
        size = self.ctx.size
        if q in T.SCHEDULES:
            keyword, pos = T.SCHEDULES[q]
            found = find_arg(updated, keyword, pos)
            if not found or self.ctx.scaled(found[1].value):
                return updated
            i, arg = found
            if keyword == "values":
                new = expr(f"[v * {size} for v in {code(arg.value).strip()}]")
            else:
                new = times(arg.value, size)
            self.note(original, f"learning-rate schedule scaled by {size} ({keyword})")
            return replace_arg(updated, i, new)
        if q in T.KERAS_OPTIMIZERS or q in T.TF1_OPTIMIZERS:
            default = T.KERAS_OPTIMIZERS.get(q) or T.TF1_OPTIMIZERS.get(q)
            found = find_arg(updated, T.LR_KEYWORDS, 0)
            if found is None:
                if default is None:
                    self.note(original, "no learning rate found to scale; scale it by "
                                        f"{size} by hand", "warning")
                    return updated
                self.note(original, f"learning rate (default {default}) scaled by {size}")
                return add_kwarg(updated, "learning_rate", expr(f"{default} * {size}"))
            i, arg = found
            if self.ctx.scaled(arg.value):
                return updated
            if self._is_schedule(arg.value):
                return updated  # the schedule itself is scaled where it is built
            if isinstance(arg.value, cst.Call):
                self.note(original, f"learning rate comes from a call ({code(arg.value).strip()});"
                                    f" scaled the result by {size}: check it is a number", "warning")
            else:
                self.note(original, f"learning rate {code(arg.value).strip()} scaled by {size}")
            return replace_arg(updated, i, times(arg.value, size))
        return updated
