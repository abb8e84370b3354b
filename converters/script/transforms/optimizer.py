"""Wrap the optimizer so gradients are averaged across workers (Horovod's DistributedOptimizer)."""
from __future__ import annotations

import libcst as cst

from converters.script import tables as T
from converters.script.names import call, code, dotted, expr, find_arg, has_name, replace_arg
from converters.script.transforms.base import RuleTransform


class WrapOptimizer(RuleTransform):
    def __init__(self, ctx, rule_id=""):
        super().__init__(ctx, rule_id)
        self.inside_wrapper = 0

    def _wrapper(self, node: cst.Call) -> bool:
        return isinstance(node.func, cst.Attribute) and node.func.attr.value == "DistributedOptimizer"

    def _known(self, value: cst.BaseExpression) -> bool:
        """Whether the optimizer passed to compile() is one this rule wraps where it is built."""
        if has_name(value, "DistributedOptimizer"):
            return True
        if isinstance(value, cst.Call):
            return self._known_callee(self.q(value.func))
        name = dotted(value)
        sources = self.a.assigned_from.get(name) if name else None
        return bool(sources) and all(self._known_callee(s) for s in sources)

    def _known_callee(self, q: str | None) -> bool:
        return bool(q) and (q in T.KERAS_OPTIMIZERS or q in T.TF1_OPTIMIZERS
                            or q.endswith("DistributedOptimizer") or q.split(".")[-1] in self.a.builders)

    def visit_Call(self, node: cst.Call):
        if self._wrapper(node):
            self.inside_wrapper += 1

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        hvd = self.ctx.hvd
        if self._wrapper(original):
            self.inside_wrapper -= 1
            return updated
        q = self.q(updated.func)
        if (q in T.KERAS_OPTIMIZERS or q in T.TF1_OPTIMIZERS) and not self.inside_wrapper:
            self.note(original, f"optimizer wrapped in {hvd}.DistributedOptimizer: gradients are "
                                f"averaged across workers")
            return call(f"{hvd}.DistributedOptimizer", updated)
        if isinstance(updated.func, cst.Attribute) and updated.func.attr.value == "compile":
            found = find_arg(updated, "optimizer", 0)
            if found and not isinstance(found[1].value, cst.SimpleString) \
                    and not self._known(found[1].value):
                value = found[1].value
                return self._scaled_here(original, updated, found, code(value).strip())
            if found and isinstance(found[1].value, cst.SimpleString):
                name = found[1].value.evaluated_value.lower()
                cls = T.STRING_OPTIMIZERS.get(name)
                if cls is None:
                    return self._scaled_here(original, updated, found, repr(name))
                default = T.KERAS_OPTIMIZERS[f"keras.optimizers.{cls}"]
                new = expr(f"{hvd}.DistributedOptimizer({self.ctx.keras}.optimizers.{cls}"
                           f"(learning_rate={default} * {self.ctx.size}))")
                self.note(original, f"optimizer {name!r} replaced by {self.ctx.keras}.optimizers."
                                    f"{cls} with its default rate {default} scaled by "
                                    f"{self.ctx.size}, wrapped in {hvd}.DistributedOptimizer")
                return replace_arg(updated, found[0], new)
        return updated

    def _scaled_here(self, original, updated, found, what):
        """compile(optimizer=X) where X is built where tfdesk cannot follow (a dict picked by a
        flag, optimizers.get(config), a parameter): scaled and wrapped when the script runs,
        unless it already is (built by a class this rule wrapped where it is made)."""
        self.ctx.helpers.add("distributed_optimizer")
        self.note(original, f"the optimizer comes from {what}, built where tfdesk cannot follow: "
                            f"_hvd_distributed scales its learning rate by {self.ctx.size} and "
                            f"wraps it in {self.ctx.hvd}.DistributedOptimizer when the script runs "
                            f"(unless it already is)")
        return replace_arg(updated, found[0], call("_hvd_distributed", found[1].value))


# Keyword arguments horovod.tensorflow.keras.load_model takes besides the path.
HVD_LOAD_KEYWORDS = {"custom_objects", "custom_optimizers", "compression"}


class LoadedOptimizer(RuleTransform):
    """``keras.models.load_model(path)`` brings the model back compiled with the optimizer it
    was saved with, not wrapped: trained again, each worker would train its own copy.
    Horovod's ``hvd.load_model`` loads it with the optimizer wrapped in DistributedOptimizer
    (its saved, already scaled, learning rate kept)."""

    def leave_Call(self, original, updated):
        if self.q(updated.func) not in ("keras.models.load_model", "keras.saving.load_model"):
            return updated
        path = find_arg(updated, "filepath", 0)
        others = [a for a in updated.args if path is None or a is not path[1]]
        if path is None or any(a.keyword is None or a.keyword.value not in HVD_LOAD_KEYWORDS
                               for a in others):
            self.note(original, f"this model is loaded with options {self.ctx.hvd}.load_model does not "
                                "take: if it is trained again, wrap its optimizer in "
                                f"{self.ctx.hvd}.DistributedOptimizer by hand", "warning")
            return updated
        self.note(original, f"loaded with {self.ctx.hvd}.load_model: its optimizer comes back wrapped "
                            "in DistributedOptimizer, so training it again averages gradients")
        return updated.with_changes(func=expr(f"{self.ctx.hvd}.load_model"))
