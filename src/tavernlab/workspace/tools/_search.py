"""``workspace.search_files`` (docs/workspace.md)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tavernlab.errors import (
    ToolError,
    WorkspaceError,
)
from tavernlab.paths import WorkspacePath
from tavernlab.workspace.scope import ScopedWorkspaceFs
from tavernlab.workspace.storage import sha256_hex
from tavernlab.workspace.text import SearchHit, count_words, query_tokens, search_text
from tavernlab.workspace.tools._common import (
    optional_path,
    refused_note,
    refused_structured,
    require_visible,
)
from tavernlab.workspace.tools._tooling import (
    Arguments,
    ToolContext,
    ToolResult,
    tool_error_from_storage,
)

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


@dataclass(slots=True)
class _Found:
    """What the traversal collected: each hit with its file's digest, the counters, and
    whether the result is truncated."""

    hits: list[tuple[SearchHit, str]] = field(default_factory=list)
    searched: int = 0
    skipped: int = 0
    truncated: bool = False


def search_files(ctx: ToolContext, args: Arguments) -> ToolResult:
    """``workspace.search_files``: plain-text token search over visible files.

    The trimmed ``query`` is what the content and ``structured.query`` show; a query without
    tokens (``?!``) matches nothing and gets the no-hit answer. tavernlab choices: the
    default scope is every visible root (``tool-results`` and ``skills`` included); files
    over 8 MiB are skipped and counted like non-UTF-8 files; symlinks and special files met
    by the traversal are skipped and reported (``structured.refusedEntries``).
    """
    query = args.required_text("query")
    limit = args.integer("limit", default=SEARCH_DEFAULT_LIMIT)
    context = args.integer("context_lines", default=SEARCH_DEFAULT_CONTEXT)
    if limit < 1:
        raise ToolError("workspace.search_limit_invalid", "limit must be >= 1")
    if limit > SEARCH_MAX_LIMIT:
        raise ToolError("workspace.search_limit_too_large", f"limit must be <= {SEARCH_MAX_LIMIT}")
    if context > SEARCH_MAX_CONTEXT:
        raise ToolError("workspace.search_context_too_large",
                        f"context_lines must be <= {SEARCH_MAX_CONTEXT}")
    path = optional_path(args)
    require_visible(ctx, path)
    try:
        listing = ctx.scope.list_files(path, SEARCH_MAX_DEPTH, SEARCH_MAX_LISTED)
    except WorkspaceError as exc:
        raise tool_error_from_storage(exc, path.text if path else "",
                                      not_found_code="workspace.path_not_found") from None
    files = sorted(e.path for e in listing.entries if e.kind == "file")
    found = _search(ctx.scope, files[:SEARCH_MAX_FILES], query_tokens(query), limit, context)
    found.truncated = found.truncated or listing.truncated or len(files) > SEARCH_MAX_FILES
    hits = [_hit_json(hit, digest) for hit, digest in found.hits]
    return ToolResult(
        content=_content(query, hits, found) + refused_note(listing.refused),
        structured={"query": query, "hits": hits, "searchedFiles": found.searched,
                    "skippedFiles": found.skipped, "truncated": found.truncated,
                    **refused_structured(listing.refused)},
        resource_refs=[hit["ref"] for hit in hits],
    )


def _search(scope: ScopedWorkspaceFs, files: list[str], tokens: list[str], limit: int,
            context: int) -> _Found:
    """Steps 1 to 5 over ``files``: each file gives at most ``limit`` windows; across files
    the hits are sorted by score, path and start line and cut to ``limit``. Only that cut
    makes the result truncated here (one file never does on its own)."""
    found = _Found()
    for file_path in files:
        try:
            data = scope.read_file(WorkspacePath(file_path), SEARCH_MAX_FILE_BYTES)
            text = data.decode("utf-8")
        except (UnicodeDecodeError, WorkspaceError):
            found.skipped += 1
            continue
        found.searched += 1
        hits, _ = search_text(file_path, text, tokens, limit=limit, context_lines=context)
        if hits:
            digest = sha256_hex(data)
            found.hits.extend((hit, digest) for hit in hits)
    found.hits.sort(key=lambda h: (-h[0].score, h[0].path, h[0].start_line))
    found.truncated = len(found.hits) > limit
    del found.hits[limit:]
    return found


def _hit_json(hit: SearchHit, digest: str) -> dict[str, Any]:
    """One structured hit: ``chars``/``words`` measure the snippet as returned (with its
    ``n | `` prefixes); ``sha256`` is the whole file's digest."""
    return {
        "path": hit.path, "score": hit.score, "startLine": hit.start_line,
        "endLine": hit.end_line, "snippet": hit.snippet, "chars": len(hit.snippet),
        "words": count_words(hit.snippet), "sha256": digest,
        "ref": f"workspace:{hit.path}#L{hit.start_line}-L{hit.end_line}",
    }


def _content(query: str, hits: list[dict[str, Any]], found: _Found) -> str:
    """The content of 7.4: the header (``location`` for one hit, ``locations`` for more) and
    the hits, or in their place the no-hit line; then the truncation and skipped-files
    notes."""
    if hits:
        noun = "location" if len(hits) == 1 else "locations"
        content = (f"Search `{query}` matched {len(hits)} workspace {noun}. Use "
                   "workspace_read_file with path and start_line/line_count to read exact text."
                   + "".join(f"\n\n{h['path']} score {h['score']:.3f} ref {h['ref']}\n"
                             f"{h['snippet']}" for h in hits))
    else:
        content = f"No visible workspace files matched `{query}`."
    if found.truncated:
        content += "\n\nResults were truncated."
    if found.skipped == 1:
        content += "\n\nSkipped 1 file that could not be read as text."
    elif found.skipped > 1:
        content += f"\n\nSkipped {found.skipped} files that could not be read as text."
    return content
