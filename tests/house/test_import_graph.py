"""The house's import rules, read from the source (every import, at module level or inside a
function): no import circle inside bot/, catalog/ or runners/, and bot's plumbing (parser,
dispatch, services, context, Slack, ...) never reaches a handler, directly or through
another module. Handlers fill the command table when the process's edge loads them
(bot.commands.load)."""
from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("bot", "catalog", "runners")
# Modules allowed to import handlers: the edge that loads the command set, and the faces
# that exist only to start a process (the terminal's main).
EDGES = {"bot.commands", "bot.cli"}


def modules() -> dict[str, Path]:
    out = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


def imported(source: str, known: set[str]) -> set[str]:
    """Modules of ``known`` that ``source`` imports, and the packages their import runs
    (``import a.b.c`` runs ``a.b``'s ``__init__`` too)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for a in node.names:
                sub = f"{node.module}.{a.name}"
                names.add(sub if sub in known else node.module)
    out = set()
    for name in names:
        parts = name.split(".")
        out |= {".".join(parts[:i]) for i in range(2, len(parts) + 1)}
    return out & known


@functools.lru_cache(maxsize=1)
def graph() -> dict[str, set[str]]:
    mods = modules()
    known = set(mods)
    return {m: {t for t in imported(p.read_text(encoding="utf-8"), known)
                if t != m and not m.startswith(t + ".")}  # a package's own __init__
            for m, p in mods.items()}


def cycles(g: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []
    for root in g:
        if root in index:
            continue
        work = [(root, iter(sorted(g[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(g.get(w, ())))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        found.append(sorted(comp))
    return found


def reachable(g: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for w in g.get(todo.pop(), ()):
            if w not in seen:
                seen.add(w)
                todo.append(w)
    return seen


def test_no_import_circle_in_bot_catalog_runners():
    assert cycles(graph()) == []


def is_handler(m: str) -> bool:
    return m == "bot.handlers" or m.startswith("bot.handlers.")


@pytest.mark.parametrize("module", sorted(m for m in modules() if m.startswith("bot.")
                                          and not is_handler(m) and m not in EDGES))
def test_plumbing_never_reaches_a_handler(module):
    reached = sorted(m for m in reachable(graph(), module) if is_handler(m))
    assert reached == [], f"{module} imports handlers: {reached}"


def test_libraries_never_import_bot():
    g = graph()
    assert sorted(m for m in g if not m.startswith("bot")
                  and any(t.startswith("bot") for t in g[m])) == []


# The detector itself, against graphs whose circles are known by construction.
@settings(max_examples=200, deadline=None)
@given(st.integers(2, 8), st.integers(0, 8), st.data())
def test_the_detector_finds_exactly_the_planted_circle(size, extra, data):
    ring = [f"m{i}" for i in range(size)]
    g = {m: {ring[(i + 1) % size]} for i, m in enumerate(ring)}
    # a chain hanging off the ring, pointing away from it: no new circle
    chain = [f"c{i}" for i in range(extra)]
    for i, c in enumerate(chain):
        g[c] = {chain[i + 1]} if i + 1 < extra else set()
    if chain:
        g[ring[data.draw(st.integers(0, size - 1))]].add(chain[0])
    assert cycles(g) == [sorted(ring)]
    cut = data.draw(st.integers(0, size - 1))
    g[ring[cut]].discard(ring[(cut + 1) % size])
    assert cycles(g) == []
