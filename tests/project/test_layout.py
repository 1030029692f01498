"""The harness's rooms and the direction of their imports.

``experiments/`` is grouped by concern; each room may import only the rooms below it in
:data:`LAYERS` (the base modules ``errors`` and ``threads`` are below every room), and no two modules
import each other, directly or through others.  Imports inside functions count too: a lazy import
is still a dependency.  The test reads the source (ast), so it fails on the import itself, whether
or not a test exercises it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "experiments"

#: the rooms from the bottom up: a room imports only rooms listed before it
LAYERS = ("base", "data", "store", "runs", "peers", "audit", "figures", "bench", "plan", "app")
#: modules directly under experiments/ that every room may import
BASE_MODULES = ("errors", "threads", "paths")
#: the package's ``__init__`` (registers the command line's schema) sits above every room
TOP = "experiments"


def _modules() -> dict[str, Path]:
    mods = {}
    for path in PACKAGE.rglob("*.py"):
        name = ".".join(path.relative_to(REPO).with_suffix("").parts)
        mods[name.removesuffix(".__init__")] = path
    return mods


MODULES = _modules()


def _imported(path: Path) -> set[str]:
    """The modules of this package that ``path`` imports (at any depth of the file)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for alias in node.names:  # ``from experiments import peers`` imports experiments.peers
                submodule = f"{node.module}.{alias.name}"
                found.add(submodule if submodule in MODULES else node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level > 0:
            raise AssertionError(f"{path.relative_to(REPO)}: relative import; use absolute imports")
    return {m for m in found if m in MODULES}


GRAPH = {m: _imported(p) - {m} for m, p in MODULES.items()}


def room(module: str) -> str:
    """``experiments.store.records`` -> ``store``; the base modules -> ``base``."""
    parts = module.split(".")
    if len(parts) == 1:
        return TOP
    return "base" if parts[1] in BASE_MODULES else parts[1]


def test_every_module_is_in_a_known_room():
    unknown = {m for m in MODULES if room(m) not in (*LAYERS, TOP)}
    assert not unknown, f"modules outside the rooms of LAYERS: {sorted(unknown)}"


@pytest.mark.parametrize("module", sorted(m for m in MODULES if room(m) != TOP))
def test_imports_point_down(module):
    level = LAYERS.index(room(module))
    upward = sorted(
        d
        for d in GRAPH[module]
        if room(d) != room(module) and (room(d) == TOP or LAYERS.index(room(d)) > level)
    )
    assert not upward, f"{module} ({room(module)}) imports rooms above it: {upward}"


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on_stack, found, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return found


def test_no_import_cycles():
    assert _cycles(GRAPH) == []


def test_cycle_finder_finds_a_cycle():
    """The check above could pass by never finding anything: it must see a planted cycle."""
    planted = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(planted) == [["a", "b", "c"]]
