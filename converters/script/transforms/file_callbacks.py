"""Callbacks that write files (checkpoints, TensorBoard, CSV logs) run on rank 0 only (Horovod),
or write to a scratch path on workers other than the chief (tf.distribute)."""
from __future__ import annotations

import libcst as cst

from converters.script import tables as T
from converters.script.names import call, calls, code, dotted, expr, find_arg, replace_arg
from converters.script.transforms.base import Rank0Guarded, RuleTransform, guard


def _callee(node: cst.BaseExpression) -> str:
    return (dotted(node.func) if isinstance(node, cst.Call) else dotted(node)) or "callback"


def _sublist(lst: cst.List, elements: list) -> cst.List:
    """``lst`` with only ``elements``, laid out as the list was (one per line or not)."""
    last, end = elements[-1], lst.elements[-1]
    if last is end:
        return lst.with_changes(elements=elements)
    comma = last.comma
    if isinstance(comma, cst.Comma) and isinstance(comma.whitespace_after, cst.ParenthesizedWhitespace):
        # One element per line: the line break after this one (and its comment) ends the list.
        closing = lst.rbracket.whitespace_before
        indent = (closing.last_line if isinstance(closing, cst.ParenthesizedWhitespace)
                  else cst.SimpleWhitespace(""))
        last = last.with_changes(comma=comma.with_changes(
            whitespace_after=comma.whitespace_after.with_changes(last_line=indent)))
        return lst.with_changes(elements=[*elements[:-1], last], rbracket=lst.rbracket.with_changes(
            whitespace_before=cst.SimpleWhitespace("")))
    return lst.with_changes(elements=[*elements[:-1], last.with_changes(comma=end.comma)])


class Rank0Callbacks(Rank0Guarded):
    def __init__(self, ctx, rule_id=""):
        super().__init__(ctx, rule_id)
        self.guarded_lists: set[int] = set()
        # File-writing callbacks built where no list or append puts them on rank 0 (a factory
        # lambda, a dict): reported at the end, since a list may still take them.
        self.built: list[cst.Call] = []
        self.placed: set[int] = set()

    def leave_Call(self, original, updated):
        if self.q(original.func) in T.FILE_CALLBACKS and not self.guarded:
            # ckpt = ModelCheckpoint(...): the name is followed into the lists that use it.
            if self.assignment(original) is None:
                self.built.append(original)
        return updated

    def leave_Module(self, original, updated):
        for node in self.built:
            if id(node) not in self.placed:
                self.note(node, f"{_callee(node)} is built where tfdesk cannot tell which "
                                f"workers use it: give it to rank 0 only ('if {self.ctx.rank0}:'), "
                                "or every worker writes the same files", "warning")
        return updated

    def _file_callback(self, node: cst.BaseExpression) -> bool:
        if isinstance(node, cst.Call):
            return self.q(node.func) in T.FILE_CALLBACKS
        return isinstance(node, cst.Name) and node.value in self.a.file_callback_names

    def visit_IfExp(self, node: cst.IfExp):
        if self.ctx.rank0 in code(node.test):
            self.guarded_lists.add(id(node.body))

    def leave_List(self, original: cst.List, updated: cst.List) -> cst.BaseExpression:
        self.placed.update(id(e.value) for e in original.elements if self._file_callback(e.value))
        if id(original) in self.guarded_lists or self.guarded:
            return updated
        keep = [e for e in updated.elements if not self._file_callback(e.value)]
        moved = [e for e in updated.elements if self._file_callback(e.value)]
        if not moved:
            return updated
        self.note(original, "callbacks that write files ("
                  + ", ".join(_callee(e.value) for e in moved) + ") run on rank 0 only")
        # Built from the list's own nodes, so a list written one callback per line stays so.
        guarded = cst.IfExp(test=expr(self.ctx.rank0), body=_sublist(updated, moved),
                            orelse=cst.List([]), lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        if not keep:
            return guarded
        return cst.BinaryOperation(left=_sublist(updated, keep), operator=cst.Add(), right=guarded)

    def leave_SimpleStatementLine(self, original, updated):
        # callbacks.append(ModelCheckpoint(...)) -> only on rank 0
        if len(updated.body) != 1 or not isinstance(updated.body[0], cst.Expr):
            return updated
        call = updated.body[0].value
        if (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute)
                and call.func.attr.value in ("append", "insert") and call.args
                and self._file_callback(call.args[-1].value)
                and not self.guarded):
            self.placed.add(id(original.body[0].value.args[-1].value))
            self.note(original, "file-writing callback added on rank 0 only")
            return guard(updated, self.ctx.rank0)
        return updated


class ChiefCallbackPaths(RuleTransform):
    """tf.distribute: every worker keeps the callback; non-chief workers write to scratch."""

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        q = self.q(updated.func)
        if q not in T.FILE_CALLBACKS:
            return updated
        found = find_arg(updated, *T.FILE_CALLBACKS[q])
        if found is None or calls(found[1].value, "_chief_path"):
            return updated
        self.note(original, f"{q.split('.')[-1]} writes to its path on the chief only; other "
                            "workers write to a scratch directory")
        return replace_arg(updated, found[0], call("_chief_path", found[1].value))
