"""tf.distribute custom loops: steps run through strategy.run on a distributed dataset, and the
loss is divided by the replicas (the optimizer sums gradients across them)."""
from __future__ import annotations

import libcst as cst

from converters.script import tables as T
from converters.script.names import add_kwarg, code, dotted, expr, find_arg, statements
from converters.script.transforms.base import RuleTransform
from converters.script.transforms.gradient_tape import tape_names
from converters.script.walk import in_source_order, nodes_of


def _loss_name(func: cst.FunctionDef, tape: str) -> str | None:
    """The loss of the first ``tape.gradient(loss, ...)`` in the function."""
    for node in in_source_order(func, (cst.Call,)):
        if isinstance(node.func, cst.Attribute) and node.func.attr.value == "gradient" \
                and dotted(node.func.value) == tape and node.args \
                and isinstance(node.args[0].value, cst.Name):
            return node.args[0].value.value
    return None


def _after_assignment(body, loss: str) -> int:
    """Index just after the last statement of ``body`` that assigns ``loss`` (the end if none)."""
    at = len(body)
    for i, stmt in enumerate(body):
        if isinstance(stmt, cst.SimpleStatementLine) and any(
                isinstance(t.target, cst.Name) and t.target.value == loss
                for small in stmt.body if isinstance(small, (cst.Assign, cst.AugAssign, cst.AnnAssign))
                for t in (small.targets if isinstance(small, cst.Assign) else [small]) if hasattr(t, "target")):
            at = i + 1
    return at


def _from_loss_object(body, loss: str, loss_objects: set[str]) -> bool:
    for stmt in body:
        if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 \
                and isinstance(stmt.body[0], cst.Assign):
            a = stmt.body[0]
            if any(isinstance(t.target, cst.Name) and t.target.value == loss for t in a.targets) \
                    and isinstance(a.value, cst.Call) and isinstance(a.value.func, cst.Name) \
                    and a.value.func.value in loss_objects:
                return True
    return False


class PerExampleLoss(RuleTransform):
    """Keras loss objects used in a custom loop return per-example losses (Reduction.NONE):
    tf.distribute refuses the default reduction outside fit()."""

    def leave_Call(self, original, updated):
        q = self.q(updated.func)
        if not (q and q.startswith(T.LOSS_PREFIX) and q.split(".")[-1][:1].isupper()):
            return updated
        if find_arg(updated, "reduction", None):
            return updated
        owner = self.assignment(original)
        if "keras_fit" in self.a.styles or (owner is not None and any(
                isinstance(t.target, cst.Attribute) for t in owner.targets)):
            # compile() may use it too, or it lives on an object (a layer's, a helper's):
            # where it is called decides (TFD048 rewrites those calls).
            return updated
        self.note(original, "loss returns per-example values (Reduction.NONE); the step averages "
                            "them over the global batch")
        outside = self._used_outside_steps()
        if outside:
            self.note(original, f"{outside} also uses this loss object outside the training step, "
                                "where it now returns per-example values: average them there "
                                "(tf.reduce_mean) or use a second loss object", "warning")
        # Keras 3 has no Reduction enum; the string is valid in Keras 2 as well.
        none = '"none"' if self.a.keras in ("keras3", "keras") else f"{self.ctx.keras}.losses.Reduction.NONE"
        return add_kwarg(updated, "reduction", expr(none))

    def _used_outside_steps(self) -> str | None:
        """'line N' of a use of the loss object being built outside the step functions."""
        assign = next((s for s in reversed(self.ctx.positions.stack) if isinstance(s, cst.Assign)), None)
        if assign is None or len(assign.targets) != 1 or not isinstance(assign.targets[0].target, cst.Name):
            return None
        name = assign.targets[0].target.value
        module = self.ctx.positions.module
        # The step functions and the helpers they call (a GAN's generator_loss(...)).
        funcs = {f.name.value: f for f in nodes_of(module, cst.FunctionDef)}
        todo, steps = [n for n in self.a.step_functions if n in funcs], set()
        while todo:
            fname = todo.pop()
            if fname not in steps:
                steps.add(fname)
                todo += [c.func.value for c in nodes_of(funcs[fname], cst.Call)
                         if isinstance(c.func, cst.Name) and c.func.value in funcs]
        inside = {id(n) for f in steps for n in nodes_of(funcs[f], cst.Name)}
        for n in in_source_order(module, (cst.Name,)):
            if n.value == name and id(n) not in inside and n is not assign.targets[0].target:
                line = self.ctx.positions.get(n)
                return f"line {line[0]}" if line else "the script"
        return None


