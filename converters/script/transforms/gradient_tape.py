"""Custom loops with Horovod: average gradients through hvd.DistributedGradientTape, and
broadcast rank 0's variables after the first step (when the optimizer's slots exist)."""
from __future__ import annotations

import libcst as cst

from converters.script.names import call, code, dotted, expr, statements
from converters.script.transforms.statements import StatementRule
from converters.script.walk import nodes_of


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


def gradients_inside(stmt: cst.With, names: list[str]) -> list[str]:
    """The tapes among ``names`` whose gradient() is called inside the ``with`` block itself."""
    called = {dotted(c.func.value) for c in nodes_of(stmt.body, cst.Call)
              if isinstance(c.func, cst.Attribute) and c.func.attr.value in ("gradient", "jacobian")}
    return [n for n in names if n in called]


def input_tapes(stmt: cst.With, names: list[str]) -> list[str]:
    """The tapes among ``names`` that watch() tensors (not variables) in their block: gradients
    with respect to inputs (a WGAN's gradient penalty, saliency maps) are per example, and
    averaging them across workers would mix one worker's examples with another's."""
    found = []
    for c in nodes_of(stmt.body, cst.Call):
        if isinstance(c.func, cst.Attribute) and c.func.attr.value == "watch" and c.args:
            tape, watched = dotted(c.func.value), code(c.args[0].value)
            if tape in names and tape not in found and not any(
                    w in watched for w in ("variables", "weights")):
                found.append(tape)
    return found


class DistributedTape(StatementRule):
    """Gradients averaged across workers by hvd.DistributedGradientTape. After the block, as
    Horovod's examples do; but when gradient() is called inside the block, wrapping after it
    would come too late (the gradients were already taken, and applied, unaveraged): then the
    tape is wrapped where the block opens it, ``with hvd.DistributedGradientTape(tf.GradientTape())``,
    which records and averages like the plain tape."""

    def _inputs_only(self, original, names: list[str]) -> list[str]:
        skipped = input_tapes(original, names)
        if skipped:
            self.note(original, f"{', '.join(skipped)} differentiates with respect to the tensors it "
                                "watches (inputs, not weights): those gradients stay per worker, "
                                "not averaged")
        return [n for n in names if n not in skipped]

    def leave_With(self, original, updated):
        inside = gradients_inside(original, tape_names(original, self))
        inside = self._inputs_only(original, inside) if inside else inside
        if not inside:
            return updated
        hvd = self.ctx.tape_hvd
        items = []
        for item in updated.items:
            name = item.asname.name.value if item.asname and isinstance(item.asname.name, cst.Name) else None
            if name in inside and not (isinstance(item.item, cst.Call)
                                       and "DistributedGradientTape" in code(item.item.func)):
                item = item.with_changes(item=call(expr(f"{hvd}.DistributedGradientTape"), item.item))
            items.append(item)
        self.note(original, f"{', '.join(inside)} opened as {hvd}.DistributedGradientTape: its "
                            "gradients, taken inside the block, are averaged across workers")
        return updated.with_changes(items=items)

    def after(self, original, stmt, following):
        names = tape_names(original, self)
        if not names or gradients_inside(original, names):
            return []
        if following is not None and "DistributedGradientTape" in code(following):
            return []
        names = self._inputs_only(original, names)
        if not names:
            return []
        hvd = self.ctx.tape_hvd
        self.note(original, f"{', '.join(names)} wrapped in {hvd}.DistributedGradientTape: "
                            f"gradients are averaged across workers")
        return statements("".join(f"{n} = {hvd}.DistributedGradientTape({n})\n" for n in names))


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
        if var_text.endswith((".variables", ".weights")):
            # Only real variables: lookup layers list vocabulary handlers among them.
            self.ctx.helpers.add("variables")
            var_text = f"_hvd_variables({var_text})"
        self.note(original, f"after the first step, rank 0's {var_text} and optimizer state are "
                            "broadcast to all workers")
        return statements(
            "# Horovod: start every worker from rank 0's state once the first step has created the\n"
            "# optimizer's slots.\n"
            f"if {opt}.iterations == 1:\n"
            f"    {hvd}.broadcast_variables({var_text}, root_rank=0)\n"
            f"    {hvd}.broadcast_variables({opt}.variables, root_rank=0)\n")
