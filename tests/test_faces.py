"""Each package's face is its API.

Every package of ``tavernlab`` has one door, its ``__init__.py``: the names it lists in
``__all__`` are what other packages may import from it, and every other module of the package
is private (a leading underscore). This test checks, per face, that

* ``__all__`` lists every public name the face hands on from its own modules (eagerly, or
  lazily through ``_HOMES`` and its ``TYPE_CHECKING`` imports) or defines, lists only names the
  face binds, and each of them resolves;
* every module of the package other than the face (and ``__main__``) is private;
* no module outside the package imports one of its private modules (the tests may: they test
  the rooms from inside).
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
ROOT = SRC / "tavernlab"

#: Names a face binds for its own machinery, not part of its API.
MACHINERY = {"annotations", "importlib", "TYPE_CHECKING", "Any"}


def faces() -> list[Path]:
    return sorted(p for p in ROOT.rglob("__init__.py") if "__pycache__" not in p.parts)


def dotted(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def bound_names(tree: ast.Module, package: str) -> tuple[set[str], set[str]]:
    """``(handed, every)``: the public names a face hands on (imported from its own package's
    modules or defined, and not used by the face itself), and every public name it binds."""
    handed: set[str] = set()
    every: set[str] = set()

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.ImportFrom):
                names = {alias.asname or alias.name for alias in node.names}
                every.update(names)
                if node.module and (node.module == package
                                    or node.module.startswith(package + ".")):
                    handed.update(names)
            elif isinstance(node, ast.Import):
                every.update(a.asname for a in node.names if a.asname)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                handed.add(node.name)
                every.add(node.name)
            elif isinstance(node, ast.Assign):
                targets = [t.id for t in node.targets if isinstance(t, ast.Name)]
                every.update(targets)
                if {"_HOMES", "_LAZY"} & set(targets) and isinstance(node.value, ast.Dict):
                    lazy = {k.value for k in node.value.keys if isinstance(k, ast.Constant)}
                    every.update(lazy)
                    handed.update(lazy)
                else:
                    handed.update(targets)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                handed.add(node.target.id)
                every.add(node.target.id)
            elif isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING":
                visit(node.body)

    visit(tree.body)
    # a name the face binds for its own use (it reads it itself) need not be handed on
    used = {node.id for node in ast.walk(tree)
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)}

    def public(names: set[str]) -> set[str]:
        return {n for n in names if not n.startswith("_") and n not in MACHINERY}

    return public(handed - used), public(every)


def declared_all(tree: ast.Module) -> list[str] | None:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return list(ast.literal_eval(node.value))
    return None


@pytest.mark.parametrize("face", faces(), ids=lambda p: dotted(p))
def test_the_face_lists_what_it_hands_on(face: Path) -> None:
    tree = ast.parse(face.read_text(encoding="utf-8"))
    listed = declared_all(tree)
    handed, every = bound_names(tree, dotted(face))
    subpackages = {p.parent.name for p in face.parent.glob("*/__init__.py")}
    if listed is None:
        assert handed - subpackages == set(), f"{dotted(face)} hands on names but has no __all__"
        return
    assert len(set(listed)) == len(listed), "each name once"
    assert handed - subpackages - set(listed) == set(), "handed on but not listed"
    assert set(listed) - subpackages - every == set(), "listed but not bound"
    module = importlib.import_module(dotted(face))
    for name in listed:
        getattr(module, name)


@pytest.mark.parametrize("face", faces(), ids=lambda p: dotted(p))
def test_the_rooms_behind_a_face_are_private(face: Path) -> None:
    if face.parent == ROOT:
        return  # the top level holds units of their own (errors, paths, …)
    public = [p.name for p in face.parent.glob("*.py")
              if p.name not in ("__init__.py", "__main__.py") and not p.name.startswith("_")]
    assert public == []


def private_imports() -> list[tuple[str, int, str]]:
    """``(file, line, module)`` of every import of another package's private module."""
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        here = dotted(path)
        here_pkg = here if path.name == "__init__.py" else here.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            modules = []
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                modules.append(node.module)
                modules += [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                modules += [a.name for a in node.names]
            for module in modules:
                parts = module.split(".")
                for i, part in enumerate(parts):
                    if part.startswith("_") and not part.startswith("__") and i > 1:
                        owner = ".".join(parts[:i])
                        if not (here_pkg == owner or here_pkg.startswith(owner + ".")):
                            found.append((str(path.relative_to(SRC)), node.lineno, module))
                        break
    return found


def test_no_package_reaches_behind_another_face() -> None:
    assert private_imports() == []