class ScaleLoss(RuleTransform):
    def leave_FunctionDef(self, original, updated):
        if updated.name.value not in self.a.step_functions:
            return updated
        body = list(updated.body.body)
        for i, stmt in enumerate(body):
            tapes = tape_names(stmt, self)  # a GAN step opens one tape per model
            if not tapes:
                continue
            losses = []
            for tape in tapes:
                loss = _loss_name(updated, tape)
                if loss is None:
                    self.note(original, f"could not find the loss passed to {tape}; divide it by "
                                        f"{self.ctx.replicas} inside the tape by hand", "error")
                    return updated
                if loss not in losses:
                    losses.append(loss)
            inner = list(stmt.body.body)
            if self.ctx.replicas in code(stmt.body):
                return updated
            for loss in losses:
                # Right after the loss is computed: gradient() may be called inside the block.
                at = _after_assignment(inner, loss)
                if _from_loss_object(inner, loss, self.a.loss_object_names):
                    # The loss object now returns per-example losses (TFD045).
                    inner[at:at] = statements(
                        f"# tf.distribute sums gradients over replicas: average over the global batch.\n"
                        f"{loss} = {self.ctx.tf}.nn.compute_average_loss({loss})\n")
                    how = "averaged over the global batch with tf.nn.compute_average_loss"
                else:
                    # reduce_mean: a helper may hand back per-example values (TFD045 made its
                    # loss object do so); a mean stays as it is.
                    inner[at:at] = statements(
                        f"# tf.distribute sums gradients over replicas: scale the loss to the global mean.\n"
                        f"{loss} = {self.ctx.tf}.reduce_mean({loss}) / {self.ctx.replicas}\n")
                    how = f"averaged and divided by {self.ctx.replicas}"
                self.note(original, f"loss {loss!r} {how} inside the tape (gradients are summed "
                                    "across replicas)")
            body[i] = stmt.with_changes(body=stmt.body.with_changes(body=inner))
            for loss in losses:
                body[i + 1:] = [self._unscaled_metric(original, s, loss) for s in body[i + 1:]]
            return updated.with_changes(body=updated.body.with_changes(body=body))
        return updated

    def _unscaled_metric(self, func, stmt, loss: str):
        """``train_loss(loss)`` after the tape: the metric wants the replica's own mean loss,
        not the share of the global mean the gradients need (it would read 1/replicas)."""
        if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1
                and isinstance(stmt.body[0], cst.Expr)):
            return stmt
        call = stmt.body[0].value
        if not (isinstance(call, cst.Call) and dotted(call.func) in self.a.metric_names
                and len(call.args) == 1
                and isinstance(call.args[0].value, cst.Name) and call.args[0].value.value == loss):
            return stmt
        self.note(func, f"metric {dotted(call.func)} reads the loss times {self.ctx.replicas} "
                        "(the replica's mean loss, as before)")
        new = call.with_changes(args=[call.args[0].with_changes(
            value=expr(f"{loss} * {self.ctx.replicas}"))])
        return stmt.with_changes(body=[stmt.body[0].with_changes(value=new)])


# Calls that wrap a dataset in a loop header and iterate it unchanged.
ITERATION_WRAPPERS = {"enumerate", "tqdm", "tqdm.tqdm", "tqdm.auto.tqdm"}


