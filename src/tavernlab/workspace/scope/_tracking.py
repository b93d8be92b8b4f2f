"""Text-mutation tracking: what feeds auto-commit (docs/workspace.md).

A :class:`MutationTracker` holds upstream's ``{candidate, changed}`` for one round, the set
of paths the round touched (the shell reports them as ``resourceRefs``), and who last set or
moved the candidate, which becomes the auto-commit's ``chat_commit_requested.callId``.

Attribution (tavernlab's mechanism; upstream only says the ``callId`` is the call that last
set or moved the candidate and is never null): the host marks the tool call running now with
:meth:`MutationTracker.acting`, and every change that sets or moves the candidate records that
id in ``candidate_call_id``. Work that is not a tool call gets its own id the same way: a
``run.js(...)`` job acts as ``job_<32 hex>`` (minted from the lab's ids). A change made
through ``run.internals.scope`` outside any call or job (the notebook acting as the host itself) is
attributed to :data:`HOST_ACTOR`, ``host``. Attribution assumes one call or job at a time,
which is how a run executes them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tavernlab.paths import WorkspacePath, extension

#: Extensions (compared case-insensitively) that make a file a text file for auto-commit.
TEXT_EXTENSIONS: frozenset[str] = frozenset({"md", "markdown", "txt", "text"})

#: Who changes files outside any tool call or ``run.js`` job (the notebook, through
#: ``run.internals.scope``): the ``callId`` of an auto-commit of such a change.
HOST_ACTOR = "host"


def is_text_file(path: WorkspacePath | str) -> bool:
    """True when the path's extension is ``md``, ``markdown``, ``txt`` or ``text`` (any case).

    The extension is what follows the last dot of the name, as upstream's Rust
    ``Path::extension`` sees it: a dotfile such as ``.md`` has no extension.
    """
    return extension(str(path)).lower() in TEXT_EXTENSIONS


@dataclass(slots=True)
class MutationTracker:
    """``{candidate, changed}`` for auto-commit (docs/workspace.md), every touched path, and who set
    the candidate.

    ``touched`` collects the paths created, changed or removed through the view (rename adds
    both ends). ``call_id`` is the tool call (or job) acting now, set by the host through
    :meth:`acting`; ``candidate_call_id`` is the ``call_id`` of the change that last set or
    moved ``candidate`` (meaningful while ``candidate`` is set).
    """

    candidate: str | None = None
    changed: bool = False
    touched: set[str] = field(default_factory=set)
    call_id: str = HOST_ACTOR
    candidate_call_id: str = HOST_ACTOR

    def acting(self, call_id: str) -> _Acting:
        """Attribute the changes made inside the block to ``call_id`` (the host wraps each
        tool call and ``run.js`` job in it)."""
        return _Acting(self, call_id)

    def _set_candidate(self, path: str | None) -> None:
        self.candidate = path
        self.changed = True
        self.candidate_call_id = self.call_id

    def wrote(self, path: WorkspacePath) -> None:
        """A successful write, append or copy to ``path``."""
        self.touched.add(path.text)
        if is_text_file(path):
            self._set_candidate(path.text)

    def made_dirs(self, path: WorkspacePath, made: list[str]) -> None:
        """``mkdir``/``mkdir -p`` of ``path`` made the directories ``made`` (the missing
        parents with it); a directory never becomes the candidate."""
        self.touched.add(path.text)
        self.touched.update(made)

    def removed(self, path: WorkspacePath) -> None:
        """``path`` (a file or a directory) was removed."""
        self.touched.add(path.text)
        if self.candidate is not None and WorkspacePath(self.candidate).is_under(path):
            self._set_candidate(None)

    def renamed(self, src: WorkspacePath, dst: WorkspacePath, *, directory: bool = False
                ) -> None:
        """``src`` was renamed to ``dst`` (a file, or a whole directory when ``directory``).

        A text-file target becomes the candidate; otherwise a candidate under ``src`` moves
        with it and stays only if its new name is still a text file. A directory is never a
        text file, whatever its name.
        """
        self.touched.update((src.text, dst.text))
        if not directory and is_text_file(dst):
            self._set_candidate(dst.text)
        elif self.candidate is not None and WorkspacePath(self.candidate).is_under(src):
            moved = dst.text + self.candidate[len(src.text):]
            self._set_candidate(moved if is_text_file(moved) else None)

    def take_candidate(self, call: MutationTracker) -> None:
        """Adopt the candidate change of a call that worked on a tracker of its own (the
        shell), attributed to the call acting now."""
        self._set_candidate(call.candidate)

    def clear_candidate(self) -> None:
        """Forget the candidate (a failed, cancelled or timed-out shell call)."""
        self.candidate = None
        self.changed = False

    def reset(self) -> None:
        """Start a new round (``call_id`` is the host's and stays)."""
        self.candidate = None
        self.changed = False
        self.touched = set()


class _Acting:
    """The block of :meth:`MutationTracker.acting` (a plain context manager: one per tool
    call, where a generator's frame costs more than what it does): ``call_id`` acts inside
    it, and whoever acted before acts again after it, whatever the block does."""

    __slots__ = ("_call_id", "_previous", "_tracker")

    def __init__(self, tracker: MutationTracker, call_id: str) -> None:
        self._tracker, self._call_id = tracker, call_id
        self._previous = HOST_ACTOR

    def __enter__(self) -> None:
        tracker = self._tracker
        self._previous, tracker.call_id = tracker.call_id, self._call_id

    def __exit__(self, *exc: object) -> None:
        self._tracker.call_id = self._previous
