"""Horovod: files beside the model are written (and log folders deleted) by rank 0 only, and a
file rank 0 wrote is read by every rank from rank 0's copy."""
from __future__ import annotations

import libcst as cst

from converters.script import tables as T
from converters.script.names import call, code, dotted, expr, find_arg, operand, replace_arg
from converters.script.transforms.base import Rank0Guarded, guard
from converters.script.transforms.saving import save_call


class Rank0Writes(Rank0Guarded):
    """Summary writers (a no-op writer elsewhere), image dumps, plots and rmtree on rank 0."""

    def leave_Call(self, original, updated):
        q = self.q(updated.func)
        if q in T.SUMMARY_WRITERS and not self.guarded:
            other = T.SUMMARY_WRITERS[q].replace("tf.", f"{self.ctx.tf}.", 1)
            self.note(original, f"summaries written by rank 0 only ({other} elsewhere)")
            return operand(cst.IfExp(test=expr(self.ctx.rank0), body=updated, orelse=expr(other)))
        if q in T.TF1_SUMMARY_WRITERS and not self.guarded:
            found = find_arg(updated, *T.TF1_SUMMARY_WRITERS[q])
            if found is not None and "_hvd_log_dir" not in code(found[1].value):
                self.ctx.helpers.add("log_dir")
                self.note(original, "summaries written by rank 0 only (the other ranks write "
                                    "to a scratch folder)")
                return replace_arg(updated, found[0], call("_hvd_log_dir", found[1].value))
        return updated

    def _image(self, receiver) -> bool:
        """``img`` from ``img = array_to_img(x)``, or ``array_to_img(x)`` itself."""
        if isinstance(receiver, cst.Call):
            return self.q(receiver.func) in T.IMAGE_MAKERS
        made = self.a.assigned_from.get(dotted(receiver) or "", [])
        return bool(made) and all(m in T.IMAGE_MAKERS for m in made)

    def leave_SimpleStatementLine(self, original, updated):
        if len(updated.body) != 1 or self.guarded:
            return updated
        small = updated.body[0]
        value = small.value if isinstance(small, cst.Expr) else None
        if not isinstance(value, cst.Call):
            return updated
        q = self.q(value.func)
        method = value.func.attr.value if isinstance(value.func, cst.Attribute) else None
        if q in T.RANK0_WRITE_FUNCTIONS or method in T.RANK0_WRITE_METHODS or (
                method == "save" and self._image(value.func.value)):
            name = dotted(value.func) or code(value.func).strip()
            what = "deletes files" if q and q.endswith("rmtree") else "writes a file"
            self.note(original, f"{name}(...) {what}: rank 0 only")
            return guard(updated, self.ctx.rank0)
        return updated


def _load_path(t, node: cst.Call):
    q = t.q(node.func)
    if q in T.LOAD_FUNCTIONS:
        return find_arg(node, *T.LOAD_FUNCTIONS[q])
    if isinstance(node.func, cst.Attribute) and node.func.attr.value in T.LOAD_METHODS \
            and not t.a.not_keras(node.func.value):
        return find_arg(node, *T.LOAD_METHODS[node.func.attr.value])
    return None


class ReadFromRank0(Rank0Guarded):
    """``model.load_weights(path)`` after rank 0 alone saved ``path`` (a rank-0 save or a
    ModelCheckpoint): the other ranks may not have the file (another machine), or not yet."""

    def __init__(self, ctx, rule_id=""):
        super().__init__(ctx, rule_id)
        self.written: set[str] = set()
        self.constants: dict[str, str] = {}  # PATH = "best.h5": the name stands for the text

    def visit_Assign(self, node):
        if len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
            name = node.targets[0].target.value
            if isinstance(node.value, cst.SimpleString):
                self.constants[name] = node.value.value
            else:
                self.constants.pop(name, None)

    def _key(self, value) -> str:
        text = code(value).strip()
        return self.constants.get(text, text)

    def leave_Call(self, original, updated):
        spec = save_call(self, original)
        if spec is None and self.q(original.func) in T.FILE_CALLBACKS:
            spec = T.FILE_CALLBACKS[self.q(original.func)]
        if spec is not None:
            found = find_arg(original, *spec)
            if found is not None:
                self.written.add(self._key(found[1].value))
            return updated
        found = _load_path(self, updated)
        if found is None or self.guarded:
            return updated
        path = code(found[1].value).strip()
        if self._key(found[1].value) not in self.written or "_hvd_from_rank0" in path:
            return updated
        self.ctx.helpers.add("from_rank0")
        self.note(original, f"{path} was written by rank 0 only: every rank reads rank 0's copy "
                            "(_hvd_from_rank0 waits for it and sends it over Horovod)")
        return replace_arg(updated, found[0], call("_hvd_from_rank0", found[1].value))
