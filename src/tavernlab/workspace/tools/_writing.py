"""``workspace.write_file`` and ``workspace.apply_patch`` (docs/workspace.md) and
their read-record rules."""

from __future__ import annotations

from tavernlab.errors import (
    NotFound,
    PathIsDirectory,
    ToolError,
    WorkspaceError,
    WriteConflict,
)
from tavernlab.paths import WorkspacePath
from tavernlab.workspace.scope import ReadRecord, ReadRecords, ScopedWorkspaceFs
from tavernlab.workspace.storage import WorkspaceFile, WriteGuard
from tavernlab.workspace.text import text_metrics
from tavernlab.workspace.tools._common import require_writable, required_path, storage_error
from tavernlab.workspace.tools._tooling import (
    Arguments,
    ToolContext,
    ToolResult,
    parse_tool_path,
    path_is_directory,
)

# tavernlab wording where upstream's is unknown (docs/workspace.md).
PATCH_EMPTY = "old_string must not be empty; include the exact text to replace."
PATCH_NO_CHANGE = "old_string and new_string are identical; the patch would change nothing."
PATCH_REQUIRES_READ = "read the file with workspace_read_file before patching it"
PATCH_REQUIRES_FULL_READ = "read the whole file with workspace_read_file before this patch"
PATCH_STALE = "file changed since you last read it. Read the file again before patching it."
PATCH_NOT_FOUND = ("old_string was not found in the file; read the file again and copy the "
                   "exact text to replace")
WRITE_REQUIRES_READ = "file already exists; read it with workspace_read_file before rewriting it"
WRITE_STALE = ("file changed since you last read or wrote it. Read the file again before "
               "rewriting it.")
WRITE_GONE = ("file changed since you last read or wrote it and is no longer present. Read the "
              "parent directory before writing again.")

#: The largest file a text tool writes (``write_file`` replace or append, ``apply_patch``):
#: 8 MiB, what the shell reads of one file and the largest file ``search_files`` reads. The
#: spec sets no write limit; tavernlab chooses this one so that a ``replace_all``
#: patch cannot inflate a file without bound.
MAX_WRITE_BYTES = 8 * 1024 * 1024


def require_write_size(size: int) -> None:
    """Refuse a write whose resulting file would be over :data:`MAX_WRITE_BYTES`, before
    anything is built or written: ``workspace.write_too_large`` ``the file would be <N>
    bytes, over the 8388608-byte write limit; split the text across several files``
    (tavernlab's code and wording)."""
    if size > MAX_WRITE_BYTES:
        raise ToolError("workspace.write_too_large",
                        f"the file would be {size} bytes, over the {MAX_WRITE_BYTES}-byte "
                        "write limit; split the text across several files")


def _existing_bytes(ctx: ToolContext, path: WorkspacePath) -> int:
    """The size of the file an append extends (0 when it does not exist yet)."""
    try:
        return ctx.scope.metadata(path).bytes
    except NotFound:
        return 0


def write_file(ctx: ToolContext, args: Arguments) -> ToolResult:
    """``workspace.write_file``: replace (guarded by the read record) or append.

    A ``mode`` string other than ``replace``/``append`` is ``workspace.write_mode_invalid``; a
    ``mode`` that is not a string at all is a wrong type, ``tool.invalid_arguments``.
    A resulting file over 8 MiB is refused (:func:`require_write_size`); for an append the
    size is the existing file's when the call starts plus the appended text.
    """
    path = required_path(args)
    content = args.string("content", required=True)
    mode = args.string("mode", default="replace")
    assert content is not None
    if mode not in ("replace", "append"):
        raise ToolError("workspace.write_mode_invalid", "mode must be `replace` or `append`")
    require_writable(ctx, path)
    scope = ctx.scope
    records = ctx.records
    try:
        added = len(content.encode("utf-8"))
        require_write_size(added + (_existing_bytes(ctx, path) if mode == "append" else 0))
        if mode == "append":
            appended = scope.append_text(path, content, parents=True)
            file = appended.file
            records.appended(path.text, appended.previous_sha256, file.sha256)
            text, digest = file.text, file.sha256
        else:
            text, digest = content, _replace(scope, records.get(path.text), path, content)
            records.full(path.text, digest)
    except WriteConflict as exc:
        if exc.kind == "already_exists":
            raise ToolError("workspace.write_requires_read", WRITE_REQUIRES_READ) from None
        raise ToolError("workspace.write_stale_file",
                        WRITE_GONE if exc.actual_sha256 is None else WRITE_STALE) from None
    except PathIsDirectory:
        raise path_is_directory(path.text) from None
    except WorkspaceError as exc:
        raise storage_error(exc, path.text) from None
    chars, words = text_metrics(text)
    verb = "Wrote" if mode == "replace" else "Appended"
    ctx.file_written(path.text, digest, mode=str(mode))
    return ToolResult(
        content=f"{verb} {chars} chars / {words} words to {path.text}.",
        structured={"path": path.text, "mode": mode, "chars": chars, "words": words,
                    "sha256": digest},
        resource_refs=[path.text],
    )


