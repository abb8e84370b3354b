"""Custom loops with Horovod: average gradients through hvd.DistributedGradientTape, and
broadcast rank 0's variables after the first step (when the optimizer's slots exist)."""
from __future__ import annotations

import libcst as cst

from converters.script.names import code, dotted, statements
from converters.script.transforms.statements import StatementRule


def tape_names(stmt: cst.BaseStatement, t) -> list[str]:
    """The tapes a ``with`` opens (a GAN step opens one per model)."""
    if not isinstance(stmt, cst.With):
        return []
    return [item.asname.name.value for item in stmt.items
            if isinstance(item.item, cst.Call) and (t.q(item.item.func) or "").endswith("GradientTape")
            and item.asname and isinstance(item.asname.name, cst.Name)]


def tape_name(stmt: cst.BaseStatement, t) -> str | None:
    names = tape_names(stmt, t)
    return names[0] if names else None


class DistributedTape(StatementRule):
    def after(self, original, stmt, following):
        names = tape_names(stmt, self)
        if not names:
            return []
        if following is not None and "DistributedGradientTape" in code(following):
            return []
        self.note(original, f"{', '.join(names)} wrapped in {self.ctx.hvd}.DistributedGradientTape: "
                            f"gradients are averaged across workers")
        return statements("".join(f"{n} = {self.ctx.hvd}.DistributedGradientTape({n})\n" for n in names))


def apply_gradients(stmt: cst.BaseStatement) -> cst.Call | None:
    if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1:
        small = stmt.body[0]
        value = getattr(small, "value", None)
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) \
                and value.func.attr.value == "apply_gradients":
            return value
    return None


class BroadcastAfterFirstStep(StatementRule):
    def after(self, original, stmt, following):
        call = apply_gradients(stmt)
        if call is None:
            return []
        if following is not None and "broadcast_variables" in code(following):
            return []
        opt = code(call.func.value).strip()
        variables = None
        if call.args and isinstance(call.args[0].value, cst.Call) \
                and dotted(call.args[0].value.func) == "zip" and len(call.args[0].value.args) == 2:
            variables = call.args[0].value.args[1].value
        if variables is None:
            self.note(original, "could not tell which variables this step trains; broadcast them "
                                f"from rank 0 after the first step by hand "
                                f"({self.ctx.hvd}.broadcast_variables(..., root_rank=0))", "error")
            return []
        var_text = code(variables).strip()
        if isinstance(variables, cst.Attribute) and variables.attr.value in (
                "trainable_variables", "trainable_weights"):
            var_text = f"{code(variables.value).strip()}.variables"
        hvd = self.ctx.hvd
        self.note(original, f"after the first step, rank 0's {var_text} and optimizer state are "
                            "broadcast to all workers")
        return statements(
            "# Horovod: start every worker from rank 0's state once the first step has created the\n"
            "# optimizer's slots.\n"
            f"if {opt}.iterations == 1:\n"
            f"    {hvd}.broadcast_variables({var_text}, root_rank=0)\n"
            f"    {hvd}.broadcast_variables({opt}.variables, root_rank=0)\n")
