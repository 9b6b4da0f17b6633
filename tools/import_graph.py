"""The import graph of src/ddp_doctor: rooms (packages), floors, circles and arrows that run back up.

    python tools/import_graph.py [--root SRC] [--edges] [--check]

Every `import` / `from ... import` of a ddp_doctor module counts, at module level or inside a
function (a deferred import is still a dependency), except under `if TYPE_CHECKING:` (types only).
A room is a package under ddp_doctor (`core`, `rundir`, ...); each top-level module (`cli.py`) is
its own room. FLOORS is the intended order, lowest first: a room may import rooms on its own floor
or below. An arrow to a higher floor is an upward arrow; a circle is a strongly connected set of
modules (module level) or rooms (room level). `--check` exits 1 unless there is no circle (of
modules or of rooms), no upward arrow, and every room has a floor (tests/test_layers.py runs it).
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections import defaultdict
from pathlib import Path

# Lowest first. Rooms on one floor may import each other (no circles still holds per module).
FLOORS: list[tuple[str, ...]] = [
    ("core",),
    ("rundir",),
    ("probe", "presets"),
    ("analysis",),
    ("report", "compare", "equiv", "lint", "plan", "integrations", "cli_common"),
    # the reference trainer's launcher starts it under `ddp-doctor run`'s injection (launch.launcher)
    # watch: `run --watch` (launch/command.py) starts it; it reads the run dir, diagnoses, renders
    ("launch", "experiments", "trainer", "watch"),
    ("demo", "gendocs"),
    ("cli", "ddp_doctor"),  # ddp_doctor/__init__.py: the public attach() and load()
]


def _module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST, modules: set[str], package: str) -> set[str]:
    found: set[str] = set()

    def resolve(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            for alias in node.names:
                if (target := resolve(alias.name)) is not None:
                    found.add(target)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(
                    package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else [])
                )
            for alias in node.names:
                target = (
                    resolve(f"{base}.{alias.name}") if f"{base}.{alias.name}" in modules else resolve(base)
                )
                if target is not None:
                    found.add(target)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def graph(src: Path) -> dict[str, set[str]]:
    root = src
    files = sorted(p for p in (root / "ddp_doctor").rglob("*.py"))
    modules = {_module_name(root, p) for p in files}
    edges: dict[str, set[str]] = {}
    for path in files:
        name = _module_name(root, path)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        edges[name] = {t for t in _imports(tree, modules, package) if t != name and t != "ddp_doctor"}
    return edges


def room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, it = work[-1]
            for nxt in it:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(edges.get(nxt, ())))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = []
                    while True:
                        top = stack.pop()
                        on_stack.discard(top)
                        comp.append(top)
                        if top == node:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1] / "src")
    parser.add_argument("--edges", action="store_true", help="print every room-to-room arrow")
    parser.add_argument("--check", action="store_true", help="exit 1 unless 0 circles and 0 upward arrows")
    args = parser.parse_args()
    edges = graph(args.root)
    floor = {r: i for i, rooms in enumerate(FLOORS) for r in rooms}
    rooms: dict[str, set[str]] = defaultdict(set)
    arrows: dict[tuple[str, str], list[str]] = defaultdict(list)
    for a, targets in edges.items():
        rooms[room(a)]
        for b in targets:
            if room(a) != room(b):
                rooms[room(a)].add(room(b))
                arrows[(room(a), room(b))].append(f"{a} -> {b}")
    unplaced = sorted(r for r in rooms if r not in floor)
    upward = sorted(
        (k, v) for k, v in arrows.items() if k[0] in floor and k[1] in floor and floor[k[1]] > floor[k[0]]
    )
    module_circles = circles(edges)
    room_circles = circles(dict(rooms))
    print(f"modules {len(edges)}, rooms {len(rooms)}, floors {len(FLOORS)}, room arrows {len(arrows)}")
    print(f"module circles {len(module_circles)}: {module_circles}")
    print(f"room circles {len(room_circles)}: {room_circles}")
    print(f"upward room arrows {len(upward)} ({sum(len(v) for _, v in upward)} module imports):")
    for (a, b), imports in upward:
        print(f"    {a} -> {b}: {', '.join(imports)}")
    if unplaced:
        print(f"rooms without a floor: {unplaced}")
    if args.edges:
        for (a, b), imports in sorted(arrows.items()):
            print(f"{a} -> {b} ({len(imports)})")
    bad = module_circles or room_circles or upward or unplaced
    return 1 if args.check and bad else 0


if __name__ == "__main__":
    sys.exit(main())
