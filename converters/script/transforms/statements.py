"""Transforms that rewrite statement sequences (the module and indented blocks): BlockRule, and
StatementRule, which rewrites them one statement at a time with room to insert statements
after one."""
from __future__ import annotations

import libcst as cst

from converters.script.transforms.base import RuleTransform, align


class BlockRule(RuleTransform):
    def rewrite(self, original_body, body) -> list | None:
        """The new statements of a block (``body``, as rules left it), or None to keep it."""
        raise NotImplementedError

    def leave_IndentedBlock(self, original, updated):
        new = self.rewrite(original.body, updated.body)
        return updated.with_changes(body=new) if new is not None else updated

    def leave_Module(self, original, updated):
        new = self.rewrite(original.body, updated.body)
        return updated.with_changes(body=new) if new is not None else updated


class StatementRule(BlockRule):
    def after(self, original: cst.BaseStatement, stmt: cst.BaseStatement,
              following: cst.BaseStatement | None) -> list[cst.BaseStatement]:
        """Statements to insert after ``stmt`` ([] for none)."""
        return []

    def rewrite(self, original_body, body):
        out = []
        changed = False
        pairs = align(original_body, body, self.ctx.inserted)
        for i, (stmt, orig) in enumerate(pairs):
            out.append(stmt)
            if orig is None:
                continue
            nxt = body[i + 1] if i + 1 < len(body) else None
            extra = self.after(orig, stmt, nxt)
            if extra:
                self.ctx.inserted.update(id(e) for e in extra)
                out.extend(extra)
                changed = True
        return out if changed else None
