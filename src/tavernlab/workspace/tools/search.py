"""``workspace.search_files`` (spec/workspace.md 7.4)."""

from __future__ import annotations

from typing import Any

from tavernlab.errors import (
    ToolError,
    WorkspaceError,
)
from tavernlab.paths import WorkspacePath
from tavernlab.workspace.fs import sha256_hex
from tavernlab.workspace.text import (
    SearchHit,
    count_words,
    query_tokens,
    search_text,
)
from tavernlab.workspace.tooling import (
    Arguments,
    ToolContext,
    ToolResult,
    invalid_arguments,
    parse_tool_path,
    tool_error_from_storage,
)
from tavernlab.workspace.tools.common import refused_note, refused_structured, require_visible

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
    require_visible(ctx, path)
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
        content=content + refused_note(listing.refused),
        structured={"query": query, "hits": structured_hits, "searchedFiles": searched,
                    "skippedFiles": skipped, "truncated": truncated,
                    **refused_structured(listing.refused)},
        resource_refs=sorted({hit.path for hit, *_ in hits}),
    )


# --- read_file ------------------------------------------------------------------------------

#: The arguments of ``workspace.read_file`` (``skill.read`` forwards to it).
