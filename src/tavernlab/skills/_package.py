"""One skill package in memory: ``SKILL.md``, the sidecar, file rules, limits and the hash.

See docs/js-and-skills.md. A package is a mapping of normalized relative paths to
bytes; :func:`validate_package` checks it and returns a :class:`SkillPackage` with its file
list, installed hash and warnings. The front matter of ``SKILL.md`` is read by
:mod:`tavernlab.skills._frontmatter`, the sidecar by :mod:`tavernlab.skills._sidecar`; reading
sources (directories, ZIPs) lives in
:mod:`tavernlab.skills._source`; storing packages in :mod:`tavernlab.skills._repository`.

tavernlab choices where upstream detail is unknown:

* ``SKILL.md`` that is not UTF-8 fails with ``SKILL.md must be UTF-8 text``.
* Path-rule messages name the offending path: ``Skill file path cannot contain .. (`../x`)``;
  control characters in it are written as escapes (:func:`printable`), and a path holding one
  (U+0000-U+001F, U+007F-U+009F) is refused like a NUL.
* Warnings follow upstream: only a package with files under ``scripts/`` or with binary files
  gets one (the wording is tavernlab's); a missing optional field gives none.
* Media types come from the fixed table :data:`MEDIA_TYPES` (``application/octet-stream``
  otherwise), so they do not depend on the host's ``mime.types``.
"""

from __future__ import annotations

import hashlib
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import ConfigDict

from tavernlab.ondisk import Model
from tavernlab.skills._errors import InvalidSkillPackage
from tavernlab.skills._frontmatter import SkillFrontmatter, parse_frontmatter
from tavernlab.skills._sidecar import SIDECAR_PATH, Sidecar, parse_sidecar

MAX_FILES = 1000
MAX_FILE_BYTES = 16 * 1024 * 1024
MAX_TOTAL_BYTES = 256 * 1024 * 1024
MAX_SKILL_MD_BYTES = 1024 * 1024
MAX_COMPRESSION_RATIO = 100
MAX_NAME_LENGTH = 128
SKILL_MD = "SKILL.md"
FORBIDDEN_SEGMENTS = frozenset({".git", ".ssh", ".env"})
#: The warning of a package with files under ``scripts/`` (wording: tavernlab's choice).
SCRIPTS_WARNING = ("Skill contains scripts; review them before use: an agent can run them "
                   "with the js command (and skill.run_script in compatibility mode).")
#: The warning of a package with binary files (wording: tavernlab's choice).
BINARY_WARNING = ("Skill contains binary files; they are served raw, without macro "
                  "projection, and cannot be read as text.")

#: Media type by lower-cased extension.
MEDIA_TYPES: dict[str, str] = {
    "md": "text/markdown", "markdown": "text/markdown", "txt": "text/plain",
    "text": "text/plain", "js": "text/javascript", "mjs": "text/javascript",
    "cjs": "text/javascript", "ts": "text/x-typescript", "json": "application/json",
    "yaml": "application/yaml", "yml": "application/yaml", "toml": "application/toml",
    "csv": "text/csv", "tsv": "text/tab-separated-values", "html": "text/html",
    "htm": "text/html", "css": "text/css", "xml": "application/xml", "py": "text/x-python",
    "sh": "application/x-sh", "svg": "image/svg+xml", "png": "image/png", "jpg": "image/jpeg",
    "jpeg": "image/jpeg", "gif": "image/gif", "webp": "image/webp", "ico": "image/x-icon",
    "pdf": "application/pdf", "zip": "application/zip", "wasm": "application/wasm",
    "ttf": "font/ttf", "otf": "font/otf", "woff": "font/woff", "woff2": "font/woff2",
    "mp3": "audio/mpeg", "wav": "audio/wav", "ogg": "audio/ogg", "mp4": "video/mp4",
}


# --- names and paths ---------------------------------------------------------------------------


def uses_name_characters(value: str) -> bool:
    """Only ``[a-z0-9_-]``: the alphabet of skill names and of profile scope ids."""
    return all(c.isascii() and (c.islower() or c.isdigit() or c in "-_") for c in value)


def validate_skill_name(raw: str) -> str:
    """Trim and check a skill name: 1-128 characters of ``[a-z0-9_-]``, not ``.``/``..``."""
    value = raw.strip()
    if not value:
        raise InvalidSkillPackage("Skill name cannot be empty")
    if len(value) > MAX_NAME_LENGTH:
        raise InvalidSkillPackage(f"Skill name must be <= {MAX_NAME_LENGTH} characters")
    if value in (".", ".."):
        raise InvalidSkillPackage("Skill name cannot be '.' or '..'")
    if not uses_name_characters(value):
        raise InvalidSkillPackage(
            "Skill name must use lowercase ASCII letters, digits, '-' or '_'")
    return value


