"""The model-facing workspace tools (spec/workspace.md section 7).

``workspace.list_files``, ``workspace.search_files``, ``workspace.read_file``,
``workspace.write_file``, ``workspace.apply_patch``, ``workspace.commit`` and
``workspace.finish`` (the shell lives in :mod:`tavernlab.shell`). Each handler validates its
allow-listed arguments, works through the calling Invocation's scoped view and returns a
:class:`~tavernlab.workspace.tooling.ToolResult`; recoverable failures raise
:class:`~tavernlab.workspace.tooling.ToolError` with the upstream code.

Messages upstream does not fix are tavernlab's choices, documented next to each constant.
"""

from __future__ import annotations

from typing import Any

from tavernlab.errors import (
    FileNotText,
    NotFound,
    PathIsDirectory,
    ToolError,
    WorkspaceError,
    WriteConflict,
)
from tavernlab.paths import WorkspacePath
from tavernlab.workspace.fs import WriteGuard, sha256_hex
from tavernlab.workspace.text import (
    LineRangeError,
    SearchHit,
    count_words,
    number_lines,
    query_tokens,
    search_text,
    select_lines,
)
from tavernlab.workspace.tooling import (
    Arguments,
    ToolContext,
    ToolResult,
    ToolSpec,
    file_not_found,
    invalid_arguments,
    parse_tool_path,
    path_is_directory,
    tool_error_from_storage,
)

LIST_MAX_ENTRIES = 200
LIST_DEFAULT_DEPTH = 2
LIST_MAX_DEPTH = 4
SEARCH_DEFAULT_LIMIT = 20
SEARCH_MAX_LIMIT = 50
SEARCH_DEFAULT_CONTEXT = 2
SEARCH_MAX_CONTEXT = 5
SEARCH_MAX_FILES = 1000
SEARCH_MAX_DEPTH = 8
#: A search listing stops after this many entries (files and directories) before the
#: 1000-file cut; tavernlab choice.
SEARCH_MAX_LISTED = 5000
#: Files larger than this are skipped by search like non-UTF-8 files (tavernlab choice).
SEARCH_MAX_FILE_BYTES = 8 * 1024 * 1024

# tavernlab wording where upstream's is unknown (spec/workspace.md 7.7, 7.9, 7.10).
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
FINISH_REQUIRES_COMMIT = "Commit the output with workspace_commit before finishing."


def _storage(error: WorkspaceError, path: str) -> ToolError:
    if isinstance(error, FileNotText):
        return ToolError("workspace.file_not_text", f"workspace file `{path}` is not UTF-8 text")
    return tool_error_from_storage(error, path)


def _require_writable(ctx: ToolContext, path: WorkspacePath) -> None:
    if not ctx.scope.is_writable(path):
        raise ToolError("workspace.path_not_writable",
                        f"`{path.text}` is not writable for this task.")


def _require_visible(ctx: ToolContext, path: WorkspacePath | None) -> None:
    if not ctx.scope.is_visible(path):
        raise ToolError("workspace.path_not_visible",
                        f"`{path.text if path else ''}` is not readable for this task.")


# --- list_files ----------------------------------------------------------------------------


def list_files(ctx: ToolContext, args: Arguments) -> ToolResult:
    """``workspace.list_files``: entries below a path (or the visible roots), depth <= 4.

    Upstream does not say what ``depth`` below 1 does; tavernlab refuses it with
    ``tool.invalid_arguments`` ``depth must be >= 1``.
    """
    depth = args.integer("depth", default=LIST_DEFAULT_DEPTH)
    assert depth is not None
    if depth > LIST_MAX_DEPTH:
        raise ToolError("workspace.list_depth_too_large", f"depth must be <= {LIST_MAX_DEPTH}")
    if depth < 1:
        raise invalid_arguments("depth must be >= 1")
    raw = args.string("path")
    path = None if raw in (None, "", ".", "./") else parse_tool_path(raw or "")
    _require_visible(ctx, path)
    display = path.text if path else ""
    try:
        listing = ctx.scope.list_files(path, depth, LIST_MAX_ENTRIES)
    except WorkspaceError as exc:
        raise tool_error_from_storage(exc, display, not_found_code="workspace.path_not_found"
                                      ) from None
    lines = [e.path + ("/" if e.kind == "directory" else "") for e in listing.entries]
    if listing.truncated:
        lines.append(f"... truncated at {LIST_MAX_ENTRIES} entries")
    return ToolResult(
        content="\n".join(lines) if listing.entries else "No visible workspace files found.",
        structured={"entries": [{"path": e.path, "kind": e.kind} for e in listing.entries],
                    "truncated": listing.truncated},
        resource_refs=[e.path for e in listing.entries],
    )


