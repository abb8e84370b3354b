"""TF1 graph code and Estimators with Horovod: BroadcastGlobalVariablesHook, checkpoints on
rank 0 only, stop steps divided by the number of workers."""
from __future__ import annotations

import libcst as cst

from converters.script import tables as T
from converters.script.names import add_kwarg, code, dotted, expr, find_arg, floordiv, replace_arg, statements
from converters.script.transforms.base import RuleTransform
from converters.script.transforms.statements import StatementRule

_HOOK_CALLS = {"tf1.train.MonitoredTrainingSession", "tf.train.MonitoredTrainingSession"}


def _add_hook(t: RuleTransform, original, updated: cst.Call, keyword: str, position) -> cst.Call:
    hook = f"{t.ctx.hvd}.BroadcastGlobalVariablesHook(0)"
    found = find_arg(updated, keyword, position)
    t.note(original, "BroadcastGlobalVariablesHook(0) added: all workers start from rank 0's variables")
    if found is None:
        return add_kwarg(updated, keyword, expr(f"[{hook}]"))
    i, arg = found
    if isinstance(arg.value, cst.Name) and arg.value.value == "None":
        return replace_arg(updated, i, expr(f"[{hook}]"))
    if isinstance(arg.value, cst.List):
        return replace_arg(updated, i, arg.value.with_changes(elements=[
            cst.Element(expr(hook), comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))),
            *arg.value.elements]) if arg.value.elements else expr(f"[{hook}]"))
    return replace_arg(updated, i, expr(f"[{hook}] + list({code(arg.value).strip()})"))


class TF1Hooks(RuleTransform):
    def leave_Call(self, original, updated):
        q = self.q(updated.func)
        size, rank0 = self.ctx.size, self.ctx.rank0
        if q in _HOOK_CALLS:
            if "BroadcastGlobalVariablesHook" not in code(updated):
                updated = _add_hook(self, original, updated, "hooks", None)
            found = find_arg(updated, "checkpoint_dir", 0)
            if found and rank0 not in code(found[1].value):
                self.note(original, "checkpoints written by rank 0 only")
                updated = replace_arg(updated, found[0], expr(
                    f"{code(found[1].value).strip()} if {rank0} else None"))
            return updated
        if q in T.STOP_HOOKS:
            found = find_arg(updated, T.STOP_HOOKS[q], 0)
            if found and size not in code(found[1].value):
                self.note(original, f"stop step divided by {size}")
                return replace_arg(updated, found[0], floordiv(found[1].value, size))
            return updated
        # Estimators: model_dir only on rank 0; train() gets the hook and fewer steps.
        if q and (q.startswith("tf.estimator.") or q.startswith("tf1.estimator.")):
            found = find_arg(updated, "model_dir", None)
            if found and rank0 not in code(found[1].value):
                self.note(original, "model_dir (checkpoints, summaries) used by rank 0 only")
                return replace_arg(updated, found[0], expr(
                    f"{code(found[1].value).strip()} if {rank0} else None"))
            return updated
        if isinstance(updated.func, cst.Attribute) and updated.func.attr.value == "train" and (
                dotted(updated.func.value) in self.a.estimator_names
                or find_arg(updated, "input_fn", None)):
            if "BroadcastGlobalVariablesHook" not in code(updated):
                updated = _add_hook(self, original, updated, "hooks", 1)
            for kw in ("steps", "max_steps"):
                found = find_arg(updated, kw, 2 if kw == "steps" else None)
                if found and size not in code(found[1].value):
                    self.note(original, f"{kw} divided by {size}")
                    updated = replace_arg(updated, found[0], floordiv(found[1].value, size))
        return updated


class SessionBroadcast(StatementRule):
    """Plain tf.compat.v1.Session: broadcast right after the variables are initialised, as an op
    of its own (``init_op.run(x)`` takes x as a feed dict, so the broadcast never goes there)."""

    def _initializer(self, node) -> bool:
        if isinstance(node, cst.Call):
            return self.q(node.func) in T.TF1_INITIALIZERS
        return isinstance(node, cst.Name) and node.value in self.a.initializer_names

    def after(self, original, stmt, following):
        if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
            return []
        value = getattr(stmt.body[0], "value", None)
        if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute)
                and value.func.attr.value == "run"):
            return []
        receiver = value.func.value
        bcast = f"{self.ctx.hvd}.broadcast_global_variables(0)"
        if self._initializer(receiver):
            # init_op.run(session=sess): the broadcast op runs the same way.
            found = find_arg(value, "session", 1)
            run = f"{bcast}.run(session={code(found[1].value).strip()})" if found else f"{bcast}.run()"
        else:
            found = find_arg(value, "fetches", 0)
            fetched = found[1].value if found else None
            items = [e.value for e in fetched.elements] if isinstance(fetched, (cst.List, cst.Tuple)) \
                else [fetched]
            if not any(self._initializer(i) or "global_variables_initializer" in code(i)
                       for i in items if i is not None):
                return []
            run = f"{code(receiver).strip()}.run({bcast})"
        if following is not None and "broadcast_global_variables" in code(following):
            return []
        self.note(original, "rank 0's initial variables broadcast to all workers after initialisation")
        return statements(run + "\n")


class FeedDictData(RuleTransform):
    """TF1 graph code fed through feed_dict: the batches are whatever each worker computes, so
    tfdesk cannot shard them; said once, where the first one is fed."""

    def __init__(self, ctx, rule_id=""):
        super().__init__(ctx, rule_id)
        self.said = False

    def leave_Call(self, original, updated):
        f = updated.func
        if self.said or not (isinstance(f, cst.Attribute) and f.attr.value == "run"):
            return updated
        # sess.run(fetches, feed_dict) or op.run(feed_dict) / tensor.eval(feed_dict)
        fed = find_arg(updated, "feed_dict", None) or find_arg(updated, "feed_dict", 1)
        first = find_arg(updated, "fetches", 0)
        if fed is None and not (first and isinstance(first[1].value, cst.Dict)):
            return updated
        self.said = True
        self.note(original, "batches given through feed_dict are computed by each worker and "
                            "tfdesk cannot shard them: make them differ per worker (slice the "
                            f"data by {self.ctx.hvd}.rank(), or sample without a fixed seed), or "
                            "every worker trains on the same examples", "warning")
        return updated