def has_control_character(text: str) -> bool:
    """Whether ``text`` holds a C0 or C1 control character (NUL, newline, U+007F...)."""
    return any(unicodedata.category(c) == "Cc" for c in text)


def printable(text: str) -> str:
    """``text`` with each control character written as its escape (``\\x00``, ``\\n``), so a
    hostile file name prints on one line and shows what it holds."""
    if not has_control_character(text):
        return text
    return "".join(c.encode("unicode_escape").decode("ascii")
                   if unicodedata.category(c) == "Cc" else c for c in text)


def normalize_skill_path(raw: str) -> str:
    """A package-relative path with upstream's rules: relative, no NUL, no drive prefix, no
    ``..``, no ``.git``/``.ssh``/``.env`` segment; ``\\`` becomes ``/``, empty and ``.``
    segments are dropped. tavernlab also refuses other control characters."""
    value = raw.strip()

    def bad(rule: str) -> InvalidSkillPackage:
        return InvalidSkillPackage(f"{rule} (`{printable(raw)}`)")

    if not value:
        raise InvalidSkillPackage("Skill file path cannot be empty")
    if "\0" in value:
        raise bad("Skill file path cannot contain NUL")
    if has_control_character(value):
        raise bad("Skill file path cannot contain control characters")
    if value[0] in "/\\":
        raise bad("Skill file path must be relative")
    if len(value) >= 2 and value[1] == ":" and value[0].isascii() and value[0].isalpha():
        raise bad("Skill file path cannot use a Windows drive prefix")
    parts: list[str] = []
    for segment in value.replace("\\", "/").split("/"):
        if segment in ("", "."):
            continue
        if segment == "..":
            raise bad("Skill file path cannot contain ..")
        if segment in FORBIDDEN_SEGMENTS:
            raise bad(f"Skill file path contains forbidden segment: {segment}")
        parts.append(segment)
    if not parts:
        raise bad("Skill file path cannot be empty")
    return "/".join(parts)


def media_type(path: str) -> str:
    """The media type of a package file, from its extension (:data:`MEDIA_TYPES`)."""
    name = path.rsplit("/", 1)[-1]
    dot = name.rfind(".")
    if dot <= 0:
        return "application/octet-stream"
    return MEDIA_TYPES.get(name[dot + 1:].lower(), "application/octet-stream")


def installed_hash(files: Mapping[str, bytes]) -> str:
    """SHA-256 over all files sorted by path: path bytes, ``0x00``, content, ``0x00``."""
    digest = hashlib.sha256()
    for path in sorted(files):
        digest.update(path.encode("utf-8"))
        digest.update(b"\0")
        digest.update(files[path])
        digest.update(b"\0")
    return digest.hexdigest()


# --- files and the package -----------------------------------------------------------------------


