"""Skill collections: one source (a directory, a ZIP, inline files) holding several packages.

See docs/js-and-skills.md. Every folder that holds a ``SKILL.md`` is one package (its
*origin*, the folder's path inside the source; ``""`` is the source's top), except inside
another package: the search does not look inside a package, so ``ink/examples/SKILL.md`` is
an ordinary file of ``ink``. Each package is validated on its own. A package that fails is
reported as an :class:`InvalidPackage` with its origin and message, apart from the valid
packages, and never stops the others (:class:`SourceScan`).

tavernlab choices where upstream detail is unknown:

* When two packages of one source declare the same name, both are reported invalid (with a
  message naming both folders) rather than one of them being picked silently.
* Anything outside every package (a stray file, a symlink, a special file) is not part of a
  package: it is neither read nor reported.
* The author's working files are not part of a package either (:func:`is_working_file`):
  JupyterLab's ``.ipynb_checkpoints/``, Python's ``__pycache__/``, pytest's
  ``.pytest_cache/``, macOS's ``.DS_Store`` anywhere in the package, and the package's own
  ``tests/`` folder at its top. Directory and archive sources drop them before anything else
  is checked, so validating, installing (also for development), packing, linting and the
  installed hash all see the same files.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from tavernlab.skills._errors import InvalidSkillPackage
from tavernlab.skills._package import SKILL_MD, SkillPackage, validate_package


@dataclass(frozen=True, slots=True)
class InvalidPackage:
    """A package of a source that failed validation: its folder in the source, and why."""

    origin: str
    code: str
    message: str

    @property
    def location(self) -> str:
        """The origin as printed: ``.`` for the source's top, else the folder path."""
        return self.origin or "."

    def to_json(self) -> dict[str, Any]:
        """``{origin, code, message}``."""
        return {"origin": self.origin, "code": self.code, "message": self.message}


@dataclass(frozen=True, slots=True)
class SourceScan:
    """Every package found in one source: the valid ones and the invalid ones, each sorted by
    origin. ``tavernlab skill validate`` prints it; installing installs ``packages``."""

    packages: tuple[SkillPackage, ...]
    invalid: tuple[InvalidPackage, ...]

    @property
    def ok(self) -> bool:
        """Whether every package of the source is valid."""
        return not self.invalid

    def require_valid(self) -> tuple[SkillPackage, ...]:
        """The packages, or the first invalid package's error (prefixed with its origin when
        the source holds more than one package): for callers that need every package."""
        if self.invalid:
            first = self.invalid[0]
            several = len(self.invalid) + len(self.packages) > 1
            prefix = f"{first.location}: " if several else ""
            raise InvalidSkillPackage(prefix + first.message)
        return self.packages


#: File and folder names that are never part of a skill package, wherever they appear in it.
WORKING_FILE_NAMES = frozenset({".ipynb_checkpoints", "__pycache__", ".pytest_cache",
                                ".DS_Store"})
#: The folder at a package's top that holds the author's tests (run by ``skill test``).
TESTS_FOLDER = "tests"


def is_working_file(path: str) -> bool:
    """Whether ``path`` (relative to its package's folder, ``/``-separated) is one of the
    author's working files that no package contains: a segment named in
    :data:`WORKING_FILE_NAMES`, or anything below the package's own ``tests/`` folder."""
    segments = path.replace("\\", "/").split("/")
    if len(segments) > 1 and segments[0] == TESTS_FOLDER:
        return True
    return any(segment in WORKING_FILE_NAMES for segment in segments)


def find_skill_roots(paths: Iterable[str]) -> list[str]:
    """The outermost folders (``""`` = the top) that contain a ``SKILL.md`` entry, sorted."""
    candidates = set()
    for path in paths:
        head, _, name = path.rpartition("/")
        if name == SKILL_MD:
            candidates.add(head)
    if "" in candidates:
        return [""]
    roots: list[str] = []
    for candidate in sorted(candidates, key=lambda c: (c.count("/"), c)):
        if not any(candidate.startswith(root + "/") for root in roots):
            roots.append(candidate)
    return sorted(roots)


def below(root: str, path: str) -> str | None:
    """``path`` relative to ``root``, or ``None`` when it is not below it."""
    if root == "":
        return path
    return path[len(root) + 1:] if path.startswith(root + "/") else None


def no_skill_found() -> InvalidSkillPackage:
    """The error of a source with no ``SKILL.md`` anywhere (the whole call fails)."""
    return InvalidSkillPackage("Skill package must contain SKILL.md")


def scan_roots(roots: Iterable[str], load: Callable[[str], SkillPackage]) -> SourceScan:
    """Validate each root with ``load(root)`` on its own: an :class:`InvalidSkillPackage`
    becomes an :class:`InvalidPackage`; then packages sharing a name are reported too."""
    packages: list[SkillPackage] = []
    invalid: list[InvalidPackage] = []
    for root in roots:
        try:
            packages.append(load(root))
        except InvalidSkillPackage as exc:
            invalid.append(InvalidPackage(root, exc.code, exc.message))
    by_name: dict[str, list[SkillPackage]] = {}
    for package in packages:
        by_name.setdefault(package.name, []).append(package)
    valid = []
    for package in packages:
        same = by_name[package.name]
        if len(same) == 1:
            valid.append(package)
            continue
        folders = " and ".join(f"'{p.origin or '.'}'" for p in same)
        invalid.append(InvalidPackage(package.origin, InvalidSkillPackage.code,
                                      f"Skill source contains more than one skill named "
                                      f"'{package.name}' ({folders})"))
    invalid.sort(key=lambda item: item.origin)
    return SourceScan(tuple(valid), tuple(invalid))


def scan_files(files: Mapping[str, bytes]) -> SourceScan:
    """Split a tree of normalized paths into its packages and validate each on its own."""
    roots = find_skill_roots(files)
    if not roots:
        raise no_skill_found()

    def load(root: str) -> SkillPackage:
        own = {rel: data for path, data in files.items()
               if (rel := below(root, path)) is not None}
        return validate_package(own, origin=root)

    return scan_roots(roots, load)
