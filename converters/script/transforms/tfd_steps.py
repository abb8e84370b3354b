"""tf.distribute: the losses of a fit() with its own train_step / test_step, and training steps
written inline in a loop.

Under fit(), Keras runs train_step on every replica and sums the gradients over them. A loss
from ``self.compiled_loss`` / ``self.compute_loss`` is already divided by the replicas (Keras
scales it for the strategy): it stays as it is. Any other loss becomes this replica's share of
the global-batch loss (_tfd_loss): a Keras loss object is reduced over the global batch (its
default reduction is refused under a strategy), a batch mean is divided by the replicas, and
per-example values keep their single-process meaning (a sum).
"""
from __future__ import annotations

import libcst as cst

from converters.script import tables as T
from converters.script.names import dotted
from converters.script.transforms.base import RuleTransform
from converters.script.transforms.gradient_tape import tape_names
from converters.script.walk import in_source_order, nodes_of

# Keras' own loss of compile(): already scaled for the strategy.
COMPILED_LOSSES = ("compiled_loss", "compute_loss")


class _LossCalls:
    """Which calls compute a loss: a Keras loss object of the script, ``self.<...loss...>(...)``
    (a loss kept on the model: compile(loss_fn=...)), or a keras.losses function or class."""

    def __init__(self, rule: RuleTransform):
        self.rule = rule

    def compiled(self, node: cst.Call) -> bool:
        return isinstance(node.func, cst.Attribute) and node.func.attr.value in COMPILED_LOSSES

    def __call__(self, node: cst.Call) -> bool:
        func = node.func
        if self.compiled(node) or not node.args:
            return False
        if isinstance(func, cst.Name) and func.value in self.rule.a.loss_object_names:
            return True
        if isinstance(func, cst.Attribute) and dotted(func.value) == "self" \
                and "loss" in func.attr.value.lower():
            return True
        q = self.rule.q(func)
        if q and q.startswith(T.LOSS_PREFIX):
            return q.split(".")[-1][:1].islower()  # a loss function; a class here is built
        # keras.losses.BinaryCrossentropy()(y, p): a loss object built and called at once
        return isinstance(func, cst.Call) and (self.rule.q(func.func) or "").startswith(T.LOSS_PREFIX)