# --- search_files -------------------------------------------------------------------------


def search_files(ctx: ToolContext, args: Arguments) -> ToolResult:
    """``workspace.search_files``: plain-text token search over visible files.

    tavernlab choices: the default scope is every visible root (``tool-results`` and
    ``skills`` included); a query without tokens is ``tool.invalid_arguments`` ``query must
    contain a letter or digit``; the limit messages are ``limit must be >= 1``, ``limit must
    be <= 50`` and ``context_lines must be <= 5``; files over 8 MiB are skipped and counted
    like non-UTF-8 files.
    """
    query = args.string("query", required=True)
    assert query is not None
    limit = args.integer("limit", default=SEARCH_DEFAULT_LIMIT)
    context = args.integer("context_lines", default=SEARCH_DEFAULT_CONTEXT)
    assert limit is not None and context is not None
    if limit < 1:
        raise ToolError("workspace.search_limit_invalid", "limit must be >= 1")
    if limit > SEARCH_MAX_LIMIT:
        raise ToolError("workspace.search_limit_too_large", f"limit must be <= {SEARCH_MAX_LIMIT}")
    if context > SEARCH_MAX_CONTEXT:
        raise ToolError("workspace.search_context_too_large",
                        f"context_lines must be <= {SEARCH_MAX_CONTEXT}")
    if context < 0:
        raise invalid_arguments("context_lines must be >= 0")
    tokens = query_tokens(query)
    if not tokens:
        raise invalid_arguments("query must contain a letter or digit")
    raw = args.string("path")
    path = None if raw in (None, "", ".", "./") else parse_tool_path(raw or "")
    _require_visible(ctx, path)
    scope = ctx.scope
    try:
        listing = scope.list_files(path, SEARCH_MAX_DEPTH, SEARCH_MAX_LISTED)
    except WorkspaceError as exc:
        raise tool_error_from_storage(exc, path.text if path else "",
                                      not_found_code="workspace.path_not_found") from None
    files = sorted(e.path for e in listing.entries if e.kind == "file")
    truncated = listing.truncated or len(files) > SEARCH_MAX_FILES
    files = files[:SEARCH_MAX_FILES]
    hits: list[tuple[SearchHit, int, int, str]] = []
    more = False
    searched = skipped = 0
    for file_path in files:
        try:
            data = scope.read_file(WorkspacePath(file_path), SEARCH_MAX_FILE_BYTES)
            text = data.decode("utf-8")
        except (UnicodeDecodeError, WorkspaceError):
            skipped += 1
            continue
        searched += 1
        found, file_more = search_text(file_path, text, tokens, limit=limit,
                                       context_lines=context)
        more = more or file_more
        if found:
            meta = (len(text), count_words(text), sha256_hex(data))
            hits.extend((hit, *meta) for hit in found)
    hits.sort(key=lambda h: (-h[0].score, h[0].path, h[0].start_line))
    truncated = truncated or more or len(hits) > limit
    hits = hits[:limit]
    structured_hits: list[dict[str, Any]] = []
    parts = []
    for hit, chars, words, digest in hits:
        ref = f"workspace:{hit.path}#L{hit.start_line}-L{hit.end_line}"
        structured_hits.append({
            "path": hit.path, "score": hit.score, "startLine": hit.start_line,
            "endLine": hit.end_line, "snippet": hit.snippet, "chars": chars, "words": words,
            "sha256": digest, "ref": ref,
        })
        parts.append(f"\n\n{hit.path} score {hit.score:.3f} ref {ref}\n{hit.snippet}")
    if hits:
        content = (f"Search `{query}` matched {len(hits)} workspace location(s). Use "
                   "workspace_read_file with path and start_line/line_count to read exact text."
                   + "".join(parts))
        if truncated:
            content += "\n\nResults were truncated."
    else:
        content = f"No visible workspace files matched `{query}`."
    return ToolResult(
        content=content,
        structured={"query": query, "hits": structured_hits, "searchedFiles": searched,
                    "skippedFiles": skipped, "truncated": truncated},
        resource_refs=sorted({hit.path for hit, *_ in hits}),
    )


