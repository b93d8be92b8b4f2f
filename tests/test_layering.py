"""The house's floors: a module imports only its own floor and the floors below.

The floors are written once, here. Every import is read with ``ast``: at the top level,
inside functions, under ``TYPE_CHECKING``, and ``importlib.import_module`` / ``__import__``
with a literal name. An import from a lower floor to a higher one fails, and so does a cycle
between two packages (on any floor).

    floor 5  surface   cli/ notebook/ replay/ view/ demo/ testing/ mcp_server/ views.py (and the
                       package face)
    floor 4  host      host/ agent/
    floor 3  engines   skills/ shell/ js/ models/
    floor 2  storage   workspace/ worktree/
    floor 1  ground    errors.py paths.py cancel.py clock.py locks.py layout.py lazy.py events/
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "tavernlab"

#: Package or top-level module of ``tavernlab`` -> its floor.
FLOORS: dict[str, int] = {
    "errors": 1, "paths": 1, "cancel": 1, "clock": 1, "locks": 1, "events": 1, "mcp_client": 1,
    "layout": 1, "lazy": 1,
    "ondisk": 1,
    "workspace": 2, "worktree": 2,
    "skills": 3, "shell": 3, "js": 3, "models": 3,
    "host": 4, "agent": 4,
    "cli": 5, "notebook": 5, "replay": 5, "demo": 5, "testing": 5, "views": 5, "mcp_server": 5,
    "view": 5,
    "__init__": 5,
}


def unit_of(module: str) -> str:
    """``tavernlab.host._run`` -> ``host``; ``tavernlab`` -> ``__init__``."""
    parts = module.split(".")
    assert parts[0] == "tavernlab", module
    return parts[1] if len(parts) > 1 else "__init__"


def module_name(path: Path) -> str:
    rel = path.relative_to(SRC.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_names(source: str, package: str) -> Iterator[tuple[int, str]]:
    """``(line, module)`` of every module the source of a module of ``package`` imports,
    however it does it."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            yield node.lineno, base
            if base == "tavernlab":  # `from tavernlab import x` may import a subpackage
                for alias in node.names:
                    yield node.lineno, f"{base}.{alias.name}"
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            first = node.args[0]
            if name in ("import_module", "__import__") and isinstance(first, ast.Constant) \
                    and isinstance(first.value, str):
                yield node.lineno, first.value


def edges() -> list[tuple[str, int, str, str]]:
    """``(file, line, importer unit, imported unit)`` for every cross-unit import."""
    found = []
    for path in sorted(SRC.rglob("*.py")):
        name_of_module = module_name(path)
        importer = unit_of(name_of_module)
        package = name_of_module if path.name == "__init__.py" else \
            name_of_module.rpartition(".")[0]
        for line, name in imported_names(path.read_text(encoding="utf-8"), package):
            if name != "tavernlab" and not name.startswith("tavernlab."):
                continue
            imported = unit_of(name)
            if imported != importer:
                found.append((str(path.relative_to(SRC)), line, importer, imported))
    return found


def test_every_unit_has_a_floor() -> None:
    units = {unit_of(module_name(p)) for p in SRC.rglob("*.py")}
    assert sorted(units - set(FLOORS)) == []


def test_no_import_runs_up_a_floor() -> None:
    upward = [f"{file}:{line}: {importer} (floor {FLOORS[importer]}) imports {imported} "
              f"(floor {FLOORS[imported]})"
              for file, line, importer, imported in edges()
              if FLOORS.get(imported, 0) > FLOORS.get(importer, 0)]
    assert upward == []


def test_no_cycle_between_packages() -> None:
    graph: dict[str, set[str]] = defaultdict(set)
    for _file, _line, importer, imported in edges():
        graph[importer].add(imported)
    cycles = [cycle for cycle in _strongly_connected(graph) if len(cycle) > 1]
    assert cycles == []


def _strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm over the unit graph."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    result: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                item = stack.pop()
                on_stack.discard(item)
                component.append(item)
                if item == node:
                    break
            result.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return result


@pytest.mark.parametrize("source, expected", [
    ("import tavernlab.host._run\n", ["tavernlab.host._run"]),
    ("def f():\n    from tavernlab.cli import main\n", ["tavernlab.cli"]),
    ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from tavernlab.host import Lab\n",
     ["typing", "tavernlab.host"]),
    ("import importlib\nimportlib.import_module('tavernlab.notebook')\n",
     ["importlib", "tavernlab.notebook"]),
    ("from tavernlab import worktree\n", ["tavernlab", "tavernlab.worktree"]),
])
def test_the_reader_sees_every_kind_of_import(source: str, expected: list[str]) -> None:
    names = [name for _line, name in imported_names(source, "tavernlab.workspace")]
    assert names == expected


def test_relative_imports_resolve_against_the_package() -> None:
    names = [name for _line, name in imported_names("from ..host import Lab\n",
                                                    "tavernlab.workspace")]
    assert names == ["tavernlab.host"]
