"""Start line and column of every node, from one code-generation pass.

LibCST's PositionProvider does the same but builds two position objects per node; tfdesk only
needs where a node starts, and this is several times faster (it dominated conversion time).
"""
from __future__ import annotations

import ast
import re
from contextlib import contextmanager
from dataclasses import dataclass, field

import libcst as cst
from libcst._nodes.internal import CodegenState

from converters.script.walk import in_source_order


@dataclass(frozen=False)
class _State(CodegenState):
    positions: dict = field(default_factory=dict)
    line: int = 1
    column: int = 0
    stack: list = field(default_factory=list)

    def add_indent_tokens(self) -> None:
        for token in self.indent_tokens:
            self.add_token(token)

    def add_token(self, value: str) -> None:
        self.tokens.append(value)
        newlines = value.count("\n")
        if newlines:
            self.line += newlines
            self.column = len(value) - value.rfind("\n") - 1
        else:
            self.column += len(value)

    def before_codegen(self, node) -> None:
        self.stack.append((self.line, self.column))

    def after_codegen(self, node) -> None:
        start = self.stack.pop()
        if node not in self.positions:
            self.positions[node] = start

    @contextmanager
    def record_syntactic_position(self, node, *, start_node=None, end_node=None):
        # Where the node's own syntax starts (after leading comments and blank lines).
        start = (self.line, self.column)
        yield
        self.positions[node] = self.positions.get(start_node, start) if start_node is not None else start


def start_positions(module: cst.Module) -> dict:
    """{node: (line, column)} with 1-based lines and 0-based columns, like PositionProvider."""
    state = _State(default_indent=module.default_indent, default_newline=module.default_newline)
    module._codegen(state)
    return state.positions


# --- on demand: only the statements that hold a finding are generated -----------------------
# A full code-generation pass over a large script costs as much as the rewrite itself, yet
# findings touch a few hundred nodes. Every statement's start is already known from the ``ast``
# tree that the input checks parsed, so each finding only needs its innermost statement
# generated, started at that statement's line and indentation.

def _anchor_types() -> frozenset:
    bases = (cst.BaseSmallStatement, cst.BaseCompoundStatement, cst.SimpleStatementLine)
    return frozenset(c for c in vars(cst).values()
                     if isinstance(c, type) and issubclass(c, bases) and not c.__name__.startswith("Base"))


ANCHORS = _anchor_types()
BLOCKS = ("body", "handlers", "cases", "orelse", "finalbody")  # a compound statement's suites
_AST_NAMES = {"Del": "Delete"}


def source_lines(text: str) -> list[str]:
    """The lines ``ast`` numbers (str.splitlines would also split at \f, \x1c, ...)."""
    return text.replace("\r\n", "\n").split("\n")


def char_column(line: str, byte_col: int) -> int:
    """An ``ast`` column (UTF-8 bytes into the line) as a character index."""
    if line.isascii():
        return byte_col
    return len(line.encode("utf-8")[:byte_col].decode("utf-8", "replace"))


