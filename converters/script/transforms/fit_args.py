"""fit() arguments: verbose output on rank 0 / the chief only; steps per epoch split by workers."""
from __future__ import annotations

import libcst as cst

from converters.script.names import add_kwarg, code, expr, find_arg, floordiv, operand, replace_arg
from converters.script.transforms.base import RuleTransform


def _method(node: cst.Call, analysis=None) -> str | None:
    if not isinstance(node.func, cst.Attribute):
        return None
    if analysis is not None and analysis.not_keras(node.func.value):
        return None
    return node.func.attr.value


class QuietWorkers(RuleTransform):
    """verbose only where the condition holds (rank 0 or the chief)."""

    def condition(self) -> str:
        return self.ctx.rank0 if self.ctx.target == "horovod" else "_is_chief()"

    def leave_Call(self, original, updated):
        if _method(updated, self.a) != "fit":
            return updated
        cond = self.condition()
        found = find_arg(updated, "verbose", None)
        if found is None:
            self.note(original, "progress output on one worker only (verbose=0 elsewhere)")
            return add_kwarg(updated, "verbose", expr(f"1 if {cond} else 0"))
        i, arg = found
        # Already quiet (verbose=0 / False) everywhere: nothing to split.
        if cond in code(arg.value) or (isinstance(arg.value, (cst.Integer, cst.Name))
                                       and arg.value.value in ("0", "False")):
            return updated
        self.note(original, "progress output on one worker only (verbose=0 elsewhere)")
        return replace_arg(updated, i, cst.IfExp(test=expr(cond), body=operand(arg.value),
                                                 orelse=cst.Integer("0")))


class SplitSteps(RuleTransform):
    """Horovod: each worker runs steps_per_epoch / size steps, so an epoch stays one epoch."""

    def leave_Call(self, original, updated):
        if _method(updated, self.a) != "fit":
            return updated
        for kw in ("steps_per_epoch", "validation_steps"):
            found = find_arg(updated, kw, None)
            if found and not self.ctx.scaled(found[1].value) and not (
                    isinstance(found[1].value, cst.Name) and found[1].value.value == "None"):
                self.note(original, f"{kw} divided by {self.ctx.size}")
                updated = replace_arg(updated, found[0], floordiv(found[1].value, self.ctx.size))
        return updated
