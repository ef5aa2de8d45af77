"""The layout shows the data's path, and every import points down it.

files -> chunkers -> index -> retrievers -> context -> agent_loop -> front ends, with shared basics
(navigator.core) at the bottom and evaluation beside the path, above what it measures. Every import
counts, including the lazy ones inside functions: a lazy import up the path is still a dependency up it.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("navigator", "chunkers", "retrievers", "agent_loop")

# Each stage folder and the stages it may import. A folder may always import itself.
LAYERS = [
    "navigator.core",
    "chunkers",
    "navigator.index",
    "retrievers",
    "navigator.context",
    "agent_loop",
    "navigator.evaluation",
    "navigator.tuning",
    "navigator.frontends",
]
# Evaluation sits beside the path: it measures retrievers and context, and needs nothing of the agent.
MAY_NOT_IMPORT = {"navigator.evaluation": {"agent_loop"}}
# Package roots that are not stages of their own: they may hold nothing but re-exports of nothing.
ENTRY_MODULES = {"navigator", "navigator.__main__"}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def source_modules() -> dict[str, Path]:
    return {module_name(p): p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")}


def imported_modules(path: Path, name: str, known: set[str]) -> set[str]:
    """The nav modules a file imports, anywhere in it (module level or inside functions)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            # `from pkg import mod` imports the module pkg.mod when there is one.
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def layer_of(module: str) -> str | None:
    best = None
    for layer in LAYERS:
        if module == layer or module.startswith(layer + "."):
            if best is None or len(layer) > len(best):
                best = layer
    return best


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    modules = source_modules()
    known = set(modules)
    return {name: imported_modules(path, name, known) for name, path in modules.items()}


def test_every_module_belongs_to_a_stage(graph):
    homeless = sorted(m for m in graph if layer_of(m) is None and m not in ENTRY_MODULES)
    assert not homeless, f"modules outside every stage folder: {homeless}"


def test_imports_point_down_the_path(graph):
    rank = {layer: i for i, layer in enumerate(LAYERS)}
    upward = []
    for module, targets in graph.items():
        here = layer_of(module)
        if here is None:
            continue
        for target in targets:
            there = layer_of(target)
            if there is None:
                upward.append(f"{module} -> {target} (not a stage)")
            elif rank[there] > rank[here] or there in MAY_NOT_IMPORT.get(here, ()):
                upward.append(f"{module} ({here}) -> {target} ({there})")
    assert not upward, "imports against the data's path:\n" + "\n".join(sorted(upward))


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the directed graph, or None (iterative depth-first search)."""
    WHITE, GREY, BLACK = 0, 1, 2
    colour = dict.fromkeys(graph, WHITE)
    for start in sorted(graph):
        if colour[start] != WHITE:
            continue
        stack = [(start, iter(sorted(graph[start])))]
        path = [start]
        colour[start] = GREY
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                colour[node] = BLACK
                stack.pop()
                path.pop()
            elif colour.get(child, BLACK) == GREY:
                return path[path.index(child):] + [child]
            elif colour.get(child) == WHITE:
                colour[child] = GREY
                stack.append((child, iter(sorted(graph.get(child, ())))))
                path.append(child)
    return None


def test_no_cycle_between_files(graph):
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle between files: " + " -> ".join(cycle)


def test_no_cycle_between_folders(graph):
    folders: dict[str, set[str]] = {}
    for module, targets in graph.items():
        here = layer_of(module) or module
        folders.setdefault(here, set()).update(
            t for t in (layer_of(x) or x for x in targets) if t != here)
    cycle = find_cycle(folders)
    assert cycle is None, "import cycle between folders: " + " -> ".join(cycle)


def test_the_checker_sees_a_cycle_and_an_upward_import():
    # The checks above could pass by seeing nothing: show they catch what they are for.
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None
    assert layer_of("navigator.index.store") == "navigator.index"
    assert layer_of("retrievers.bm25") == "retrievers"
    imports = imported_modules(ROOT / "navigator" / "index" / "store.py", "navigator.index.store",
                               set(source_modules()))
    assert "navigator.core.errors" in imports