# --- read_file ------------------------------------------------------------------------------

#: The arguments of ``workspace.read_file`` (``skill.read`` forwards to it).
READ_FILE_ARGUMENTS = ("path", "start_line", "line_count")


def read_file(ctx: ToolContext, args: Arguments) -> ToolResult:
    """``workspace.read_file``: a numbered window of a file; the read is recorded (6.1).

    Structured field names upstream does not fix are tavernlab's choice: ``{path, sha256,
    startLine, endLine, totalLines, chars, totalChars, words, totalWords, lineTruncated,
    truncated, nextStartLine?, fullRead}``. Files under ``skills/`` are macro-projected; all
    others are returned raw.
    """
    raw_path = args.string("path", required=True)
    start = args.integer("start_line", default=1)
    count = args.integer("line_count")
    assert raw_path is not None and start is not None
    path = parse_tool_path(raw_path)
    _require_visible(ctx, path)
    try:
        file = ctx.scope.read_text(path)
    except WorkspaceError as exc:
        raise _storage(exc, path.text) from None
    try:
        selection = select_lines(file.text, start, count, file_bytes=file.bytes)
    except LineRangeError as exc:
        raise ToolError("workspace.invalid_line_range", str(exc)) from None
    selected = selection.text
    total_words = count_words(file.text)
    header = (f"{path.text} lines {selection.start_line}-{selection.end_line} of "
              f"{selection.total_lines}, chars {len(selected)} of {len(file.text)}, words "
              f"{count_words(selected)} of {total_words}")
    if selection.truncated:
        header += " (preview)"
    content = header + "\n" + number_lines(selection.rows)
    if selection.next_start_line is not None:
        content += (f"\n\nPreview ended before the file. Continue with start_line="
                    f"{selection.next_start_line} and line_count={len(selection.rows)}.")
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
        "chars": len(selected), "totalChars": len(file.text), "words": count_words(selected),
        "totalWords": total_words, "lineTruncated": selection.line_truncated,
        "truncated": selection.truncated, "fullRead": full_read,
    }
    if selection.next_start_line is not None:
        structured["nextStartLine"] = selection.next_start_line
    return ToolResult(content=content, structured=structured, resource_refs=[path.text])


# --- write_file -------------------------------------------------------------------------------


def write_file(ctx: ToolContext, args: Arguments) -> ToolResult:
    """``workspace.write_file``: replace (guarded by the read record) or append.

    A ``mode`` string other than ``replace``/``append`` is ``workspace.write_mode_invalid``; a
    ``mode`` that is not a string at all is a wrong type, ``tool.invalid_arguments`` (7.1).
    """
    raw_path = args.string("path", required=True)
    content = args.string("content", required=True)
    mode = args.string("mode", default="replace")
    assert raw_path is not None and content is not None
    if mode not in ("replace", "append"):
        raise ToolError("workspace.write_mode_invalid", "mode must be `replace` or `append`")
    path = parse_tool_path(raw_path)
    _require_writable(ctx, path)
    scope = ctx.scope
    records = ctx.records
    try:
        if mode == "append":
            appended = scope.append_text(path, content, parents=True)
            file = appended.file
            records.appended(path.text, appended.previous_sha256, file.sha256)
            text, digest = file.text, file.sha256
        else:
            current = scope.digest(path)
            if current is None:
                guard = WriteGuard.must_not_exist()
            else:
                record = records.get(path.text)
                if record is None:
                    raise ToolError("workspace.write_requires_read", WRITE_REQUIRES_READ)
                if record.sha256 != current:
                    raise ToolError("workspace.write_stale_file", WRITE_STALE)
                guard = WriteGuard.must_match_sha256(record.sha256)
            scope.write_text(path, content, guard)
            text, digest = content, sha256_hex(content.encode("utf-8"))
            records.full(path.text, digest)
    except WriteConflict as exc:
        if exc.kind == "already_exists":
            raise ToolError("workspace.write_requires_read", WRITE_REQUIRES_READ) from None
        raise ToolError("workspace.write_stale_file",
                        WRITE_GONE if exc.actual_sha256 is None else WRITE_STALE) from None
    except PathIsDirectory:
        raise path_is_directory(path.text) from None
    except WorkspaceError as exc:
        raise _storage(exc, path.text) from None
    chars, words = len(text), count_words(text)
    verb = "Wrote" if mode == "replace" else "Appended"
    ctx.file_written(path.text, digest, mode=str(mode))
    return ToolResult(
        content=f"{verb} {chars} chars / {words} words to {path.text}.",
        structured={"path": path.text, "mode": mode, "chars": chars, "words": words,
                    "sha256": digest},
        resource_refs=[path.text],
    )


