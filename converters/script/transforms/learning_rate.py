"""Scale the learning rate by the number of workers (Horovod: the batch grows with them)."""
from __future__ import annotations

import libcst as cst

from converters.script import tables as T
from converters.script.names import add_kwarg, code, expr, find_arg, replace_arg, times
from converters.script.transforms.base import RuleTransform


class ScaleLearningRate(RuleTransform):
    def _is_schedule(self, value: cst.BaseExpression) -> bool:
        if isinstance(value, cst.Call) and self.q(value.func) in T.SCHEDULES:
            return True
        return isinstance(value, cst.Name) and value.value in self.a.schedule_names

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        q = self.q(updated.func)
        size = self.ctx.size
        if q in T.SCHEDULES:
            keyword, pos = T.SCHEDULES[q]
            found = find_arg(updated, keyword, pos)
            if not found or size in code(found[1].value):
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
            if size in code(arg.value):
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
