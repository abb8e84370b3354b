"""Saving: rank 0 only with Horovod; with tf.distribute every worker saves (it is collective)
and only the chief writes to the real path."""
from __future__ import annotations

import libcst as cst

from converters.script import tables as T
from converters.script.names import call, calls, code, dotted, find_arg, replace_arg
from converters.script.transforms.base import Rank0Guarded, RuleTransform, guard


def save_call(t: RuleTransform, node: cst.BaseExpression) -> tuple[str, int] | None:
    """(keyword, position) of the path argument if ``node`` is a TensorFlow save call."""
    if not isinstance(node, cst.Call):
        return None
    q = t.q(node.func)
    if q in T.SAVE_FUNCTIONS:
        return T.SAVE_FUNCTIONS[q]
    if isinstance(node.func, cst.Attribute) and node.func.attr.value in T.SAVE_METHODS:
        if t.a.not_keras(node.func.value):
            return None
        if q and (q.startswith("numpy") or q.startswith("pandas")):
            return None
        return T.SAVE_METHODS[node.func.attr.value]
    return None


class Rank0Saves(Rank0Guarded):
    def leave_SimpleStatementLine(self, original, updated):
        if len(updated.body) != 1 or self.guarded:
            return updated
        small = updated.body[0]
        if isinstance(small, cst.Expr) and save_call(self, small.value):
            name = dotted(small.value.func) or code(small.value.func).strip()
            self.note(original, f"{name}(...) runs on rank 0 only")
            return guard(updated, self.ctx.rank0)
        if isinstance(small, (cst.Assign, cst.AnnAssign)) and small.value is not None \
                and save_call(self, small.value):
            self.note(original, "a save whose result is used runs on every rank; guard it with "
                                f"'if {self.ctx.rank0}:' together with the code that uses it",
                      "warning")
        return updated


class ChiefSaves(RuleTransform):
    def leave_Call(self, original, updated):
        spec = save_call(self, updated)
        if spec is None:
            q = self.q(updated.func)
            if q and q.endswith("train.CheckpointManager"):
                spec = ("directory", 1)
            else:
                return updated
        found = find_arg(updated, *spec)
        if found is None or calls(found[1].value, "_chief_path"):
            return updated
        self.note(original, f"{code(updated.func).strip()}: every worker saves (collective), only "
                            f"the chief's copy goes to the real path")
        return replace_arg(updated, found[0], call("_chief_path", found[1].value))