class SkillFileRef(Model):
    """One file of a package: path, ``text``/``binary``, media type, size and SHA-256."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    path: str
    kind: Literal["text", "binary"]
    media_type: str
    size_bytes: int
    sha256: str


def describe_file(path: str, data: bytes) -> SkillFileRef:
    """Classify a file (``text`` when it is valid UTF-8) and hash it."""
    try:
        data.decode("utf-8")
        kind: Literal["text", "binary"] = "text"
    except UnicodeDecodeError:
        kind = "binary"
    return SkillFileRef(path=path, kind=kind, media_type=media_type(path),
                        size_bytes=len(data), sha256=hashlib.sha256(data).hexdigest())


def check_file_limits(sizes: Iterable[tuple[str, int]]) -> None:
    """At least 1 and at most 1000 files, each at most 16 MiB, together at most 256 MiB."""
    count = 0
    total = 0
    for path, size in sizes:
        count += 1
        if count > MAX_FILES:
            raise InvalidSkillPackage(f"Skill package must contain <= {MAX_FILES} files")
        if size > MAX_FILE_BYTES:
            raise InvalidSkillPackage(f"Skill file '{path}' exceeds {MAX_FILE_BYTES} bytes")
        total += size
        if total > MAX_TOTAL_BYTES:
            raise InvalidSkillPackage(f"Skill package exceeds {MAX_TOTAL_BYTES} bytes")
    if count == 0:
        raise InvalidSkillPackage("Skill package cannot be empty")


@dataclass(frozen=True, slots=True)
class SkillPackage:
    """A validated package: metadata, file list, installed hash, warnings and the bytes.

    ``origin`` says where the package was found inside its source (``""`` for the source
    root, else the folder path), which matters for sources holding several skills.
    """

    frontmatter: SkillFrontmatter
    sidecar: Sidecar | None
    files: tuple[SkillFileRef, ...]
    installed_hash: str
    warnings: tuple[str, ...]
    contents: Mapping[str, bytes] = field(repr=False)
    origin: str = ""

    @property
    def name(self) -> str:
        """The validated skill name."""
        return self.frontmatter.name

    @property
    def description(self) -> str:
        """The front matter description."""
        return self.frontmatter.description

    @property
    def total_bytes(self) -> int:
        """Sum of all file sizes."""
        return sum(f.size_bytes for f in self.files)

    @property
    def has_scripts(self) -> bool:
        """Whether the package has files under ``scripts/``."""
        return any(f.path.startswith("scripts/") for f in self.files)

    @property
    def has_binary(self) -> bool:
        """Whether any file is not valid UTF-8."""
        return any(f.kind == "binary" for f in self.files)

    @property
    def tags(self) -> list[str]:
        """Front matter tags united with the sidecar's (trimmed, non-empty), sorted."""
        tags = set(self.frontmatter.tags)
        if self.sidecar is not None:
            tags.update(t.strip() for t in self.sidecar.tags if t.strip())
        return sorted(tags)

    def summary(self) -> dict[str, Any]:
        """A JSON-ready description (what ``tavernlab skill validate --json`` prints)."""
        return {
            "name": self.name, "description": self.description, "origin": self.origin,
            "installedHash": self.installed_hash, "fileCount": len(self.files),
            "totalBytes": self.total_bytes, "hasScripts": self.has_scripts,
            "hasBinary": self.has_binary, "tags": self.tags,
            "files": [f.model_dump(by_alias=True) for f in self.files],
            "warnings": list(self.warnings),
        }


class FileTree:
    """Normalized package paths -> bytes, refusing a path twice or as both file and folder.

    Every source (directory, ZIP, inline files) is collected into one of these, so the same
    file rules apply however the package arrived.
    """

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self._folders: set[str] = set()

    def add(self, path: str, data: bytes) -> None:
        """Add a file at an already normalized path."""
        if path in self.files:
            raise InvalidSkillPackage(f"Skill package contains '{path}' more than once")
        if path in self._folders:
            raise InvalidSkillPackage(f"Skill package path '{path}' is both a file and a folder")
        parts = path.split("/")
        for depth in range(1, len(parts)):
            folder = "/".join(parts[:depth])
            if folder in self.files:
                raise InvalidSkillPackage(
                    f"Skill package path '{folder}' is both a file and a folder")
            self._folders.add(folder)
        self.files[path] = data


def validate_package(files: Mapping[str, bytes], *, origin: str = "") -> SkillPackage:
    """Check one package (paths already normalized) and describe it.

    Order: ``SKILL.md`` (present, <= 1 MiB, UTF-8, front matter), name, sidecar, file limits.
    """
    skill_md = files.get(SKILL_MD)
    if skill_md is None:
        raise InvalidSkillPackage("Skill package must contain SKILL.md")
    if len(skill_md) > MAX_SKILL_MD_BYTES:
        raise InvalidSkillPackage(f"SKILL.md must be <= {MAX_SKILL_MD_BYTES} bytes")
    try:
        text = skill_md.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidSkillPackage("SKILL.md must be UTF-8 text") from None
    frontmatter, warnings = parse_frontmatter(text)
    frontmatter = SkillFrontmatter(
        name=validate_skill_name(frontmatter.name), description=frontmatter.description,
        license=frontmatter.license, author=frontmatter.author, version=frontmatter.version,
        tags=frontmatter.tags)
    sidecar = parse_sidecar(files[SIDECAR_PATH]) if SIDECAR_PATH in files else None
    check_file_limits((path, len(data)) for path, data in files.items())
    refs = tuple(describe_file(path, files[path]) for path in sorted(files))
    if any(ref.path.startswith("scripts/") for ref in refs):
        warnings.append(SCRIPTS_WARNING)
    if any(ref.kind == "binary" for ref in refs):
        warnings.append(BINARY_WARNING)
    return SkillPackage(frontmatter, sidecar, refs, installed_hash(files), tuple(warnings),
                        dict(files), origin)
