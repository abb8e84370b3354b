"""Horovod: no XLA around its collectives. ``compile(jit_compile=True)`` and
``tf.function(jit_compile=True)`` would put the allreduce inside an XLA cluster, which has no
kernel for it (the script stops at the first step); XLA is turned off, the maths is unchanged."""
from __future__ import annotations

import libcst as cst

from converters.script.names import code, find_arg, replace_arg
from converters.script.transforms.base import RuleTransform


def _jit_owner(t: RuleTransform, node: cst.Call) -> str | None:
    f = node.func
    if isinstance(f, cst.Attribute) and f.attr.value == "compile" and not t.a.not_keras(f.value):
        return "compile()"
    q = t.q(f)
    if q in ("tf.function", "tf1.function"):
        return "tf.function"
    return None


class NoXLA(RuleTransform):
    why = "XLA has no kernel for Horovod's allreduce"

    def leave_Call(self, original, updated):
        owner = _jit_owner(self, updated)
        if owner is None:
            return updated
        found = find_arg(updated, "jit_compile", None)
        if found is None or code(found[1].value).strip() in ("False", "None"):
            return updated
        self.note(original, f"{owner}: jit_compile turned off, {self.why} "
                            "(the results are the same, without XLA's speed-up)")
        return replace_arg(updated, found[0], cst.Name("False"))

    def leave_FunctionDef(self, original, updated):
        # Decorators are not walked by the traversal: @tf.function(jit_compile=True) is read here.
        decorators, changed = [], False
        for d in updated.decorators:
            if isinstance(d.decorator, cst.Call):
                new = self.leave_Call(original, d.decorator)
                if new is not d.decorator:
                    d, changed = d.with_changes(decorator=new), True
            decorators.append(d)
        return updated.with_changes(decorators=decorators) if changed else updated


class NoXLAForStrategy(NoXLA):
    """tf.distribute: the same on CPU workers, where XLA cannot compile the all-reduce of
    MultiWorkerMirroredStrategy ("Collectives are not yet implemented for CPU devices")."""
    why = "XLA cannot compile MultiWorkerMirroredStrategy's all-reduce on CPU workers"