def _wrap(helper: str, node: cst.Call) -> cst.Call:
    """``f(a, b)`` -> ``helper(f, a, b)``, built from the call's own nodes."""
    first = cst.Arg(value=node.func, comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    return node.with_changes(func=cst.Name(helper), args=[first, *node.args])


class TrainStepLoss(RuleTransform):
    """The loss of train_step, as this replica's share of the global-batch loss."""

    def __init__(self, ctx, rule_id=""):
        super().__init__(ctx, rule_id)
        self.is_loss = _LossCalls(self)
        self.targets: dict[int, str] = {}  # id(original Call or value) -> how to rewrite it

    def visit_FunctionDef(self, node):
        if node.name.value != "train_step" or not self.a.train_steps:
            return
        losses = {}
        for call in nodes_of(node, cst.Call):
            if isinstance(call.func, cst.Attribute) and call.func.attr.value == "gradient" \
                    and call.args and isinstance(call.args[0].value, cst.Name):
                losses[call.args[0].value.value] = call
        blocks = [s for s in nodes_of(node, cst.With) if tape_names(s, self)]
        for name in losses:
            self._plan(node, blocks, name, set())

    def _assignment(self, blocks, name):
        for block in blocks:
            found = None
            for stmt in in_source_order(block, (cst.Assign,)):
                if any(isinstance(t.target, cst.Name) and t.target.value == name for t in stmt.targets):
                    found = stmt
            if found is not None:
                return found
        return None

    def _plan(self, func, blocks, name, seen):
        if name in seen:
            return
        seen.add(name)
        assign = self._assignment(blocks, name)
        if assign is None:
            self.note(func, f"could not find where the loss {name!r} of train_step is computed "
                            f"inside its tape: make it this replica's share of the global-batch "
                            f"loss by hand (divide a batch mean by {self.ctx.replicas})", "error")
            return
        value = assign.value
        calls = nodes_of(value, cst.Call)
        if any(self.is_loss.compiled(c) for c in calls):
            self.note(assign, f"{name}: Keras' compiled loss is already divided by the replicas "
                              "under a strategy; left as it is")
            return
        if isinstance(value, cst.Call):
            self.targets[id(value)] = "call" if self.is_loss(value) or not _builtin(value) else "value"
            self.note(assign, f"{name} is this replica's share of the global-batch loss (_tfd_loss): "
                              f"gradients are summed over the replicas")
            return
        hits = [c for c in calls if self.is_loss(c)]
        names = [n.value for n in nodes_of(value, cst.Name)]
        for n in names:
            if self._assignment(blocks, n) is not None:
                self._plan(func, blocks, n, seen)
                hits.append(n)
        for c in calls:
            if self.is_loss(c):
                self.targets[id(c)] = "call"
        if not hits:
            self.targets[id(value)] = "value"
        self.note(assign, f"{name} is this replica's share of the global-batch loss (_tfd_loss): "
                          f"gradients are summed over the replicas")

    def leave_Call(self, original, updated):
        how = self.targets.get(id(original))
        if how is None:
            return updated
        self.ctx.helpers.add("tfd_loss")
        if how == "call":
            return _wrap("_tfd_loss", updated)
        return cst.Call(func=cst.Name("_tfd_loss"), args=[cst.Arg(value=updated)])

    def leave_BinaryOperation(self, original, updated):
        return self._value(original, updated)

    def leave_UnaryOperation(self, original, updated):
        return self._value(original, updated)

    def leave_Subscript(self, original, updated):
        return self._value(original, updated)

    def _value(self, original, updated):
        if self.targets.get(id(original)) != "value":
            return updated
        self.ctx.helpers.add("tfd_loss")
        return cst.Call(func=cst.Name("_tfd_loss"), args=[cst.Arg(value=updated)])


def _builtin(call: cst.Call) -> bool:
    """tf.reduce_mean(...), tf.math...: a value, not a loss function to call through _tfd_loss."""
    name = dotted(call.func) or ""
    return name.split(".")[0] in ("tf", "tensorflow", "np", "numpy", "sum", "abs", "float") or \
        name in ("sum", "abs", "float", "max", "min")


class EvalStepLoss(RuleTransform):
    """test_step of a fit() model (run on every replica by evaluate()/fit()): a Keras loss object
    with its default reduction, refused there, is evaluated by _tfd_mean_loss."""

    def __init__(self, ctx, rule_id=""):
        super().__init__(ctx, rule_id)
        self.is_loss = _LossCalls(self)
        self.depth = 0

    def visit_FunctionDef(self, node):
        if node.name.value == "test_step" and self.a.model_classes or self.depth:
            self.depth += 1

    def leave_FunctionDef(self, original, updated):
        if self.depth:
            self.depth -= 1
        return updated

    def leave_Call(self, original, updated):
        if not self.depth or not self.is_loss(original):
            return updated
        self.ctx.helpers.add("tfd_mean_loss")
        self.note(original, "test_step runs on every replica: the loss object is evaluated there "
                            "by _tfd_mean_loss (its default reduction is refused under a strategy)")
        return _wrap("_tfd_mean_loss", updated)


def applies_gradients(rule: RuleTransform, node: cst.Call) -> bool:
    """``opt.apply_gradients(...)`` / ``opt.minimize(...)``, or Keras 3's ``opt.apply(...)`` on
    an optimizer the analysis found (``dataset.apply`` is not one)."""
    if not isinstance(node.func, cst.Attribute):
        return False
    attr = node.func.attr.value
    return attr in ("apply_gradients", "minimize") or (
        attr in T.KERAS3_OPTIMIZER_METHODS and dotted(node.func.value) in rule.a.keras3_appliers)


class InlineSteps(RuleTransform):
    """A training step written in the body of a loop (no function): strategy.run needs the
    step as a function, so the script is refused with what to change."""

    def __init__(self, ctx, rule_id=""):
        super().__init__(ctx, rule_id)
        self.loops: list[list] = [[]]  # per function (and the module): the open loops
        self.reported = False
        self.functions: list[str] = []

    def visit_FunctionDef(self, node):
        self.loops.append([])
        self.functions.append(node.name.value)

    def leave_FunctionDef(self, original, updated):
        self.loops.pop()
        self.functions.pop()
        return updated

    def visit_For(self, node):
        self.loops[-1].append(node)

    def leave_For(self, original, updated):
        self.loops[-1].pop()
        return updated

    visit_While = visit_For
    leave_While = leave_For

    def visit_Call(self, node):
        # Gradients applied in the loop body from a helper that only takes them
        # (loss, grads = grad(model, x, y)): the step is split across the helper and the loop,
        # and strategy.run can only run a whole step.
        if not self.loops[-1] or self.reported or (self.functions and self.functions[-1] in self.a.step_functions):
            return
        if not applies_gradients(self, node) or node.func.attr.value == "minimize":
            return
        loop = self.loops[-1][-1]
        if any(tape_names(w, self) for w in nodes_of(loop, cst.With, (cst.FunctionDef,))):
            return  # the tape is in the loop body too: visit_With reports it
        self.reported = True
        self.note(node, severity="error", col=1, message=(
            "gradients are applied in the loop body, outside the function that computes them: "
            "tf.distribute runs a whole step (gradients and applying them) on every replica "
            "through strategy.run. Move apply_gradients into that function (return the loss) "
            "and convert again"))

    def visit_With(self, node):
        if not self.loops[-1] or not tape_names(node, self):
            return
        if not any(applies_gradients(self, c)
                   for c in nodes_of(self.loops[-1][-1], cst.Call, (cst.FunctionDef,))):
            return
        self.note(node, severity="error", col=1, message=(
            "the training step is written inline in a loop (GradientTape block at this line): "
            "tf.distribute runs a step on every replica through strategy.run, which takes a "
            "function. Move the step (tape, gradients, applying them) into a function, e.g. "
            "'def train_step(x, y): ... return loss', call it from the loop and convert again"))
