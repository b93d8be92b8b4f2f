"""Shared fixtures for the skill-package tests: real folders and a real repository."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

from tavernlab.skills import SkillRepository

SkillMaker = Callable[..., Path]


def write_tree(root: Path, files: Mapping[str, str | bytes]) -> Path:
    """Write ``files`` (relative path -> content) below ``root``."""
    for rel, content in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, str):
            target.write_bytes(content.encode("utf-8"))
        else:
            target.write_bytes(content)
    return root


@pytest.fixture
def make_skill(tmp_path: Path) -> SkillMaker:
    """``make_skill(name, description=..., files={...}, folder=...)`` writes a skill folder
    with a minimal SKILL.md plus ``files`` and returns its path."""

    def make(name: str = "demo", *, description: str = "Demo.",
             files: Mapping[str, str | bytes] | None = None, folder: str | None = None,
             skill_md: str | None = None) -> Path:
        root = tmp_path / "sources" / (folder or name)
        text = skill_md if skill_md is not None else (
            f"---\nname: {name}\ndescription: {description}\n---\n# {name}\n")
        return write_tree(root, {"SKILL.md": text, **(files or {})})

    return make


@pytest.fixture
def repo(tmp_path: Path) -> SkillRepository:
    """A repository in a fresh lab directory."""
    return SkillRepository(tmp_path / "lab")


def _snapshot(root: Path) -> dict[str, bytes | None]:
    """Every file and folder below ``root`` (folders map to ``None``), to prove nothing
    changed; the lock file is not content."""
    if not root.exists():
        return {}
    return {str(p.relative_to(root)): (p.read_bytes() if p.is_file() else None)
            for p in sorted(root.rglob("*")) if p.name != ".lock"}


@pytest.fixture
def snapshot() -> Callable[[Path], dict[str, bytes | None]]:
    """``snapshot(root)``: the files and folders below ``root``."""
    return _snapshot


@pytest.fixture
def write_files() -> Callable[[Path, Mapping[str, str | bytes]], Path]:
    """``write_files(root, {path: content})``."""
    return write_tree


README = Path(__file__).resolve().parents[2] / "README.md"
#: The "Skill packages" section: from its heading to the next top-level heading outside a
#: fenced block (the example's SKILL.md has headings of its own).
_SECTION = re.compile(r"^## Skill packages\n(.*?)(?=^## (?!Command line|Legacy tool call))",
                      re.S | re.M)
_FILE_BLOCK = re.compile(r"^```\w+ (greet/\S+)\n(.*?)^```$", re.S | re.M)


@pytest.fixture
def readme_greet(tmp_path: Path) -> Path:
    """The README's "Skill packages" example, written from each fenced block whose info
    string names a file (```` ```js greet/x.js ````) below ``tmp_path/readme``; returns its
    ``greet`` folder."""
    root = tmp_path / "readme"
    match = _SECTION.search(README.read_text(encoding="utf-8"))
    assert match is not None, "README has no Skill packages section"
    blocks = _FILE_BLOCK.findall(match.group(1))
    assert sorted(name for name, _ in blocks) == [
        "greet/SKILL.md", "greet/agents/tauritavern.json", "greet/references/style.md",
        "greet/scripts/greet-legacy.js", "greet/scripts/greet.js", "greet/scripts/lib/card.js"]
    write_tree(root, dict(blocks))
    return root / "greet"
