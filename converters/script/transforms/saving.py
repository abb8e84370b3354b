"""Saving: rank 0 only with Horovod; with tf.distribute every worker saves (it is collective)
and only the chief writes to the real path."""
from __future__ import annotations

from collections import Counter

import libcst as cst

from converters.script import tables as T
from converters.script.names import call, calls, code, dotted, expr, find_arg, replace_arg
from converters.script.transforms.base import Rank0Guarded, RuleTransform, align, guard, guard_all
from converters.script.transforms.statements import BlockRule
from converters.script.walk import nodes_of


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


_EXITS = (cst.Return, cst.Raise, cst.Break, cst.Continue)


def _mentions(node: cst.CSTNode, name: str) -> int:
    """How often ``name`` appears in the code of ``node`` (not in its strings or comments)."""
    return sum(n.value == name for n in nodes_of(node, cst.Name))


class Rank0Saves(Rank0Guarded, BlockRule):
    def leave_SimpleStatementLine(self, original, updated):
        if len(updated.body) != 1 or self.guarded:
            return updated
        small = updated.body[0]
        if isinstance(small, cst.Expr) and save_call(self, small.value):
            name = dotted(small.value.func) or code(small.value.func).strip()
            self.note(original, f"{name}(...) runs on rank 0 only")
            return guard(updated, self.ctx.rank0)
        return updated

    def _saved_name(self, stmt) -> str | None:
        """``name`` when ``stmt`` is ``name = <a save call>``."""
        if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
            return None
        small = stmt.body[0]
        if isinstance(small, cst.Assign) and len(small.targets) == 1:
            target = small.targets[0].target
        elif isinstance(small, cst.AnnAssign) and small.value is not None:
            target = small.target
        else:
            return None
        if not isinstance(target, cst.Name) or not save_call(self, small.value):
            return None
        return target.value

    def _mentions_in_script(self, name: str) -> int:
        counts = getattr(self, "_counts", None)
        if counts is None:
            counts = self._counts = Counter(n.value for n in nodes_of(self.ctx.positions.module, cst.Name))
        return counts[name]

    def rewrite(self, original_body, body):
        """path = manager.save(); print(path): the save and what uses its result, guarded together."""
        if self.guarded:
            return None
        out, changed, i = [], False, 0
        pairs = align(original_body, body, self.ctx.inserted)
        while i < len(body):
            stmt, orig = pairs[i]
            name = self._saved_name(stmt) if orig is not None else None
            if name is None:
                out.append(stmt)
                i += 1
                continue
            j = i + 1
            while j < len(body) and _mentions(body[j], name):
                j += 1
            group = body[i:j]
            # Guarded, the name exists on rank 0 only: every mention of it in the script must be
            # in the group, and nothing in the group may leave the block early.
            inside = sum(_mentions(s, name) for s in group)
            exits = any(nodes_of(s, kind) for s in group for kind in _EXITS)
            if exits or inside != self._mentions_in_script(name):
                where = ("returned (or the block is left) right after" if exits else
                         "used beyond the statements right after it")
                self.note(orig, f"the result of this save ({name}) is {where}, so the save runs "
                                f"on every rank; guard it with 'if {self.ctx.rank0}:' together "
                                f"with all the code that uses {name}", "warning")
                out.extend(group)
            else:
                n = len(group) - 1
                self.note(orig, "save runs on rank 0 only" + (
                    f", with the {n} statement{'s' if n != 1 else ''} that use{'s' if n == 1 else ''} "
                    f"its result ({name})" if n else ""))
                out.append(guard_all(group, self.ctx.rank0))
                changed = True
            i = j
        return out if changed else None


class ChiefSaves(RuleTransform):
    def __init__(self, ctx, rule_id=""):
        super().__init__(ctx, rule_id)
        self.managers: dict[str, str] = {}  # CheckpointManager variable -> its real directory
        self.resumed: set[str] = set()

    def leave_Call(self, original, updated):
        spec = save_call(self, updated)
        manager = False
        if spec is None:
            q = self.q(updated.func)
            if q and q.endswith("train.CheckpointManager"):
                spec, manager = ("directory", 1), True
            else:
                return updated
        found = find_arg(updated, *spec)
        if found is None or calls(found[1].value, "_chief_path"):
            return updated
        if manager:
            owner = self.assignment(original)
            if owner is not None and len(owner.targets) == 1:
                target = dotted(owner.targets[0].target)
                if target:
                    self.managers[target] = code(found[1].value).strip()
        self.note(original, f"{code(updated.func).strip()}: every worker saves (collective), only "
                            f"the chief's copy goes to the real path")
        return replace_arg(updated, found[0], call("_chief_path", found[1].value))

    def leave_Attribute(self, original, updated):
        # manager.latest_checkpoint: the other workers' manager looks in their scratch directory,
        # so they would not resume; every worker restores from the real one.
        if updated.attr.value != "latest_checkpoint":
            return updated
        directory = self.managers.get(dotted(updated.value) or "")
        if directory is None:
            return updated
        if directory not in self.resumed:
            self.resumed.add(directory)
            self.note(original, "every worker resumes from the latest checkpoint in the real "
                                f"directory ({directory}), not from its own scratch copy")
        return expr(f"{self.ctx.tf}.train.latest_checkpoint({directory})")