# --- apply_patch -----------------------------------------------------------------------------


def apply_patch(ctx: ToolContext, args: Arguments) -> ToolResult:
    """``workspace.apply_patch``: exact string replacement guarded by the read record."""
    raw_path = args.string("path", required=True)
    old = args.string("old_string", required=True)
    new = args.string("new_string", required=True)
    replace_all = args.boolean("replace_all")
    assert raw_path is not None and old is not None and new is not None
    if old == "":
        raise ToolError("workspace.patch_empty_old_string", PATCH_EMPTY)
    if old == new:
        raise ToolError("workspace.patch_no_change", PATCH_NO_CHANGE)
    path = parse_tool_path(raw_path)
    _require_writable(ctx, path)
    scope = ctx.scope
    records = ctx.records
    try:
        file = scope.read_text(path)
    except WorkspaceError as exc:
        raise _storage(exc, path.text) from None
    record = records.get(path.text)
    if record is None:
        raise ToolError("workspace.patch_requires_read", PATCH_REQUIRES_READ)
    if record.patch_requires_full_read:
        raise ToolError("workspace.patch_requires_full_read", PATCH_REQUIRES_FULL_READ)
    partial = not record.full_read
    if partial and (replace_all or not any(old in t for t in record.observed_texts)):
        records.flag(path.text)
        raise ToolError("workspace.patch_requires_full_read", PATCH_REQUIRES_FULL_READ)
    if file.sha256 != record.sha256:
        records.flag(path.text)
        raise ToolError("workspace.patch_stale_file", PATCH_STALE)
    occurrences = file.text.count(old)
    if occurrences == 0:
        records.flag(path.text)
        raise ToolError("workspace.patch_old_string_not_found", PATCH_NOT_FOUND)
    if occurrences > 1 and not replace_all:
        records.flag(path.text)
        raise ToolError("workspace.patch_old_string_not_unique",
                        f"old_string matched {occurrences} times; provide more context or set "
                        "replace_all=true")
    updated = file.text.replace(old, new) if replace_all else file.text.replace(old, new, 1)
    replacements = occurrences if replace_all else 1
    try:
        scope.write_text(path, updated, WriteGuard.must_match_sha256(file.sha256))
    except WriteConflict:
        raise ToolError("workspace.patch_stale_file", PATCH_STALE) from None
    except WorkspaceError as exc:
        raise _storage(exc, path.text) from None
    digest = sha256_hex(updated.encode("utf-8"))
    records.patched(path.text, digest, old, new, replace_all)
    chars, words = len(updated), count_words(updated)
    ctx.patch_applied(path.text, digest, replacements)
    return ToolResult(
        content=(f"Patched {path.text} with {replacements} replacement(s); file now has "
                 f"{chars} chars / {words} words."),
        structured={"path": path.text, "chars": chars, "words": words,
                    "oldSha256": file.sha256, "sha256": digest, "replacements": replacements},
        resource_refs=[path.text],
    )


# --- commit and finish ---------------------------------------------------------------------


