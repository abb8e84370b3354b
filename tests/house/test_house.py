"""The house rule for size, over every package tfdesk ships, read with ``ast`` (nothing is
imported): no module over 500 lines, no function over 80. Import circles are checked per
package elsewhere (test_import_graph.py: bot, catalog, runners; test_kb_layers.py:
knowledge_base)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

ROOT = Path(__file__).resolve().parents[2]
MAX_MODULE_LINES, MAX_FUNCTION_LINES = 500, 80
PACKAGES = ("bot", "catalog", "runners", "converters", "core", "knowledge_base", "tools")


def sources(root: Path, packages=PACKAGES) -> list[Path]:
    return sorted(p for package in packages for p in (root / package).rglob("*.py"))


def oversize(path: Path) -> list[str]:
    """What in ``path`` breaks the size rule, in words; empty when nothing does."""
    return rule_breaks(path.read_text(), str(path))


def rule_breaks(text: str, name: str = "<source>") -> list[str]:
    lines = len(text.splitlines())
    found = [f"module of {lines} lines (limit {MAX_MODULE_LINES})"] \
        if lines > MAX_MODULE_LINES else []
    for node in ast.walk(ast.parse(text, name)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = node.end_lineno - node.lineno + 1
            if length > MAX_FUNCTION_LINES:
                found.append(f"{node.name} at line {node.lineno}: {length} lines "
                             f"(limit {MAX_FUNCTION_LINES})")
    return found


def test_every_package_is_there():
    """A renamed or moved package would otherwise leave the rule checking nothing."""
    for package in PACKAGES:
        assert (ROOT / package / "__init__.py").is_file(), package
        assert sources(ROOT, (package,)), package


@pytest.mark.parametrize("package", PACKAGES)
def test_no_module_or_function_over_the_limit(package):
    bad = {str(p.relative_to(ROOT)): why for p in sources(ROOT, (package,))
           if (why := oversize(p))}
    assert not bad, f"{package} breaks the size rule: {bad}"


def test_the_checker_fails_on_a_planted_violation(tmp_path):
    """The rule can fail: a module one line over, and functions (nested, async, a method)
    one line over, are each named; at the limits exactly, nothing is."""
    def body(n: int) -> str:  # a function of exactly n lines
        return "\n".join(["def f():"] + ["    x = 1"] * (n - 1)) + "\n"

    pkg = tmp_path / "core"
    pkg.mkdir()
    at_limit = pkg / "ok.py"
    at_limit.write_text(body(MAX_FUNCTION_LINES)
                        + "y = 0\n" * (MAX_MODULE_LINES - MAX_FUNCTION_LINES))
    assert len(at_limit.read_text().splitlines()) == MAX_MODULE_LINES
    assert oversize(at_limit) == []
    long_module = pkg / "long.py"
    long_module.write_text(at_limit.read_text() + "y = 1\n")
    assert oversize(long_module) == [f"module of {MAX_MODULE_LINES + 1} lines "
                                     f"(limit {MAX_MODULE_LINES})"]
    inner = body(MAX_FUNCTION_LINES + 1).replace("def f", "async def g").replace("\n", "\n    ")
    nested = pkg / "nested.py"
    nested.write_text("class C:\n    " + inner.rstrip() + "\n")
    assert [w.split(" at ")[0] for w in oversize(nested)] == ["g"]
    assert sources(tmp_path, ("core",)) == [long_module, nested, at_limit]


@settings(max_examples=60, deadline=None)
@given(length=st.integers(2, 2 * MAX_FUNCTION_LINES), depth=st.integers(0, 3),
       is_async=st.booleans(), padding=st.integers(0, MAX_MODULE_LINES))
def test_a_function_is_named_exactly_when_it_is_too_long(length, depth, is_async, padding):
    """Any function, however nested (in functions or classes), async or not, is measured
    from its ``def`` to its last line; the module by all its lines."""
    lines, indent = [], ""
    for level in range(depth):
        lines.append(f"{indent}{'class' if level % 2 else 'def'} w{level}"
                     f"{'' if level % 2 else '()'}:")
        indent += "    "
    lines.append(f"{indent}{'async ' if is_async else ''}def target():")
    lines += [f"{indent}    x = {i}" for i in range(length - 1)]
    lines += ["y = 0"] * padding
    found = rule_breaks("\n".join(lines) + "\n")
    named = {w.split(" at ")[0] for w in found if not w.startswith("module")}
    assert ("target" in named) == (length > MAX_FUNCTION_LINES)
    total = len(lines)
    assert any(w.startswith("module") for w in found) == (total > MAX_MODULE_LINES)
    # A wrapping function spans its own line, the wrappers inside it and the target.
    for level in range(0, depth, 2):
        assert (f"w{level}" in named) == (depth - level + length > MAX_FUNCTION_LINES)
