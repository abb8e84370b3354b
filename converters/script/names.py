"""Small LibCST helpers: dotted names, canonical API names, building and reading calls."""
from __future__ import annotations

import ast
from functools import lru_cache

import libcst as cst

from converters.script.render import remember
from converters.script.tables import CANONICAL_PREFIXES
from converters.script.walk import nodes_of

_EMPTY = cst.Module(body=[])


def dotted(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = dotted(node.value)
        return f"{base}.{node.attr.value}" if base else None
    return None


def ast_dotted(node: ast.AST) -> str | None:
    """``dotted`` for the standard ``ast`` tree the analysis passes read."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = ast_dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


@lru_cache(maxsize=4096)
def canonical(full: str | None) -> str | None:
    if not full:
        return full
    for prefix, repl in CANONICAL_PREFIXES:
        if full.startswith(prefix):
            full = repl + full[len(prefix):]
            if repl == "keras.":  # keras.optimizers.legacy.X after tf.keras -> keras.X
                for p2, r2 in CANONICAL_PREFIXES:
                    if p2.startswith("keras.") and full.startswith(p2):
                        return r2 + full[len(p2):]
            return full
    return full


def qualified(node: cst.BaseExpression, aliases: dict[str, str]) -> str | None:
    """The full dotted name an expression refers to, through the script's imports."""
    name = dotted(node)
    if not name:
        return None
    head, _, rest = name.partition(".")
    if head in aliases:
        head = aliases[head]
    return f"{head}.{rest}" if rest else head


def code(node: cst.CSTNode) -> str:
    return _EMPTY.code_for_node(node)


# LibCST nodes are immutable, so parsed snippets can be shared; the setup block and the
# recurring rewrites are parsed once per process rather than once per script.
@lru_cache(maxsize=2048)
def expr(text: str) -> cst.BaseExpression:
    return cst.parse_expression(text)


@lru_cache(maxsize=512)
def _statements(text: str) -> tuple:
    # A leading "pass" keeps the first comments attached to the first real statement
    # (parse_module would otherwise make them the module header and drop them here).
    source = "pass\n" + text
    module = cst.parse_module(source)
    remember(module, source)  # their text, so rendering copies it instead of regenerating it
    return tuple(module.body[1:])


def statements(text: str) -> list[cst.BaseStatement]:
    return list(_statements(text))


def find_arg(call: cst.Call, keyword: str | tuple[str, ...],
             position: int | None) -> tuple[int, cst.Arg] | None:
    """Index and Arg of a keyword (or the positional at ``position``) in a call."""
    keywords = (keyword,) if isinstance(keyword, str) else keyword
    positional = 0
    for i, a in enumerate(call.args):
        if a.keyword is not None:
            if a.keyword.value in keywords:
                return i, a
        elif a.star:
            return None  # *args: positions are unknowable
        else:
            if position is not None and positional == position:
                return i, a
            positional += 1
    return None


def replace_arg(call: cst.Call, index: int, value: cst.BaseExpression) -> cst.Call:
    args = list(call.args)
    args[index] = args[index].with_changes(value=value)
    return call.with_changes(args=args)


def add_kwarg(call: cst.Call, name: str, value: cst.BaseExpression) -> cst.Call:
    args = list(call.args)
    if args and args[-1].comma is cst.MaybeSentinel.DEFAULT:
        pass
    new = cst.Arg(value=value, keyword=cst.Name(name),
                  equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                                        whitespace_after=cst.SimpleWhitespace("")))
    if args and isinstance(args[-1].comma, cst.Comma):
        # keep a trailing comma style: append after it
        return call.with_changes(args=[*args, new.with_changes(comma=args[-1].comma)])
    if args:
        args[-1] = args[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    return call.with_changes(args=[*args, new])


def prepend_arg(call: cst.Call, value: cst.BaseExpression) -> cst.Call:
    new = cst.Arg(value=value, comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    return call.with_changes(args=[new, *call.args])


_ATOMS = (cst.Name, cst.Attribute, cst.Call, cst.Integer, cst.Float, cst.Subscript,
          cst.SimpleString)

# Rewrites are built from the script's own nodes rather than printed and parsed again: that
# keeps the user's layout inside them (a call over several lines stays so) and is cheaper.


def operand(value: cst.BaseExpression) -> cst.BaseExpression:
    """``value`` parenthesised where an operator next to it would bind tighter."""
    if isinstance(value, _ATOMS) or value.lpar:
        return value
    return value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def call(func: str | cst.BaseExpression, *args: cst.BaseExpression) -> cst.Call:
    """``func(arg, ...)`` around existing nodes."""
    out = [cst.Arg(a, comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))) for a in args]
    if out:
        out[-1] = out[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    return cst.Call(func=expr(func) if isinstance(func, str) else func, args=out)


def times(value: cst.BaseExpression, factor: str) -> cst.BaseExpression:
    """``value * factor``, parenthesised when the value needs it; keeps the original text."""
    return cst.BinaryOperation(left=operand(value), operator=cst.Multiply(), right=expr(factor))


def floordiv(value: cst.BaseExpression, divisor: str) -> cst.BaseExpression:
    """``max(1, value // divisor)``."""
    return call("max", cst.Integer("1"), cst.BinaryOperation(
        left=operand(value), operator=cst.FloorDivide(), right=expr(divisor)))


def calls(node: cst.CSTNode, func: str) -> bool:
    """Whether ``node`` holds a call to the dotted name ``func`` (``hvd.size``)."""
    return any(dotted(c.func) == func for c in nodes_of(node, cst.Call))


def has_name(node: cst.CSTNode, name: str) -> bool:
    """Whether ``name`` appears in ``node``, as a name or an attribute."""
    return any(n.value == name for n in nodes_of(node, cst.Name))
