"""tf.distribute: Keras loss objects wherever the script calls them, not only where it builds them.

A Keras 2 loss object with its default reduction raises under a strategy when it is called
outside compile()'s own loss ("Please use Reduction.SUM or Reduction.NONE ..."), and per replica
its mean is over the replica's part of the batch. Where the call is decides what it must give:

- in a layer's or model's own method (an "endpoint" layer that add_loss()es it): the mean over
  this replica's batch (_tfd_mean_loss), as one process computed it over its batch; fit() divides
  added losses by the replicas itself before the gradients are summed;
- in a custom loop's step (or a helper the step calls), when the object keeps its default
  reduction (compile() uses it too, or it lives on an object, so TFD045 does not make it
  per-example): this replica's share of the global-batch mean (_tfd_loss), which is what
  Reduction.NONE + tf.nn.compute_average_loss give.

train_step / test_step of a fit() model are TFD046 / TFD047's.
"""
from __future__ import annotations

import libcst as cst

from converters.script.names import dotted
from converters.script.transforms.base import RuleTransform
from converters.script.walk import nodes_of

FIT_STEPS = ("train_step", "test_step")


def called_names(node: cst.CSTNode) -> set[str]:
    """Names of what ``node`` calls: ``f(...)`` and methods ``obj.f(...)`` alike."""
    out = set()
    for c in nodes_of(node, cst.Call):
        if isinstance(c.func, cst.Name):
            out.add(c.func.value)
        elif isinstance(c.func, cst.Attribute):
            out.add(c.func.attr.value)
    return out


def step_closure(module: cst.Module, roots: set[str]) -> set[str]:
    """The functions named in ``roots`` and every function or method of the script they call
    (a trainer's loss helper), transitively."""
    funcs: dict[str, list] = {}
    for f in nodes_of(module, cst.FunctionDef):
        funcs.setdefault(f.name.value, []).append(f)
    todo, seen = [n for n in roots if n in funcs], set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for f in funcs[name]:
            todo += [n for n in called_names(f) if n in funcs]
    return seen


def _wrap(helper: str, node: cst.Call) -> cst.Call:
    first = cst.Arg(value=node.func, comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    return node.with_changes(func=cst.Name(helper), args=[first, *node.args])


class LossSites(RuleTransform):
    def __init__(self, ctx, rule_id=""):
        super().__init__(ctx, rule_id)
        self.classes: list[str] = []
        self.functions: list[str] = []
        self._steps: set[str] | None = None

    @property
    def steps(self) -> set[str]:
        if self._steps is None:
            self._steps = step_closure(self.ctx.positions.module, set(self.a.step_functions))
        return self._steps

    def visit_ClassDef(self, node):
        self.classes.append(node.name.value)

    def leave_ClassDef(self, original, updated):
        self.classes.pop()
        return updated

    def visit_FunctionDef(self, node):
        self.functions.append(node.name.value)

    def leave_FunctionDef(self, original, updated):
        self.functions.pop()
        return updated

    def _loss_object(self, func: cst.BaseExpression) -> str | None:
        """'name' / 'self.attr' when ``func`` is a loss object the analysis found."""
        if isinstance(func, cst.Name) and func.value in self.a.loss_object_names:
            return func.value
        if isinstance(func, cst.Attribute) and func.attr.value in self.a.loss_object_attributes \
                and dotted(func) is not None:
            return dotted(func)
        return None

    def _per_example(self, name: str) -> bool:
        """Whether TFD045 made this object per-example (a name, in a pure custom loop)."""
        return "." not in name and "keras_fit" not in self.a.styles \
            and "custom_loop" in self.a.styles

    def leave_Call(self, original, updated):
        name = self._loss_object(original.func)
        if name is None or not original.args or not self.functions:
            return updated
        in_layer = bool(self.classes) and self.classes[-1] in self.a.layer_classes
        if in_layer and self.functions[-1] in FIT_STEPS:
            return updated  # TFD046 / TFD047
        if in_layer:
            self.ctx.helpers.add("tfd_mean_loss")
            self.note(original, f"{name}(...) in {self.classes[-1]}.{self.functions[-1]}() is called "
                                "per replica: the mean over this replica's batch (_tfd_mean_loss; "
                                "its default reduction is refused under a strategy, and fit() "
                                "divides added losses by the replicas)")
            return _wrap("_tfd_mean_loss", updated)
        if self.functions[-1] in self.steps and not self._per_example(name):
            self.ctx.helpers.add("tfd_mean_loss")
            why = ("compile() uses it too" if "keras_fit" in self.a.styles
                   else "it is kept on an object")
            self.note(original, f"{name}(...) in the step {self.functions[-1]}() keeps its default "
                                f"reduction ({why}): it gives the mean over this replica's batch "
                                "(_tfd_mean_loss), and the step's loss, with whatever is added to "
                                "it, is divided by the replicas (TFD050)")
            return _wrap("_tfd_mean_loss", updated)
        return updated