def _replace(scope: ScopedWorkspaceFs, record: ReadRecord | None, path: WorkspacePath,
             content: str) -> str:
    """The replace of ``write_file``: one look at the path and one guarded write under one
    hold of the lock (the guard compares the read record's digest with the file's); returns
    the new digest. A missing file is created; an existing one needs a read record (a
    ``WriteConflict`` ``already_exists`` without one)."""
    return scope.replace_text(path, content, None if record is None else record.sha256)


def _replacements(records: ReadRecords, path: str, file: WorkspaceFile, old: str,
                  replace_all: bool) -> int:
    """Steps 3 to 8 of the patch checks against the read record; returns how many
    occurrences the patch replaces."""
    record = records.get(path)
    if record is None:
        raise ToolError("workspace.patch_requires_read", PATCH_REQUIRES_READ)
    if record.patch_requires_full_read:
        raise ToolError("workspace.patch_requires_full_read", PATCH_REQUIRES_FULL_READ)
    partial = not record.full_read
    if partial and (replace_all or not any(old in t for t in record.observed_texts)):
        records.flag(path)
        raise ToolError("workspace.patch_requires_full_read", PATCH_REQUIRES_FULL_READ)
    if file.sha256 != record.sha256:
        records.flag(path)
        raise ToolError("workspace.patch_stale_file", PATCH_STALE)
    occurrences = file.text.count(old)
    if occurrences == 0:
        records.flag(path)
        raise ToolError("workspace.patch_old_string_not_found", PATCH_NOT_FOUND)
    if occurrences > 1 and not replace_all:
        records.flag(path)
        raise ToolError("workspace.patch_old_string_not_unique",
                        f"old_string matched {occurrences} times; provide more context or set "
                        "replace_all=true")
    return occurrences if replace_all else 1


def apply_patch(ctx: ToolContext, args: Arguments) -> ToolResult:
    """``workspace.apply_patch``: exact string replacement guarded by the read record.

    After the occurrences are counted the resulting size is computed from the counts
    (``bytes + replacements * (len(new) - len(old))`` in UTF-8) and a result over 8 MiB is
    refused before it is built (:func:`require_write_size`), so a ``replace_all`` over many
    matches never allocates the oversized text.
    """
    raw_path = args.required_text("path")
    old = args.string("old_string", required=True)
    new = args.string("new_string", required=True)
    replace_all = args.boolean("replace_all")
    assert old is not None and new is not None
    if old == "":
        raise ToolError("workspace.patch_empty_old_string", PATCH_EMPTY)
    if old == new:
        raise ToolError("workspace.patch_no_change", PATCH_NO_CHANGE)
    path = parse_tool_path(raw_path)
    require_writable(ctx, path)
    scope = ctx.scope
    records = ctx.records
    try:
        file = scope.read_text(path)
    except WorkspaceError as exc:
        raise storage_error(exc, path.text) from None
    replacements = _replacements(records, path.text, file, old, replace_all)
    require_write_size(file.bytes + replacements * (len(new.encode("utf-8"))
                                                    - len(old.encode("utf-8"))))
    updated = file.text.replace(old, new, replacements)
    try:
        digest = scope.write_text(path, updated, WriteGuard.must_match_sha256(file.sha256))
    except WriteConflict:
        raise ToolError("workspace.patch_stale_file", PATCH_STALE) from None
    except WorkspaceError as exc:
        raise storage_error(exc, path.text) from None
    records.patched(path.text, digest, old, new, replace_all)
    chars, words = text_metrics(updated)
    ctx.patch_applied(path.text, digest, replacements)
    return ToolResult(
        content=(f"Patched {path.text} with {replacements} replacement(s); file now has "
                 f"{chars} chars / {words} words."),
        structured={"path": path.text, "chars": chars, "words": words,
                    "oldSha256": file.sha256, "sha256": digest, "replacements": replacements},
        resource_refs=[path.text],
    )
