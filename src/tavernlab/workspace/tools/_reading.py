"""``workspace.read_file`` (docs/workspace.md) and the read records it leaves."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tavernlab.errors import (
    ToolError,
    WorkspaceError,
)
from tavernlab.paths import WorkspacePath
from tavernlab.workspace.storage import decode_text, sha256_hex
from tavernlab.workspace.text import (
    LineRangeError,
    LineSelection,
    TextMeasures,
    number_lines,
    select_encoded_lines,
    select_lines,
)
from tavernlab.workspace.tools._common import require_visible, required_path, storage_error
from tavernlab.workspace.tools._tooling import Arguments, ToolContext, ToolResult

#: The arguments of ``workspace.read_file`` (``skill.read`` forwards to it).
READ_FILE_ARGUMENTS = ("path", "start_line", "line_count")
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
    """
    path = required_path(args)
    require_visible(ctx, path)
    start = args.integer("start_line", default=1)
    count = args.integer("line_count")
    file = _read(ctx, path, start, count)
    selection, total_chars, total_words = file.selection, file.chars, file.words
    selected = selection.text
    # An untruncated selection is the whole file; a truncated one is named by its window.
    window = (f"{file.sha256}:{selection.start_line}-{selection.end_line}"
              f"{':cut' if selection.line_truncated else ''}")
    chars, words, _ = _MEASURES.of(selected, window if selection.truncated else file.sha256)
    header = (f"{path.text} lines {selection.start_line}-{selection.end_line} of "
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
    if full_read:
        ctx.records.full(path.text, file.sha256)
    else:
        ctx.records.partial(path.text, file.sha256, selected)
    structured: dict[str, Any] = {
        "path": path.text, "sha256": file.sha256, "startLine": selection.start_line,
        "endLine": selection.end_line, "totalLines": selection.total_lines,
        "chars": chars, "totalChars": total_chars, "words": words, "totalWords": total_words,
        "lineTruncated": selection.line_truncated, "truncated": selection.truncated,
        "fullRead": full_read,
    }
    if selection.next_start_line is not None:
        structured["nextStartLine"] = selection.next_start_line
    return ToolResult(content=content, structured=structured, resource_refs=[path.text])


@dataclass(frozen=True, slots=True)
class _FileRead:
    """A read file: its digest, the selection and the whole file's metrics."""

    sha256: str
    selection: LineSelection
    chars: int
    words: int


def _read(ctx: ToolContext, path: WorkspacePath, start: int, count: int | None) -> _FileRead:
    """Read ``path`` and select its lines. A file whose digest was measured lately is known
    to be UTF-8 text of known metrics: only the window it shows is decoded."""
    try:
        data = ctx.scope.read_file(path, None)
        digest = sha256_hex(data)
        known = _MEASURES.known(digest)
        text = decode_text(path.text, data) if known is None else None
    except WorkspaceError as exc:
        raise storage_error(exc, path.text) from None
    try:
        if known is None:
            assert text is not None  # decoded above
            selection = select_lines(text, start, count, file_bytes=len(data))
            known = _MEASURES.of(text, digest)
        else:
            selection = select_encoded_lines(data, known.chars, known.lines, start, count)
    except LineRangeError as exc:
        raise ToolError("workspace.invalid_line_range", str(exc)) from None
    return _FileRead(digest, selection, known.chars, known.words)
