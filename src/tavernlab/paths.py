"""Workspace path rules: the one place where a string becomes a workspace path.

Upstream ``WorkspacePath::parse`` (docs/workspace.md): checks run in a fixed order
and each failure has its own message. The logical root is represented as ``None`` ("no
path") and is accepted only by queries (metadata, directory listing).
"""

from __future__ import annotations

from dataclasses import dataclass

from tavernlab.errors import InvalidWorkspacePath

__all__ = ["MAX_PATH_BYTES", "MAX_PATH_SEGMENTS", "InvalidWorkspacePath", "WorkspacePath"]

#: The longest path text accepted, in UTF-8 bytes (Linux's ``PATH_MAX``). Upstream gives no
#: limit; tavernlab bounds it so that no path costs more than a bounded walk.
MAX_PATH_BYTES = 4096
#: The most segments a normalized path may have (tavernlab's bound, as above).
MAX_PATH_SEGMENTS = 256


@dataclass(frozen=True, order=True, slots=True)
class WorkspacePath:
    """A normalized, relative, non-empty workspace path such as ``output/main.md``."""

    text: str

    @classmethod
    def parse(cls, text: str) -> WorkspacePath:
        """Parse ``text`` with upstream's checks, in upstream's order.

        Tavernlab adds two bounds (upstream gives none): right after the empty check, a text
        longer than :data:`MAX_PATH_BYTES` UTF-8 bytes -> ``Workspace path exceeds 4096
        bytes`` (before any other work, so a huge path costs nothing), and after the last
        check, a path of more than :data:`MAX_PATH_SEGMENTS` segments -> ``Workspace path
        exceeds 256 segments``.

        1. empty -> ``Workspace path cannot be empty``
        2. NUL -> ``Workspace path cannot contain NUL``; then (tavernlab's addition: upstream
           strings are always valid Unicode) a lone surrogate ->
           ``Workspace path must be valid Unicode text``
        3. leading ``/`` or ``\\`` -> ``Workspace path must be relative``
        4. ASCII letter + ``:`` -> ``Workspace path cannot use a Windows drive prefix``
        5. a ``..`` segment (after ``\\`` -> ``/``) -> ``Workspace path cannot contain ..``
        6. nothing left after dropping empty and ``.`` segments ->
           ``Workspace path cannot be empty``
        """
        if not isinstance(text, str):
            raise InvalidWorkspacePath("Workspace path must be a string")
        if text == "":
            raise InvalidWorkspacePath("Workspace path cannot be empty")
        if len(text) > MAX_PATH_BYTES or (
                not text.isascii() and len(text.encode("utf-8", "surrogatepass")) > MAX_PATH_BYTES):
            raise InvalidWorkspacePath(f"Workspace path exceeds {MAX_PATH_BYTES} bytes")
        if "\0" in text:
            raise InvalidWorkspacePath("Workspace path cannot contain NUL")
        if not text.isascii():
            try:
                text.encode("utf-8")
            except UnicodeEncodeError:
                raise InvalidWorkspacePath("Workspace path must be valid Unicode text") from None
        if text[0] in "/\\":
            raise InvalidWorkspacePath("Workspace path must be relative")
        if len(text) >= 2 and text[0].isascii() and text[0].isalpha() and text[1] == ":":
            raise InvalidWorkspacePath("Workspace path cannot use a Windows drive prefix")
        segments = text.replace("\\", "/").split("/")
        if ".." in segments:
            raise InvalidWorkspacePath("Workspace path cannot contain ..")
        kept = [s for s in segments if s not in ("", ".")]
        if not kept:
            raise InvalidWorkspacePath("Workspace path cannot be empty")
        if len(kept) > MAX_PATH_SEGMENTS:
            raise InvalidWorkspacePath(f"Workspace path exceeds {MAX_PATH_SEGMENTS} segments")
        return cls("/".join(kept))

    @classmethod
    def parse_optional(cls, text: str | None) -> WorkspacePath | None:
        """Parse a query path where absent, ``""``, ``"."`` and ``"./"`` mean the logical root."""
        if text is None or text in ("", ".", "./"):
            return None
        return cls.parse(text)

    @property
    def parts(self) -> tuple[str, ...]:
        """The path's segments."""
        return tuple(self.text.split("/"))

    @property
    def root(self) -> str:
        """The first segment: the workspace root the path lives in."""
        return self.text.split("/", 1)[0]

    @property
    def name(self) -> str:
        """The last segment."""
        return self.text.rsplit("/", 1)[-1]

    @property
    def parent(self) -> WorkspacePath | None:
        """The parent path, or ``None`` for a top-level entry (its parent is the logical root)."""
        head, sep, _ = self.text.rpartition("/")
        return WorkspacePath(head) if sep else None

    def join(self, name: str) -> WorkspacePath:
        """A child path; ``name`` is one or more already valid segments."""
        return WorkspacePath(f"{self.text}/{name}")

    def is_under(self, other: WorkspacePath) -> bool:
        """True when this path equals ``other`` or lies below it (segment-wise, not by prefix)."""
        return self.text == other.text or self.text.startswith(other.text + "/")

    def is_strictly_under(self, other: WorkspacePath) -> bool:
        """True when this path lies below ``other`` and is not ``other`` itself."""
        return self.text.startswith(other.text + "/")

    def relative_to(self, other: WorkspacePath) -> str:
        """The part of this path below ``other`` (``""`` when equal)."""
        if self.text == other.text:
            return ""
        if not self.is_strictly_under(other):
            raise ValueError(f"{self.text} is not under {other.text}")
        return self.text[len(other.text) + 1 :]

    def __str__(self) -> str:
        return self.text


def display(path: WorkspacePath | None) -> str:
    """How a path (or the logical root, shown as ``""``) appears in messages."""
    return "" if path is None else path.text


def extension(name: str) -> str:
    """What follows the last dot of a file name, as written (``MD`` for ``a.MD``), or ``""``;
    a dotfile such as ``.md`` has no extension (Rust's ``Path::extension``, as upstream sees
    it)."""
    name = name.rsplit("/", 1)[-1]
    dot = name.rfind(".")
    return name[dot + 1:] if dot > 0 else ""
