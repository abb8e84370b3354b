"""Code generation that copies the text of unchanged statements instead of regenerating it.

LibCST generates every token of a module again; in a converted script most statements are the
parsed originals, untouched (Combined hands those back as the very same objects), and their
text is already there in the source. ``render`` emits that text for them and generates only
what rules changed or added. The result is the same string as ``module.code`` (tests compare
the two on real-world files), at a fraction of the cost.

The extent of each statement comes from the ``ast`` tree the input checks parsed: a statement
runs from its first leading comment or blank line (LibCST's ``leading_lines``) to where the
next statement of its block starts. Where that is not certain (the last statement of a block
that is followed by another block, line continuations), the statement is generated as usual.
"""
from __future__ import annotations

import ast
from collections import OrderedDict
from dataclasses import dataclass, field
from itertools import accumulate

import libcst as cst
from libcst._nodes.internal import CodegenState

from converters.script.positions import BLOCKS, char_column, statement_starts


@dataclass(frozen=True)
class Verbatim(cst.CSTNode):
    """A statement with its text at one indentation; generated as usual anywhere else."""

    node: cst.CSTNode
    text: str
    indent: str
    # (indentation, default indent, newline) -> text generated there, for snippets that
    # outlive one conversion
    elsewhere: dict = field(default_factory=dict, compare=False)

    def _visit_and_replace_children(self, visitor):
        return self

    def _codegen_impl(self, state: CodegenState) -> None:
        indent = "".join(state.indent_tokens)
        if indent == self.indent:
            text = self.text
        else:
            key = (indent, state.default_indent, state.default_newline)
            text = self.elsewhere.get(key)
            if text is None:
                start = len(state.tokens)
                self.node._codegen(state)
                self.elsewhere[key] = "".join(state.tokens[start:])
                return
        # The final newline is a token of its own, as LibCST makes it: a module without a
        # trailing newline drops the last token.
        nl = 2 if text.endswith("\r\n") else 1
        state.add_token(text[:-nl])
        state.add_token(text[-nl:])


def _suites(stmt: cst.CSTNode):
    """The suites of a compound statement, in source order."""
    for name in BLOCKS:
        part = getattr(stmt, name, None)
        if part is None:
            continue
        if isinstance(part, cst.BaseSuite):
            yield part
        elif isinstance(part, (list, tuple)):  # except handlers, match cases
            for item in part:
                yield item.body
        elif isinstance(part, cst.If):  # elif
            yield from _suites(part)
        else:  # Else, Finally
            yield part.body


class _Spans:
    def __init__(self, module: cst.Module, text: str, starts: dict):
        self.starts = starts
        if not module.has_trailing_newline:
            text += module.default_newline  # as LibCST parses it
        self.text = text
        self.lines = text.split("\n")  # the lines ast numbers (no lone "\r": starts says so)
        self.offsets = [0, *accumulate(len(line) + 1 for line in self.lines)]
        self.out: dict = {}

    def _entry(self, stmt):
        return self.starts.get(stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) else stmt)

    def first_line(self, stmt) -> int | None:
        entry = self._entry(stmt)
        if entry is None:
            return None
        line = entry[0]
        decorators = getattr(stmt, "decorators", ())
        if decorators:
            ref = entry[4]
            if not getattr(ref, "decorator_list", None):
                return None
            line = ref.decorator_list[0].lineno - len(decorators[0].leading_lines)
        return line - len(stmt.leading_lines)

    def simple_end(self, stmt) -> int | None:
        """The line after a simple statement: its trailing comment and newline end the line its
        last token is on (unless a backslash continues it)."""
        entry = self.starts.get(stmt.body[-1])
        if entry is None:
            return None
        ref = entry[4]
        line = self.lines[ref.end_lineno - 1]
        tail = line[char_column(line, ref.end_col_offset):]
        return None if "\\" in tail else ref.end_lineno + 1

    def block(self, body, end: int | None) -> None:
        firsts = [self.first_line(s) for s in body]
        for i, stmt in enumerate(body):
            stop = firsts[i + 1] if i + 1 < len(body) else end
            if stop is None and isinstance(stmt, cst.SimpleStatementLine):
                stop = self.simple_end(stmt)
            first = firsts[i]
            if first is not None and stop is not None:
                self.add(stmt, first, stop)
            if not isinstance(stmt, cst.SimpleStatementLine):
                suites = list(_suites(stmt))
                for k, suite in enumerate(suites):
                    if isinstance(suite, cst.IndentedBlock):
                        last = k == len(suites) - 1 and stop is not None
                        self.block(suite.body, stop - len(suite.footer) if last else None)

    def add(self, stmt, first: int, stop: int) -> None:
        own = first + len(stmt.leading_lines)  # the line the statement's own text starts on
        if not 1 <= first < stop <= len(self.lines) or own >= stop:
            return
        indent = self._entry(stmt)[2]
        head = self.lines[own - 1]
        # Cheap checks that the extent is right; anything odd is generated as usual.
        if not head.startswith(indent) or head[len(indent):len(indent) + 1] in ("", " ", "\t", "\f"):
            return
        if any(self.lines[n].strip() and not self.lines[n].lstrip().startswith("#")
               for n in range(first - 1, own - 1)):
            return
        self.out[stmt] = Verbatim(stmt, self.text[self.offsets[first - 1]:self.offsets[stop - 1]], indent)


