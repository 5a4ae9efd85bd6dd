"""List the import cycles among mirrorspark's modules.

Usage: ``python scripts/import_cycles.py [--packages] [src/mirrorspark]``; exit code 1 when a
cycle is found. ``--packages`` folds each module into its subpackage (``mirrorspark.control``...)
first, which shows layering loops (a lower package importing an upper one) that are not cycles
between single modules.

Every ``import``/``from ... import`` in a module counts, wherever it is written: at the top, in a
function (a deferred import still ties the two modules together, it only hides the cycle from the
interpreter) or under ``if TYPE_CHECKING``. ``from pkg import name`` counts as an import of
``pkg.name`` when that is a module, else of ``pkg``; a package's ``__init__`` is a module like any
other. Imports outside ``mirrorspark`` are ignored.

Each strongly connected group of modules is printed once, with one shortest cycle through it and
the lines that make each edge, so the edge to cut is easy to find.
"""
from __future__ import annotations

import ast
import sys
from collections import deque
from itertools import pairwise
from pathlib import Path

ROOT_PACKAGE = "mirrorspark"


def module_names(src: Path) -> dict[str, Path]:
    """``mirrorspark.x.y`` -> its file, for every ``.py`` under ``src`` (the package folder)."""
    names = {}
    for path in sorted(src.rglob("*.py")):
        parts = [ROOT_PACKAGE, *path.relative_to(src).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = path
    return names


def _resolve(module: str, level: int, current: str, is_package: bool) -> str:
    if not level:
        return module
    base = current.split(".") if is_package else current.split(".")[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join([*base, module] if module else base)


def edges(names: dict[str, Path]) -> dict[str, dict[str, int]]:
    """module -> {imported module: first line number}, for imports of modules in ``names``."""
    graph: dict[str, dict[str, int]] = {name: {} for name in names}
    for name, path in names.items():
        tree = ast.parse(path.read_text(), str(path))
        is_package = path.name == "__init__.py"
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(node.module or "", node.level, name, is_package)
                targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in names else base for alias in node.names]
            else:
                continue
            for target in targets:
                while target and target not in names:  # import a.b.c where c is a name: a.b
                    target = target.rpartition(".")[0]
                if target and target != name:
                    graph[name].setdefault(target, node.lineno)
    return graph


def by_package(graph: dict[str, dict[str, int]]) -> tuple[dict[str, dict[str, int]], dict[tuple[str, str], str]]:
    """The graph between ``mirrorspark.<sub>`` packages, and one module-level edge behind each."""
    def package(module: str) -> str:
        return ".".join(module.split(".")[:2])

    folded: dict[str, dict[str, int]] = {package(name): {} for name in graph}
    witness: dict[tuple[str, str], str] = {}
    for name, targets in graph.items():
        for target, line in targets.items():
            here, there = package(name), package(target)
            if here != there and there not in folded[here]:
                folded[here][there] = line
                witness[here, there] = f"{name}:{line} -> {target}"
    return folded, witness


def strongly_connected(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative; only groups of two or more modules."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))
    return sorted(groups)


def shortest_cycle(graph: dict[str, dict[str, int]], group: list[str]) -> list[str]:
    """A shortest cycle through the group's first module, staying inside the group."""
    members, start = set(group), group[0]
    came_from: dict[str, str] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for child in sorted(graph[node]):
            if child not in members:
                continue
            if child == start:
                path = [node]
                while path[-1] != start:
                    path.append(came_from[path[-1]])
                return [*reversed(path), start]
            if child not in came_from:
                came_from[child] = node
                queue.append(child)
    return group


def main(argv: list[str]) -> int:
    packages = "--packages" in argv
    args = [arg for arg in argv[1:] if arg != "--packages"]
    src = Path(args[0]) if args else Path(__file__).resolve().parents[1] / "src" / ROOT_PACKAGE
    graph = edges(module_names(src))
    witness = {(here, there): f"{here}:{line} -> {there}" for here, targets in graph.items()
               for there, line in targets.items()}
    if packages:
        graph, witness = by_package(graph)
    groups = strongly_connected(graph)
    for group in groups:
        print(f"cycle among {len(group)} {'packages' if packages else 'modules'}: {', '.join(group)}")
        cycle = shortest_cycle(graph, group)
        for here, there in pairwise(cycle):
            print(f"    {witness[here, there]}")
    print(f"{len(groups)} import cycle(s)" if groups else "no import cycles")
    return 1 if groups else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
