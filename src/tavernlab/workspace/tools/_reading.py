"""``workspace.read_file`` (docs/workspace.md) and the read records it leaves."""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from tavernlab.errors import (
    ToolError,
    WorkspaceError,
)
from tavernlab.workspace.storage import decode_text, sha256_hex
from tavernlab.workspace.text import (
    LineRangeError,
    TextMeasures,
    count_words_around,
    number_lines,
    select_encoded_lines,
    select_lines_at,
)
from tavernlab.workspace.tools._common import require_visible, required_path, storage_error
from tavernlab.workspace.tools._tooling import Arguments, ToolContext, ToolResult

#: The metrics of the files (and windows of files) read lately, by content: rereading an
#: unchanged file measures nothing (tavernlab choice: 4096 entries of a few hundred bytes).
#: Only this module fills it, with the digests of files that decoded as UTF-8 and window
#: names (``<digest>:<start>-<end>``): a digest found here proves its bytes are text.
_MEASURES = TextMeasures(limit=4096)


def read_file(ctx: ToolContext, args: Arguments) -> ToolResult:
    """``workspace.read_file``: a numbered window of a file; the read is recorded.

    Structured field names upstream does not fix are tavernlab's choice: ``{path, sha256,
    startLine, endLine, totalLines, chars, totalChars, words, totalWords, lineTruncated,
    truncated, nextStartLine?, fullRead}``. Files under ``skills/`` are macro-projected; all
    others are returned raw. Checks run in upstream's order: unknown keys, ``path``
    (trimmed; ``path is required``), its parse, visibility, ``start_line`` then
    ``line_count`` (``<key> must be a non-negative integer``), the read, the line range.

    What a read shows depends only on the path, the bytes read and the window asked for, so
    a read of the same window of the same content as a recent read returns what that read
    built (see :class:`_Views`); the read record is updated either way.
    """
    path = required_path(args)
    require_visible(ctx, path)
    start = args.integer("start_line", default=1)
    count = args.integer("line_count")
    try:
        data = ctx.scope.read_file(path, None)
    except WorkspaceError as exc:
        raise storage_error(exc, path.text) from None
    digest = sha256_hex(data)
    key = (digest, path.text, start, count)
    view = _VIEWS.get(key)
    if view is None:
        view = _VIEWS.put(key, _render(path.text, data, digest, start, count))
    if view.observed is None:
        ctx.records.full(path.text, digest)
    else:
        ctx.records.partial(path.text, digest, view.observed)
    return ToolResult(content=view.content, structured=dict(view.structured),
                      resource_refs=[path.text])


@dataclass(frozen=True, slots=True)
class _View:
    """What one read of a window of a file returns: the model's text, the structured
    fields, and the text a partial read records as observed (``None``: a full read)."""

    content: str
    structured: dict[str, Any]
    observed: str | None

    @property
    def weight(self) -> int:
        """The characters it keeps alive."""
        return len(self.content) + len(self.observed or "")


class _Views:
    """The :class:`_View` of the reads made lately, by ``(digest, path, start_line,
    line_count)``: the most recently used, within ``chars`` characters of text and
    ``entries`` entries in all (a view larger than ``chars`` is not kept); thread-safe.

    A digest found here names bytes that decoded as UTF-8 text, as in ``_MEASURES``.
    """

    def __init__(self, chars: int, entries: int) -> None:
        self._views: OrderedDict[tuple[str, str, int, int | None], _View] = OrderedDict()
        self._chars, self._entries, self._weight = chars, entries, 0
        self._lock = threading.Lock()

    def get(self, key: tuple[str, str, int, int | None]) -> _View | None:
        """The view of ``key``, if a read built it lately."""
        with self._lock:
            view = self._views.get(key)
            if view is not None:
                self._views.move_to_end(key)
            return view

    def put(self, key: tuple[str, str, int, int | None], view: _View) -> _View:
        """Keep ``view`` as the view of ``key`` (dropping the least recently used beyond the
        limits); returns it."""
        weight = view.weight
        if weight > self._chars:
            return view
        with self._lock:
            old = self._views.pop(key, None)
            if old is not None:
                self._weight -= old.weight
            self._views[key] = view
            self._weight += weight
            while self._weight > self._chars or len(self._views) > self._entries:
                self._weight -= self._views.popitem(last=False)[1].weight
        return view

    def clear(self) -> None:
        """Forget every view."""
        with self._lock:
            self._views.clear()
            self._weight = 0


#: The views of the reads made lately (tavernlab choice: 1 Mi characters, a few MB, and at
#: most 1024 reads; a preview is at most about 200,000): reading the same window of an
#: unchanged file again builds nothing.
_VIEWS = _Views(chars=1024 * 1024, entries=1024)


def _render(path: str, data: bytes, digest: str, start: int, count: int | None) -> _View:
    """The view of a window of ``path``, whose bytes ``data`` have the digest ``digest``.

    A file whose digest was measured lately is known to be UTF-8 text of known metrics: only
    the window it shows is decoded. Otherwise the file is decoded, and its words and the
    window's are counted in one pass.
    """
    known = _MEASURES.known(digest)
    try:
        text = decode_text(path, data) if known is None else None
    except WorkspaceError as exc:
        raise storage_error(exc, path) from None
    offset = 0  # where the selection starts in ``text``
    try:
        if text is None:
            assert known is not None  # measured before
            selection = select_encoded_lines(data, known.chars, known.lines, start, count)
        else:
            selection, offset = select_lines_at(text, start, count, file_bytes=len(data))
    except LineRangeError as exc:
        raise ToolError("workspace.invalid_line_range", str(exc)) from None
    selected = selection.text
    # An untruncated selection is the whole file; a truncated one is named by its window.
    window = (f"{digest}:{selection.start_line}-{selection.end_line}"
              f"{':cut' if selection.line_truncated else ''}")
    if known is not None:
        chars, words, _ = _MEASURES.of(selected, window if selection.truncated else digest)
    elif selection.truncated:
        assert text is not None
        total_words, words = count_words_around(text, offset, offset + len(selected))
        known = _MEASURES.remember(digest, len(text), total_words, selection.total_lines)
        chars = len(selected)
        _MEASURES.remember(window, chars, words, len(selection.lines) if selected else 0)
    else:
        assert text is not None
        known = _MEASURES.of(text, digest)
        chars, words = known.chars, known.words
    total_chars, total_words = known.chars, known.words
    header = (f"{path} lines {selection.start_line}-{selection.end_line} of "
              f"{selection.total_lines}, chars {chars} of {total_chars}, words "
              f"{words} of {total_words}")
    if selection.truncated:
        header += " (preview)"
    content = header + "\n" + number_lines(selection.start_line, selection.lines)
    if selection.next_start_line is not None:
        content += (f"\n\nPreview ended before the file. Continue with start_line="
                    f"{selection.next_start_line} and line_count={len(selection.lines)}.")
    if selection.line_truncated:
        content += (f"\n\nLine {selection.start_line} is longer than this reader can return "
                    "safely, so only its beginning is shown. Search this file for specific "
                    "text if you need a later section.")
    full_read = not selection.truncated
    structured: dict[str, Any] = {
        "path": path, "sha256": digest, "startLine": selection.start_line,
        "endLine": selection.end_line, "totalLines": selection.total_lines,
        "chars": chars, "totalChars": total_chars, "words": words, "totalWords": total_words,
        "lineTruncated": selection.line_truncated, "truncated": selection.truncated,
        "fullRead": full_read,
    }
    if selection.next_start_line is not None:
        structured["nextStartLine"] = selection.next_start_line
    return _View(content, structured, None if full_read else selected)
