"""tf.distribute: the model and optimizer are built inside ``strategy.scope()``."""
from __future__ import annotations

import libcst as cst

from converters.script import tables as T
from converters.script.findings import Finding
from converters.script.names import code
from converters.script.walk import nodes_of
from converters.script.transforms.base import RuleTransform, align


class StrategyScope(RuleTransform):
    def __init__(self, ctx, rule_id=""):
        super().__init__(ctx, rule_id)
        self.skip_depth = 0  # inside a class body or a builder (its call sites get the scope)
        self.scoped = False  # a scope was added, or the script has one

    def visit_ClassDef(self, node):
        self.skip_depth += 1

    def leave_ClassDef(self, original, updated):
        self.skip_depth -= 1
        return updated

    def visit_FunctionDef(self, node):
        if node.name.value in self.a.builders or self.skip_depth:
            self.skip_depth += 1
            self._skipped = getattr(self, "_skipped", []) + [node]

    def leave_FunctionDef(self, original, updated):
        if getattr(self, "_skipped", None) and self._skipped[-1] is original:
            self._skipped.pop()
            self.skip_depth -= 1
            return updated
        new_body = self._wrap(original.body.body, updated.body.body)
        return updated.with_changes(body=updated.body.with_changes(body=new_body)) if new_body else updated

    def leave_Module(self, original, updated):
        new_body = self._wrap(original.body, updated.body)
        if not self.scoped:
            # Without the scope every worker trains a model of its own: say so rather than
            # hand back a script that runs and silently does not distribute.
            line = self.a.evidence.get("keras_fit") or self.a.evidence.get("custom_loop") or 1
            self.findings.append(Finding(
                self.rule_id, line, 1, "error", "could not find where the model and optimizer are "
                f"created: create them inside 'with {self.ctx.strategy}.scope():' by hand, or "
                "each worker trains on its own"))
        return updated.with_changes(body=new_body) if new_body else updated

    def _creates(self, stmt) -> bool:
        if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            return False
        visitor = _Creates(self)
        for call in nodes_of(stmt, cst.Call):  # order does not matter: both are flags
            visitor.visit_Call(call)
        return visitor.found and not visitor.trains

    def _wrap(self, original_body, body):
        if self.skip_depth:
            return None
        if any(isinstance(s, cst.With) and ".scope()" in code(s.items[0].item) for s in body):
            self.scoped = True
            return None
        hits = [i for i, s in enumerate(body) if self._creates(s)]
        if not hits:
            return None
        self.scoped = True
        first, last = hits[0], hits[-1]
        inner = [_dedent_blank_lines(s) for s in body[first:last + 1]]
        leading = inner[0].leading_lines
        inner[0] = inner[0].with_changes(leading_lines=())
        comment = cst.EmptyLine(comment=cst.Comment(
            "# tf.distribute: variables (model, optimizer) must be created in the strategy's scope."))
        with_stmt = cst.With(
            items=[cst.WithItem(item=cst.parse_expression(f"{self.ctx.strategy}.scope()"))],
            body=cst.IndentedBlock(body=inner),
            leading_lines=[*leading, comment])
        n = last - first + 1
        anchor = align(original_body, body, self.ctx.inserted)[first][1]
        self.note(anchor or original_body[0], f"model and optimizer creation ({n} statement"
                  f"{'s' if n != 1 else ''}) moved into {self.ctx.strategy}.scope()")
        return [*body[:first], with_stmt, *body[last + 1:]]


def _dedent_blank_lines(stmt):
    # Blank lines moved into the with-block stay blank (no trailing indentation).
    lines = [ln.with_changes(indent=False) if ln.comment is None else ln for ln in stmt.leading_lines]
    return stmt.with_changes(leading_lines=lines)


class _Creates(cst.CSTVisitor):
    def __init__(self, rule: StrategyScope):
        self.rule = rule
        self.found = False
        self.trains = False

    def visit_Call(self, node: cst.Call):
        a = self.rule.a
        q = self.rule.q(node.func)
        if q in T.MODEL_CONSTRUCTORS or q in T.KERAS_OPTIMIZERS or (
                q and q.startswith(T.VARIABLE_CREATOR_PREFIXES)):
            self.found = True
        if isinstance(node.func, cst.Name) and (node.func.value in a.builders
                                                or node.func.value in a.model_classes):
            self.found = True
        if isinstance(node.func, cst.Attribute):
            # adapt() builds a preprocessing layer's variables (Normalization's mean): in the
            # scope too, or the strategy refuses them when the model uses the layer.
            if node.func.attr.value in ("compile", "adapt"):
                self.found = True
            if node.func.attr.value in ("fit", "apply_gradients", "evaluate", "predict"):
                self.trains = True
        if isinstance(node.func, cst.Name) and node.func.value in a.step_functions:
            self.trains = True