class DistributeSteps(RuleTransform):
    """for batch in dataset: step(batch) -> for batch in distributed dataset: strategy.run(step)."""

    def __init__(self, ctx, rule_id=""):
        super().__init__(ctx, rule_id)
        self.loops: list[list] = []  # per open for-loop: [calls step?]
        self.assigned: set[int] = set()
        self.run_calls = 0

    def _step_call(self, node) -> bool:
        """``step(...)``, or a step method on an object (``self.train_step(...)``, a trainer's)."""
        if not isinstance(node, cst.Call):
            return False
        if isinstance(node.func, cst.Name):
            return node.func.value in self.steps
        return isinstance(node.func, cst.Attribute) and node.func.attr.value in self.steps \
            and dotted(node.func) is not None and not self.a.not_keras(node.func.value) \
            and node.func.attr.value not in ("fit", "evaluate", "predict")

    @property
    def steps(self) -> set[str]:
        """Training steps (a tape) and evaluation steps: functions that update a metric and
        run no tape (a test_step updating metrics outside strategy.run fails: the metric's
        variables live on the replicas)."""
        found = getattr(self, "_steps", None)
        if found is None:
            found = set(self.a.step_functions)
            for func in nodes_of(self.ctx.positions.module, cst.FunctionDef):
                if func.name.value in found or func.name.value in self.a.builders:
                    continue
                for c in nodes_of(func, cst.Call, (cst.FunctionDef,)):  # its own body only
                    target = c.func.value if isinstance(c.func, cst.Attribute) \
                        and c.func.attr.value == "update_state" else c.func
                    if dotted(target) in self.a.metric_names:
                        found.add(func.name.value)
                        break
            self._steps = found
        return found

    def visit_For(self, node):
        self.loops.append([False])

    def visit_Assign(self, node):
        if self._step_call(node.value):
            self.assigned.add(id(node.value))

    def visit_AugAssign(self, node):
        if self._step_call(node.value):
            self.assigned.add(id(node.value))

    def leave_Call(self, original, updated):
        if not self._step_call(original):
            return updated
        s = self.ctx.strategy
        args = ", ".join(code(a).strip().rstrip(",") for a in updated.args)
        func = dotted(updated.func)
        short = func.split(".")[-1]
        if not self.loops:
            self.note(original, f"{func}() is called outside a loop over a dataset; "
                                f"call it through {s}.run by hand", "warning")
            return updated
        for loop in self.loops:
            loop[0] = True
        run = f"{s}.run({func}, args=({args}{',' if len(updated.args) == 1 else ''}))"
        self.note(original, f"{func}() runs on every replica through {s}.run"
                  + ("; its result is summed across replicas" if id(original) in self.assigned else ""))
        if short in self.a.eager_step_functions:
            self.a.eager_step_functions.discard(short)  # say it once
            self.note(original, f"{func}() is not a tf.function: {s}.run works eagerly "
                                f"but slowly across workers; decorate it with @{self.ctx.tf}.function",
                      "warning")
        if id(original) in self.assigned:
            return expr(f"{s}.reduce({self.ctx.tf}.distribute.ReduceOp.SUM, {run}, axis=None)")
        return expr(run)

    def leave_For(self, original, updated):
        calls = self.loops.pop()[0]
        if not calls:
            return updated
        direct = any(self._step_call(n) for n in _calls_in(original.body, shallow=True))
        if not direct or "experimental_distribute_dataset" in code(updated.iter):
            return updated
        it = code(updated.iter).strip()
        if dotted(updated.iter) == "range" or it.startswith("range("):
            return updated
        wrapper = updated.iter
        target = updated.target
        if isinstance(wrapper, cst.Call) and dotted(wrapper.func) in ITERATION_WRAPPERS and wrapper.args:
            # enumerate(ds): the dataset inside is distributed, enumerate() stays outside
            inner = code(wrapper.args[0].value).strip()
            self.note(original, f"the loop reads {inner} through "
                                f"{self.ctx.strategy}.experimental_distribute_dataset (inside {dotted(wrapper.func)}())")
            dist = expr(f"{self.ctx.strategy}.experimental_distribute_dataset({inner})")
            args = [wrapper.args[0].with_changes(value=dist), *wrapper.args[1:]]
            updated = updated.with_changes(iter=wrapper.with_changes(args=args))
            if dotted(wrapper.func) == "enumerate" and isinstance(target, cst.Tuple) \
                    and len(target.elements) == 2:
                target = target.elements[1].value  # (step, batch): the batch is distributed
        else:
            self.note(original, f"the loop reads {it} through {self.ctx.strategy}.experimental_distribute_dataset")
            updated = updated.with_changes(iter=expr(f"{self.ctx.strategy}.experimental_distribute_dataset({it})"))
        return self._local_uses(original, updated, target)

    def _local_uses(self, original, updated, target):
        """The batch used outside strategy.run (a prediction logged on it): a distributed value
        there; this worker's part of it is read through _tfd_local."""
        names = {n.value for n in nodes_of(target, cst.Name)}
        rewrite = _LocalUses(names, self.ctx.strategy)
        body = updated.body.visit(rewrite)
        if not rewrite.used:
            return updated
        self.ctx.helpers.add("tfd_local")
        used = ", ".join(sorted(rewrite.used))
        self.note(original, f"{used} (the distributed batch) is used outside {self.ctx.strategy}.run: "
                            f"there it is this worker's part of the batch (_tfd_local), so what is "
                            f"computed from it (a logged loss or accuracy) covers that part only",
                  "warning")
        return updated.with_changes(body=body)


