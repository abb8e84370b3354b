"""Horovod: files beside the model are written (and log folders deleted) by rank 0 only (what
reads them back waits for rank 0's copy: chief_reads.py)."""
from __future__ import annotations

import libcst as cst

from converters.script import tables as T
from converters.script.names import call, code, dotted, expr, find_arg, operand, replace_arg
from converters.script.transforms.base import Rank0Guarded, guard


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