def _cst_flat(body, out: list, elifs: set) -> None:
    """Statements in source order: small statements and compound statements (pre-order)."""
    for stmt in body:
        if isinstance(stmt, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
            out.extend(stmt.body)
            continue
        out.append(stmt)
        for name in BLOCKS:
            part = getattr(stmt, name, None)
            if part is None:
                continue
            if isinstance(part, cst.If):  # elif: generated on its own it would say "if"
                elifs.add(part)
                _cst_flat([part], out, elifs)
            elif isinstance(part, (list, tuple)):  # except handlers, match cases
                for item in part:
                    _cst_suite(item.body, out, elifs)
            elif isinstance(part, cst.BaseSuite):
                _cst_suite(part, out, elifs)
            else:  # Else, Finally
                _cst_suite(part.body, out, elifs)


def _cst_suite(suite, out: list, elifs: set) -> None:
    if isinstance(suite, cst.SimpleStatementSuite):
        out.extend(suite.body)
    else:
        _cst_flat(suite.body, out, elifs)


def _ast_flat(body, out: list) -> None:
    for stmt in body:
        out.append(stmt)
        for name in BLOCKS:
            part = getattr(stmt, name, None)
            if not isinstance(part, list):
                continue
            if name in ("handlers", "cases"):
                for item in part:
                    _ast_flat(item.body, out)
            else:
                _ast_flat(part, out)


def statement_starts(module: cst.Module, tree, text: str) -> dict | None:
    """{statement: (line, column, indentation, is_elif, ast node)} for every LibCST statement,
    from ``ast``; None when the two trees do not line up (then positions come from a full pass)."""
    mine, theirs, elifs = [], [], set()
    _cst_flat(module.body, mine, elifs)
    _ast_flat(tree.body, theirs)
    if len(mine) != len(theirs):
        return None
    if re.search("\r(?!\n)", text):  # old Mac line ends: ast and LibCST count lines apart
        return None
    lines = source_lines(text)
    out = {}
    for node, ref in zip(mine, theirs):
        name = type(node).__name__
        if _AST_NAMES.get(name, name) != type(ref).__name__.replace("Async", ""):
            return None
        line_text = lines[ref.lineno - 1] if ref.lineno <= len(lines) else ""
        col = char_column(line_text, ref.col_offset)
        # The enclosing block's indentation: continuation lines and nested blocks repeat it.
        indent = line_text[:len(line_text) - len(line_text.lstrip(" \t\f"))]
        out[node] = (ref.lineno, col, indent, node in elifs, ref)
    return out


# Calls and lists (most findings point at one) are read off the ``ast`` tree instead: within
# one statement both trees hold the same calls in the same source order.
_FROM_AST = {cst.Call: ast.Call, cst.List: ast.List}


class Positions:
    """``get(node)``: where an original node starts, like start_positions(), computed on demand.

    ``stack`` holds the statements being visited (Combined keeps it); a node is found by
    generating the innermost of them, and only when that fails by one full pass.
    """

    def __init__(self, module: cst.Module, tree, text: str):
        self.module, self.tree, self.text = module, tree, text
        self.stack: list = []
        self.known: dict = {}
        self._starts: dict | None = None
        self._done: set = set()
        self._mapped: set = set()
        self._lines: list | None = None
        self._full = False

    @property
    def starts(self) -> dict:
        if self._starts is None:
            starts = statement_starts(self.module, self.tree, self.text)
            if starts is None:
                self._fill_all()
                starts = {}
            self._starts = starts
        return self._starts

    def _fill_all(self) -> None:
        if not self._full:
            self._full = True
            self.known.update(start_positions(self.module))

    def _map(self, stmt, ref) -> None:
        """Positions of the calls and lists in ``stmt`` from its ``ast`` node ``ref``."""
        self._mapped.add(stmt)
        theirs = {kind: [] for kind in _FROM_AST.values()}
        for n in ast.walk(ref):
            if type(n) in theirs:
                theirs[type(n)].append(n)
            elif type(n) is ast.JoinedStr:  # f-string inner positions differ between versions
                return
        mine = {kind: [] for kind in _FROM_AST}
        for n in in_source_order(stmt, _FROM_AST):
            mine[type(n)].append(n)
        if any(len(mine[k]) != len(theirs[a]) for k, a in _FROM_AST.items()):
            return
        if self._lines is None:
            self._lines = source_lines(self.text)
        for kind, akind in _FROM_AST.items():
            refs = sorted(theirs[akind], key=lambda n: (n.lineno, n.col_offset, -n.end_lineno,
                                                         -n.end_col_offset))
            for node, n in zip(mine[kind], refs):
                self.known.setdefault(node, (n.lineno, char_column(self._lines[n.lineno - 1], n.col_offset)))

    def _generate(self, stmt) -> None:
        self._done.add(stmt)
        if isinstance(stmt, cst.SimpleStatementLine):
            line, col, indent, elif_, _ = self.starts[stmt.body[0]]
        else:
            line, col, indent, elif_, _ = self.starts[stmt]
        small = isinstance(stmt, cst.BaseSmallStatement)
        state = _State(default_indent=self.module.default_indent,
                       default_newline=self.module.default_newline)
        state.indent_tokens = [indent]
        state.column = col if small else 0
        if elif_:
            stmt._codegen(state, is_elif=True)
        else:
            stmt._codegen(state)
        got = state.positions.get(stmt)
        if got is None or got[1] != col:  # not where ast says: leave it to the full pass
            return
        shift = line - got[0]
        for node, (ln, c) in state.positions.items():
            self.known.setdefault(node, (ln + shift, c))

    def get(self, node, default=None):
        pos = self.known.get(node)
        if pos is not None or self._full:
            return pos if pos is not None else default
        starts = self.starts
        if node in starts:
            pos = starts[node][:2]
        elif isinstance(node, cst.SimpleStatementLine) and node.body and node.body[0] in starts:
            pos = starts[node.body[0]][:2]
        if pos is not None:
            self.known[node] = pos
            return pos
        if type(node) in _FROM_AST:
            # The innermost statement only: an enclosing one holds whatever made it fail.
            stmt = next((s for s in reversed(self.stack) if s in starts), None)
            if stmt is not None and stmt not in self._mapped:
                self._map(stmt, starts[stmt][4])
                if node in self.known:
                    return self.known[node]
        for stmt in reversed(self.stack):
            if stmt in self._done:
                continue
            if stmt in starts or (isinstance(stmt, cst.SimpleStatementLine) and stmt.body[0] in starts):
                self._generate(stmt)
                if node in self.known:
                    return self.known[node]
        self._fill_all()
        return self.known.get(node, default)
