"""Text-mutation tracking: what feeds auto-commit (spec/workspace.md sections 6 and 10).

A :class:`MutationTracker` holds upstream's ``{candidate, changed}`` for one round and the set
of paths the round touched (the shell reports them as ``resourceRefs``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tavernlab.paths import WorkspacePath, extension

#: Extensions (compared case-insensitively) that make a file a text file for auto-commit.
TEXT_EXTENSIONS: frozenset[str] = frozenset({"md", "markdown", "txt", "text"})


def is_text_file(path: WorkspacePath | str) -> bool:
    """True when the path's extension is ``md``, ``markdown``, ``txt`` or ``text`` (any case).

    The extension is what follows the last dot of the name, as upstream's Rust
    ``Path::extension`` sees it: a dotfile such as ``.md`` has no extension.
    """
    return extension(str(path)).lower() in TEXT_EXTENSIONS


@dataclass(slots=True)
class MutationTracker:
    """``{candidate, changed}`` for auto-commit (section 6), plus every touched path.

    ``touched`` collects the paths created, changed or removed through the view (rename adds
    both ends); the shell reports them, sorted, as its ``resourceRefs``.
    """

    candidate: str | None = None
    changed: bool = False
    touched: set[str] = field(default_factory=set)

    def wrote(self, path: WorkspacePath) -> None:
        """A successful write, append or copy to ``path``."""
        self.touched.add(path.text)
        if is_text_file(path):
            self.candidate = path.text
            self.changed = True

    def removed(self, path: WorkspacePath) -> None:
        """``path`` (a file or a directory) was removed."""
        self.touched.add(path.text)
        if self.candidate is not None and WorkspacePath(self.candidate).is_under(path):
            self.candidate = None
            self.changed = True

    def renamed(self, src: WorkspacePath, dst: WorkspacePath, *, directory: bool = False
                ) -> None:
        """``src`` was renamed to ``dst`` (a file, or a whole directory when ``directory``).

        A text-file target becomes the candidate; otherwise a candidate under ``src`` moves
        with it and stays only if its new name is still a text file. A directory is never a
        text file, whatever its name.
        """
        self.touched.update((src.text, dst.text))
        if not directory and is_text_file(dst):
            self.candidate = dst.text
            self.changed = True
        elif self.candidate is not None and WorkspacePath(self.candidate).is_under(src):
            moved = dst.text + self.candidate[len(src.text):]
            self.candidate = moved if is_text_file(moved) else None
            self.changed = True

    def clear_candidate(self) -> None:
        """Forget the candidate (a failed, cancelled or timed-out shell call)."""
        self.candidate = None
        self.changed = False

    def reset(self) -> None:
        """Start a new round."""
        self.candidate = None
        self.changed = False
        self.touched = set()
