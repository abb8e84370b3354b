"""Input checks before anything is parsed: size, encoding, notebooks, empty files, syntax.

Nothing here executes the script: ``ast.parse`` only compiles to a tree, and gives the
clearest syntax-error messages (LibCST then parses the same text for the rewrite).
"""
from __future__ import annotations

import ast
import json

import libcst as cst

from converters.script.errors import ConversionError

MAX_BYTES = 1_000_000


def _looks_like_notebook(text: str) -> bool:
    head = text.lstrip()[:200]
    if not head.startswith("{"):
        return False
    try:
        data = json.loads(text)
    except ValueError:
        return '"cells"' in head or '"nbformat"' in head
    return isinstance(data, dict) and ("cells" in data or "nbformat" in data)


def decode(source: str | bytes, filename: str) -> str:
    if isinstance(source, bytes):
        if len(source) > MAX_BYTES:
            raise ConversionError(f"{filename} is {len(source):,} bytes; scripts over "
                                  f"{MAX_BYTES:,} bytes (1 MB) are not converted")
        try:
            text = source.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            line = source[:exc.start].count(b"\n") + 1
            raise ConversionError(
                f"{filename} is not UTF-8 text: byte 0x{source[exc.start]:02x} at line {line} "
                f"cannot be decoded; save the file as UTF-8 and try again", line=line) from None
    else:
        text = source
        size = len(text.encode("utf-8", "surrogatepass"))
        if size > MAX_BYTES:
            raise ConversionError(f"{filename} is {size:,} bytes; scripts over "
                                  f"{MAX_BYTES:,} bytes (1 MB) are not converted")
    return text


def load(source: str | bytes, filename: str = "script.py") -> tuple[str, cst.Module, ast.Module]:
    """Check and parse; returns the text, its LibCST module and its ``ast`` tree, or raises
    ConversionError."""
    text = decode(source, filename)
    if filename.endswith(".ipynb") or _looks_like_notebook(text):
        raise ConversionError(
            f"{filename} is a Jupyter notebook, not a Python script; export it first "
            f"(jupyter nbconvert --to script {filename}) and convert the .py file")
    if not text.strip():
        raise ConversionError(f"{filename} is empty; there is nothing to convert")
    if "\x00" in text:
        line = text[:text.index("\x00")].count("\n") + 1
        raise ConversionError(f"{filename} contains a NUL byte at line {line}; it is not a "
                              f"Python source file", line=line)
    try:
        tree = ast.parse(text, filename=filename)
    except SyntaxError as exc:
        where = f"line {exc.lineno}" + (f", column {exc.offset}" if exc.offset else "")
        snippet = (exc.text or "").strip()
        raise ConversionError(
            f"{filename} has a syntax error at {where}: {exc.msg}"
            + (f"\n    {snippet}" if snippet else "")
            + "\nFix it (python -m py_compile FILE shows the same error) and convert again.",
            line=exc.lineno) from None
    try:
        module = cst.parse_module(text)
    except cst.ParserSyntaxError as exc:  # Python accepted it but LibCST did not: rare
        raise ConversionError(f"{filename}: could not parse line {exc.raw_line}: {exc.message}",
                              line=exc.raw_line) from None
    return text, module, tree
