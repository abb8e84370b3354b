"""The knowledge base's house rules, read from its source with ``ast`` (nothing is imported):
no import circle among its modules, the core never imports the question wing
(``knowledge_base.qa``). The size rule for every package is tests/house/test_house.py."""
from __future__ import annotations

import ast
import graphlib
from pathlib import Path


ROOT = Path(__file__).resolve().parents[2]
QA = "knowledge_base.qa"


def modules(root: Path) -> dict[str, Path]:
    out = {}
    for path in sorted((root / "knowledge_base").rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _type_checking_only(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    """Under ``if TYPE_CHECKING:``: read by type checkers, never run."""
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            return True
    return False


def _targets(node: ast.AST, package: str) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    base = node.module or ""
    if node.level:
        parts = package.split(".")
        base = ".".join(parts[:len(parts) - node.level + 1] + ([base] if base else []))
    # "from pkg import mod" imports pkg.mod when that is a module.
    return [base] + [f"{base}.{a.name}" for a in node.names]


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """The package's modules that ``name`` imports when it runs (at module level or inside a
    function: a deferred import is still an edge)."""
    tree = ast.parse(path.read_text(), str(path))
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Import, ast.ImportFrom)) or \
                _type_checking_only(node, parents):
            continue
        for target in _targets(node, package):
            while target and target not in known:  # a.b.func -> the module a.b
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def import_graph(root: Path) -> dict[str, set[str]]:
    mods = modules(root)
    return {name: imports_of(name, path, set(mods)) for name, path in mods.items()}


def circle(graph: dict[str, set[str]], root: Path) -> list[str]:
    """An import circle among the modules, or []. A package's ``__init__`` runs before its
    modules, so an edge into it is not a circle through the siblings that import each other."""
    inits = {n for n, p in modules(root).items() if p.name == "__init__.py"}
    deps = {n: graph[n] - inits for n in graph if n not in inits}
    try:
        tuple(graphlib.TopologicalSorter(deps).static_order())
    except graphlib.CycleError as exc:
        return list(exc.args[1])
    return []


def core_imports_of_qa(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """(core module, qa module) for every path from the core into the question wing."""
    is_qa = lambda n: n == QA or n.startswith(QA + ".")  # noqa: E731
    bad = []
    for start in (n for n in graph if not is_qa(n)):
        seen, todo = set(), [start]
        while todo:
            for nxt in graph[todo.pop()] - seen:
                seen.add(nxt)
                if is_qa(nxt):
                    bad.append((start, nxt))
                else:
                    todo.append(nxt)
    return sorted(bad)


def test_the_package_has_no_import_circle():
    found = circle(import_graph(ROOT), ROOT)
    assert not found, f"import circle in knowledge_base: {' -> '.join(found)}"


def test_the_core_never_imports_the_question_wing():
    bad = core_imports_of_qa(import_graph(ROOT))
    assert not bad, f"core modules reach knowledge_base.qa: {bad}"


def test_the_checker_finds_a_planted_circle_and_core_import(tmp_path):
    """The rules above can fail: a circle through a deferred import, and a core module that
    reaches qa through another core module, are found; a TYPE_CHECKING import is not an edge."""
    pkg = tmp_path / "knowledge_base"
    (pkg / "qa").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "qa" / "__init__.py").write_text("from knowledge_base.qa import x\n")
    (pkg / "a.py").write_text("from knowledge_base import b\n")
    (pkg / "b.py").write_text("def f():\n    from . import a\n")
    (pkg / "c.py").write_text("from .qa.x import thing\n")
    (pkg / "d.py").write_text("import knowledge_base.c\n")
    (pkg / "qa" / "x.py").write_text("from typing import TYPE_CHECKING\n"
                                     "if TYPE_CHECKING:\n    from knowledge_base import d\n")
    graph = import_graph(tmp_path)
    assert "knowledge_base.b" in graph["knowledge_base.a"]
    assert "knowledge_base.a" in graph["knowledge_base.b"]
    assert graph["knowledge_base.qa.x"] == set()
    assert set(circle(graph, tmp_path)) == {"knowledge_base.a", "knowledge_base.b"}
    assert ("knowledge_base.d", "knowledge_base.qa.x") in core_imports_of_qa(graph)
    (pkg / "b.py").write_text("")
    assert circle(import_graph(tmp_path), tmp_path) == []
