"""Both targets: what the script reads back of the files only the chief writes.

The reads come from the path dataflow (converters/script/chief_files.py). A read made for its
own sake by a file utility (shutil.copytree of the logs, a listing printed) runs on the chief
only, like the write it follows; any other read first waits for the chief's files and gets a
copy of them (_hvd_sync_from_rank0 / _tfd_sync_from_chief: a barrier every worker passes,
after which the chief's files are at the same path on every worker; a worker that shares the
chief's folder finds the same bytes and writes nothing).

Data files every worker would write alike (a TFRecordWriter in a with block) are written by
the chief alone, so the reads that follow wait for them the same way.
"""
from __future__ import annotations

import ast

import libcst as cst

from converters.script import tables as T
from converters.script.chief_files import Dataflow
from converters.script.names import code, find_arg, statements
from converters.script.positions import char_column, source_lines
from converters.script.transforms.base import align, guard
from converters.script.transforms.statements import BlockRule


class ChiefReads(BlockRule):
    def __init__(self, ctx, rule_id=""):
        super().__init__(ctx, rule_id)
        tree, text = ctx.positions.tree, ctx.positions.text
        flow = Dataflow(tree, self.a)
        lines = source_lines(text)
        self.reads = {(r.line, char_column(lines[r.line - 1], r.col), r.callee): r
                      for r in flow.reads()}
        self.barriers: dict[int, list] = {}   # id(original statement) -> [(path code, read)]
        self.alone: dict[int, object] = {}    # id(original statement) -> read (guarded)
        self.writers: set = set()             # (line, col) of data writers made the chief's
        for node in ast.walk(tree):
            if id(node) in flow.data_writes:
                self.writers.add((node.lineno, char_column(lines[node.lineno - 1], node.col_offset)))

    @property
    def chief(self) -> str:
        return self.ctx.rank0 if self.ctx.target == "horovod" else "_is_chief()"

    @property
    def who(self) -> str:
        return "rank 0" if self.ctx.target == "horovod" else "the chief"

    def _statement(self):
        return next((s for s in reversed(self.ctx.positions.stack)
                     if isinstance(s, (cst.SimpleStatementLine, cst.BaseCompoundStatement))), None)

    def leave_Call(self, original, updated):
        if self.q(original.func) in T.DATA_WRITERS and \
                tuple(self.ctx.positions.get(original, (0, -1))) not in self.writers:
            self.note(original, f"every worker writes this file alike: open it in a 'with' block "
                                f"so tfdesk can give it to {self.who} (and the others read "
                                f"{self.who}'s copy), or write it on {self.who} only by hand",
                      "warning")
        func = original.func
        callee = func.attr.value if isinstance(func, cst.Attribute) else \
            (func.value if isinstance(func, cst.Name) else "")
        read = self.reads.get((*self.ctx.positions.get(original, (0, -1)), callee))
        stmt = self._statement()
        if read is None or stmt is None or self._loaded_from_chief(original):
            return updated
        found = find_arg(original, read.arg, None) if isinstance(read.arg, str) else \
            find_arg(original, "", read.arg)
        if found is None:
            return updated
        q = self.q(original.func) or ""
        alone = isinstance(stmt, cst.SimpleStatementLine) and not read.used \
            and q.split(".")[0] in T.GUARDED_READ_MODULES
        if alone:
            self.alone[id(stmt)] = read
            self.note(original, f"{q}(...) reads what {self.who} alone wrote ({read.written_by}): "
                                f"it runs on {self.who} only, like the write")
        else:
            path = code(found[1].value).strip()
            self.barriers.setdefault(id(stmt), []).append(path)
            self.note(original, f"{path} names files {self.who} alone wrote ({read.written_by}): "
                                f"every worker first waits for them and gets {self.who}'s copy "
                                f"({self._helper()})")
        return updated

    def _loaded_from_chief(self, node: cst.Call) -> bool:
        """tf.distribute: loads after training already read the chief's copy (TFD032)."""
        if self.ctx.target == "horovod":
            return False
        method = node.func.attr.value if isinstance(node.func, cst.Attribute) else None
        return self.q(node.func) in T.LOAD_FUNCTIONS or method in T.LOAD_METHODS \
            or method == "restore"

    def _helper(self) -> str:
        name = "sync_from_rank0" if self.ctx.target == "horovod" else "tfd_sync_from_chief"
        self.ctx.helpers.add(name)
        return "_hvd_sync_from_rank0" if self.ctx.target == "horovod" else "_tfd_sync_from_chief"

    def leave_SimpleStatementLine(self, original, updated):
        if id(original) in self.alone and self.chief not in code(updated):
            return guard(updated, self.chief)
        return updated

    def leave_With(self, original, updated):
        for item in original.items:
            if isinstance(item.item, cst.Call) and self.q(item.item.func) in T.DATA_WRITERS \
                    and tuple(self.ctx.positions.get(item.item, (0, -1))) in self.writers:
                self.note(original, f"every worker would write the same file here: {self.who} "
                                    f"writes it, the others read {self.who}'s copy", col=1)
                return guard(updated, self.chief)
        return updated

    def rewrite(self, original_body, body):
        if not self.barriers:
            return None
        out, changed = [], False
        originals = {id(o) for o in original_body}
        for stmt, orig in align(original_body, body, self.ctx.inserted):
            paths = self.barriers.pop(id(orig), None) if orig is not None and id(orig) in originals else None
            if paths:
                helper = self._helper()
                new = statements("".join(f"{helper}({p})\n" for p in dict.fromkeys(paths)))
                self.ctx.inserted.update(id(n) for n in new)
                if getattr(stmt, "leading_lines", None):  # comments stay above both
                    new[0] = new[0].with_changes(leading_lines=stmt.leading_lines)
                    stmt = stmt.with_changes(leading_lines=())
                out.extend(new)
                changed = True
            out.append(stmt)
        return out if changed else None