class _LocalUses(cst.CSTTransformer):
    """Names of the distributed batch read outside ``strategy.run(...)`` -> ``_tfd_local(name)``."""

    def __init__(self, names: set[str], strategy: str):
        super().__init__()
        self.names, self.strategy = names, strategy
        self.skip: set[int] = set()
        self.used: set[str] = set()

    def visit_Call(self, node):
        if dotted(node.func) == f"{self.strategy}.run":
            return False
        for arg in node.args:
            if arg.keyword is not None:
                self.skip.add(id(arg.keyword))
        return True

    def visit_Attribute(self, node):
        self.skip.add(id(node.attr))

    def visit_AssignTarget(self, node):
        return False

    def visit_FunctionDef(self, node):
        return False

    def visit_Lambda(self, node):
        return False

    def leave_Name(self, original, updated):
        if original.value not in self.names or id(original) in self.skip:
            return updated
        self.used.add(original.value)
        return cst.Call(func=cst.Name("_tfd_local"), args=[cst.Arg(value=updated)])


def _calls_in(node, shallow: bool):
    """Calls in ``node``, outside nested functions (and nested loops, if ``shallow``)."""
    stop = (cst.FunctionDef, cst.For) if shallow else (cst.FunctionDef,)
    return nodes_of(node, cst.Call, stop)


class VariablesAsNumbers(RuleTransform):
    """``int(ckpt.step)``: created in the strategy's scope, a variable is a MirroredVariable,
    which int() and float() refuse; ``.numpy()`` reads it either way."""

    def leave_Call(self, original, updated):
        if not (self.a.variable_names and isinstance(updated.func, cst.Name)
                and updated.func.value in ("int", "float") and len(updated.args) == 1):
            return updated
        value = updated.args[0].value
        name = dotted(value)
        if name not in self.a.variable_names:
            return updated
        self.note(original, f"{name} is read with .numpy(): created in the strategy's scope it is a "
                            f"MirroredVariable, which {updated.func.value}() refuses")
        numpy = cst.Call(func=cst.Attribute(value=value, attr=cst.Name("numpy")))
        return updated.with_changes(args=[updated.args[0].with_changes(value=numpy)])