def spans(module: cst.Module, text: str, starts: dict | None) -> dict:
    """{original statement: Verbatim} for every statement whose text in ``text`` is certain;
    ``starts`` is positions.statement_starts() for the same module and text."""
    if not starts:
        return {}
    found = _Spans(module, text, starts)
    found.block(module.body, len(found.lines) - len(module.footer))
    return found.out


# Statements parsed from rule snippets live as long as names.statements' cache: their text is
# kept here (bounded; an evicted snippet is simply generated again).
_SNIPPETS: OrderedDict = OrderedDict()
_SNIPPETS_MAX = 4096


def remember(module: cst.Module, text: str) -> None:
    """Keep the text of a snippet module's statements, for every conversion that inserts them."""
    for stmt, verbatim in spans(module, text, statement_starts(module, ast.parse(text), text)).items():
        _SNIPPETS[stmt] = verbatim
    while len(_SNIPPETS) > _SNIPPETS_MAX:
        _SNIPPETS.popitem(last=False)


def _swap_block(node, known: dict):
    new = None
    for i, stmt in enumerate(node.body):
        got = known.get(stmt) or _SNIPPETS.get(stmt)
        if got is None and not isinstance(stmt, cst.SimpleStatementLine):
            inner = _swap_compound(stmt, known)
            got = inner if inner is not stmt else None
        if got is not None:
            if new is None:
                new = list(node.body)
            new[i] = got
    return node if new is None else node.with_changes(body=new)


def _swap_compound(stmt, known: dict):
    changes = {}
    for name in BLOCKS:
        part = getattr(stmt, name, None)
        if part is None:
            continue
        if isinstance(part, cst.IndentedBlock):
            new = _swap_block(part, known)
        elif isinstance(part, (list, tuple)):  # except handlers, match cases
            items = tuple(_swap_clause(item, known) for item in part)
            new = items if any(a is not b for a, b in zip(items, part)) else part
        elif isinstance(part, cst.If):  # elif
            new = _swap_compound(part, known)
        else:  # Else, Finally
            new = _swap_clause(part, known)
        if new is not part:
            changes[name] = new
    return stmt.with_changes(**changes) if changes else stmt


def _swap_clause(clause, known: dict):
    if not isinstance(getattr(clause, "body", None), cst.IndentedBlock):
        return clause
    body = _swap_block(clause.body, known)
    return clause if body is clause.body else clause.with_changes(body=body)


def render(module: cst.Module, known: dict) -> str:
    """``module.code``, with the statements in ``known`` (and remembered snippets) copied."""
    return module.code_for_node(_swap_block(module, known))