def commit(ctx: ToolContext, args: Arguments) -> ToolResult:
    """``workspace.commit``: ask the host to save a visible file as this run's message.

    A ``mode`` string other than ``replace``/``append`` is ``workspace.commit_mode_invalid``
    (``got `<x>` `` quotes the string); a non-string ``mode`` is ``tool.invalid_arguments``.
    """
    raw_path = args.string("path")
    mode = args.string("mode", default="replace")
    reason = args.string("reason")
    if mode not in ("replace", "append"):
        raise ToolError("workspace.commit_mode_invalid",
                        f"mode must be `replace` or `append`, got `{mode}`")
    path = parse_tool_path(raw_path if raw_path is not None
                           else ctx.profile.workspace.message_body_path)
    _require_visible(ctx, path)
    try:
        file = ctx.scope.read_text(path)
    except NotFound:
        raise file_not_found(path.text) from None
    except WorkspaceError as exc:
        raise _storage(exc, path.text) from None
    ctx.commit_to_chat(path=path.text, text=file.text, sha256=file.sha256, mode=str(mode),
                       reason=reason)
    return ToolResult(
        content=f"Requested chat commit of {path.text} with mode {str(mode).capitalize()}.",
        structured={"path": path.text, "mode": mode, "reason": reason},
        resource_refs=[path.text],
    )


def finish(ctx: ToolContext, args: Arguments) -> ToolResult:
    """``workspace.finish``: end the run (a Chat run publishes ``persist/``).

    A foreground Chat run needs a successful explicit commit first; tavernlab's wording for
    the refusal is ``Commit the output with workspace_commit before finishing.``
    (``workspace.finish_requires_commit``).
    """
    reason = args.string("reason")
    if ctx.commit_required:
        raise ToolError("workspace.finish_requires_commit", FINISH_REQUIRES_COMMIT)
    refs = ctx.finish_run(reason)
    return ToolResult(content="Finished the Agent run.", structured={"reason": reason,
                      **refs}, resource_refs=[])


def task_return(ctx: ToolContext, args: Arguments) -> ToolResult:
    """``task.return``: a return-mode sub-agent hands its result back; the text is written to
    ``summaries/<agent>-result.md`` (``-002``, ``-003``... for repeated results).

    Upstream's argument name is unknown; tavernlab chooses ``{"result": string}``.
    """
    text = args.string("result", required=True)
    assert text is not None
    path = ctx.return_result(text)
    return ToolResult(content=f"Returned the result to the parent agent ({path}).",
                      structured={"path": path}, resource_refs=[path])


def _return_only(ctx: ToolContext) -> tuple[str, str] | None:
    if ctx.agent_mode != "return":
        return ("tool.not_available", "task_return is not available for this task.")
    return None


def _only_main_chat(tool: str) -> Any:
    def available(ctx: ToolContext) -> tuple[str, str] | None:
        if ctx.agent_mode != "main" or (tool == "commit" and not ctx.is_chat):
            return ("tool.not_available", f"workspace_{tool} is not available for this task.")
        return None

    return available


#: The workspace tools (spec/workspace.md section 7), in the order the model is offered them.
WORKSPACE_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec("workspace.list_files", list_files, False,
             "List visible workspace files and directories (depth <= 4, at most 200 entries).",
             ("path", "depth")),
    ToolSpec("workspace.search_files", search_files, False,
             "Search visible workspace text files for the words of a query.",
             ("query", "path", "limit", "context_lines")),
    ToolSpec("workspace.read_file", read_file, False,
             "Read a workspace file with line numbers (whole, or a window of lines).",
             READ_FILE_ARGUMENTS),
    ToolSpec("workspace.write_file", write_file, True,
             "Create, replace (after reading) or append to a workspace file.",
             ("path", "content", "mode")),
    ToolSpec("workspace.apply_patch", apply_patch, True,
             "Replace an exact string in a file you have read.",
             ("path", "old_string", "new_string", "replace_all")),
    ToolSpec("workspace.commit", commit, True,
             "Save a workspace file as this run's chat message (replace or append).",
             ("path", "mode", "reason"), available=_only_main_chat("commit")),
    ToolSpec("workspace.finish", finish, True, "Finish the agent run.", ("reason",),
             available=_only_main_chat("finish")),
    ToolSpec("task.return", task_return, True,
             "Return-mode sub-agents: hand the result back to the parent and end.",
             ("result",), available=_return_only),
)
