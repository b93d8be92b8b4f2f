"""``workspace.read_file`` (docs/workspace.md) and its read records."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tavernlab.host import Run
from tavernlab.paths import WorkspacePath
from tavernlab.workspace.storage._fs import WriteGuard, sha256_hex

#: The ``put`` fixture (tests/conftest.py): a shell-like unchecked write.
Put = Callable[[Run, str, str], None]


LONG_LINE = ("Line 1 is longer than this reader can return safely, so only its beginning is "
             "shown. Search this file for specific text if you need a later section.")


def read(run: Run, **args: object) -> tuple[str, dict[str, object]]:
    """Call read_file successfully; returns content and structured."""
    result = run.call_tool("workspace.read_file", args)
    assert not result.is_error, result.content
    assert result.resource_refs == [args["path"]]
    return result.content, result.structured


def test_empty_file(run: Run, put: Put) -> None:
    """Acceptance 1."""
    put(run, "scratch/empty.md", "")
    content, structured = read(run, path="scratch/empty.md")
    assert content == "scratch/empty.md lines 1-0 of 0, chars 0 of 0, words 0 of 0\n"
    assert structured == {
        "path": "scratch/empty.md", "sha256": sha256_hex(b""), "startLine": 1, "endLine": 0,
        "totalLines": 0, "chars": 0, "totalChars": 0, "words": 0, "totalWords": 0,
        "lineTruncated": False, "truncated": False, "fullRead": True}


def test_full_read(run: Run, put: Put) -> None:
    text = "# Title\n\nhello world\n"
    put(run, "output/main.md", text)
    content, structured = read(run, path="output/main.md")
    assert content == ("output/main.md lines 1-4 of 4, chars 21 of 21, words 3 of 3\n"
                       "1 | # Title\n2 | \n3 | hello world\n4 | ")
    assert structured == {
        "path": "output/main.md", "sha256": sha256_hex(text.encode()), "startLine": 1, "endLine": 4,
        "totalLines": 4, "chars": 21, "totalChars": 21, "words": 3, "totalWords": 3,
        "lineTruncated": False, "truncated": False, "fullRead": True}


def test_window_of_a_three_line_file(run: Run, put: Put) -> None:
    """Acceptance 2."""
    put(run, "scratch/three.md", "one\ntwo words\nthree")
    content, structured = read(run, path="scratch/three.md", start_line=2, line_count=1)
    assert content == (
        "scratch/three.md lines 2-2 of 3, chars 9 of 19, words 2 of 4 (preview)\n"
        "2 | two words\n\n"
        "Preview ended before the file. Continue with start_line=3 and line_count=1.")
    assert content.endswith("Continue with start_line=3 and line_count=1.")
    assert structured == {
        "path": "scratch/three.md", "sha256": sha256_hex(b"one\ntwo words\nthree"), "startLine": 2,
        "endLine": 2, "totalLines": 3, "chars": 9, "totalChars": 19, "words": 2,
        "totalWords": 4, "lineTruncated": False, "truncated": True, "nextStartLine": 3,
        "fullRead": False}


def test_tail_window_is_a_preview_without_a_continuation(run: Run, put: Put) -> None:
    put(run, "scratch/three.md", "one\ntwo\nthree")
    content, structured = read(run, path="scratch/three.md", start_line=2)
    assert content == ("scratch/three.md lines 2-3 of 3, chars 9 of 13, words 2 of 3 (preview)\n"
                       "2 | two\n3 | three")
    assert "nextStartLine" not in structured
    assert structured["truncated"] is True


def test_explicit_whole_range_is_a_full_read(run: Run, put: Put) -> None:
    put(run, "scratch/three.md", "one\ntwo\nthree")
    _, structured = read(run, path="scratch/three.md", start_line=1, line_count=3)
    assert structured["fullRead"] is True
    _, structured = read(run, path="scratch/three.md", line_count=50)
    assert structured["fullRead"] is True


def test_long_single_line(run: Run, put: Put) -> None:
    """Acceptance 3."""
    put(run, "scratch/long.txt", "x" * 100_000)
    content, structured = read(run, path="scratch/long.txt")
    assert content == (
        "scratch/long.txt lines 1-1 of 1, chars 80000 of 100000, words 1 of 1 (preview)\n"
        f"1 | {'x' * 80_000}\n\n{LONG_LINE}")
    assert (structured["lineTruncated"], structured["truncated"], structured["fullRead"]) == (
        True, True, False)
    assert "nextStartLine" not in structured


def test_long_line_then_more_lines(run: Run, put: Put) -> None:
    put(run, "scratch/long.txt", "y" * 90_000 + "\nsecond")
    content, structured = read(run, path="scratch/long.txt")
    assert content.endswith(
        "\n\nPreview ended before the file. Continue with start_line=2 and line_count=1."
        f"\n\n{LONG_LINE}")
    assert structured["nextStartLine"] == 2


def test_budget_cut_continuation(run: Run, put: Put) -> None:
    put(run, "scratch/big.md", "\n".join(["z" * 99] * 1000))
    content, structured = read(run, path="scratch/big.md")
    assert content.split("\n", 1)[0] == (
        "scratch/big.md lines 1-800 of 1000, chars 79999 of 99999, words 800 of 1000 (preview)")
    assert content.endswith("Continue with start_line=801 and line_count=800.")
    assert structured["nextStartLine"] == 801
    numbered = content.split("\n")[1:3]
    assert numbered == [f"  1 | {'z' * 99}", f"  2 | {'z' * 99}"]


def test_line_cap(run: Run, put: Put) -> None:
    put(run, "scratch/many.md", "\n".join(str(i) for i in range(1, 1502)))
    content, structured = read(run, path="scratch/many.md")
    assert (structured["endLine"], structured["nextStartLine"]) == (1200, 1201)
    assert content.endswith("Continue with start_line=1201 and line_count=1200.")
    assert "\n   1 | 1\n" in content


@pytest.mark.parametrize("text", [
    "", "one\ntwo\nthree", "x" * 100_000, "y" * 90_000 + "\nsecond",
    "\n".join(["中文 words é \U0001f600"] * 3000), "é" * 100_000 + "\nz"])
@pytest.mark.parametrize("window", [{}, {"start_line": 2}, {"start_line": 1, "line_count": 2},
                                    {"start_line": 2999, "line_count": 5}, {"start_line": 9}])
def test_a_reread_is_the_first_read(run: Run, put: Put, text: str,
                                    window: dict[str, object]) -> None:
    """The second read of unchanged content (metrics known: only its window is decoded)
    returns exactly what the first returned."""
    # Content no other read saw: the first read measures it.
    put(run, "scratch/again.md", f"{text}\u2029reread {sorted(window.items())}")
    args = {"path": "scratch/again.md", **window}
    first, second = (run.call_tool("workspace.read_file", args) for _ in range(2))
    assert (second.content, second.structured, second.is_error, second.error_code) == (
        first.content, first.structured, first.is_error, first.error_code)


@pytest.mark.parametrize(("args", "message"), [
    ({"start_line": 5}, "start_line 5 is beyond total lines 3"),      # Acceptance 4
    ({"start_line": 0}, "start_line must be >= 1"),                    # Acceptance 8
    ({"line_count": 0}, "line_count must be >= 1"),
    ({"start_line": 4, "line_count": 2}, "start_line 4 is beyond total lines 3"),
])
def test_invalid_ranges(run: Run, args: dict[str, object], message: str, put: Put) -> None:
    put(run, "scratch/three.md", "a\nb\nc")
    result = run.call_tool("workspace.read_file", {"path": "scratch/three.md", **args})
    assert (result.is_error, result.error_code, result.content) == (
        True, "workspace.invalid_line_range", message)
    assert run.internals.main.records.get("scratch/three.md") is None


def test_unknown_argument(run: Run, put: Put) -> None:
    """Acceptance 5."""
    put(run, "output/main.md", "a")
    result = run.call_tool("workspace.read_file", {"path": "output/main.md", "encoding": "utf-8"})
    assert (result.error_code, result.content) == ("tool.invalid_arguments",
                                                   "encoding is not supported")
    mode = run.call_tool("workspace.read_file", {"path": "output/main.md", "mode": "raw"})
    assert (mode.error_code, mode.content) == ("tool.invalid_arguments", "mode is not supported")
    for post_v5 in ("file_path", "limit"):
        assert run.call_tool("workspace.read_file",
                             {"path": "scratch/a.md", post_v5: 1}).error_code == (
            "tool.invalid_arguments")


def test_a_required_path_is_trimmed(run: Run, put: Put) -> None:
    """Acceptance 7."""
    put(run, "output/main.md", "hello")
    result = run.call_tool("workspace.read_file", {"path": "  output/main.md  "})
    assert not result.is_error
    assert result.content == ("output/main.md lines 1-1 of 1, chars 5 of 5, words 1 of 1\n"
                              "1 | hello")
    assert (result.structured["path"], result.resource_refs) == (
        "output/main.md", ["output/main.md"])
    for empty in ("", "   "):
        missing = run.call_tool("workspace.read_file", {"path": empty})
        assert (missing.error_code, missing.content) == ("tool.invalid_arguments",
                                                         "path is required")


@pytest.mark.parametrize(("args", "message"), [
    ({"line_count": -2}, "line_count must be a non-negative integer"),
    ({"start_line": 1.5}, "start_line must be a non-negative integer"),
    ({"start_line": "2"}, "start_line must be a non-negative integer"),
    ({"start_line": -2}, "start_line must be a non-negative integer"),
    ({"start_line": 2.0}, "start_line must be a non-negative integer"),
    ({"start_line": None}, "start_line must be a non-negative integer"),
    ({"line_count": True}, "line_count must be a non-negative integer"),
    ({"start_line": -1, "line_count": -1}, "start_line must be a non-negative integer"),
])
def test_line_number_argument_errors(run: Run, put: Put, args: dict[str, object],
                                     message: str) -> None:
    """Acceptance 8: negative and non-integer line numbers are argument errors."""
    put(run, "scratch/three.md", "a\nb\nc")
    result = run.call_tool("workspace.read_file", {"path": "scratch/three.md", **args})
    assert (result.error_code, result.content) == ("tool.invalid_arguments", message)
    assert run.internals.main.records.get("scratch/three.md") is None


def test_checks_run_in_the_spec_order(run: Run, put: Put) -> None:
    """7.5: unknown keys, path, parse, visibility, line numbers, the read, the range."""
    put(run, "scratch/three.md", "a\nb\nc")
    cases: list[tuple[dict[str, object], str, str]] = [
        ({"path": "", "start_line": -1, "x": 1}, "tool.invalid_arguments", "x is not supported"),
        ({"path": " ", "start_line": -1}, "tool.invalid_arguments", "path is required"),
        ({"path": "/abs", "start_line": -1}, "workspace.invalid_path",
         "Invalid data: Workspace path must be relative"),
        ({"path": "run.json", "start_line": -1}, "workspace.path_not_visible",
         "Permission denied: `run.json` is not readable for this task."),
        ({"path": "scratch/none.md", "start_line": -1}, "tool.invalid_arguments",
         "start_line must be a non-negative integer"),
        ({"path": "scratch/none.md", "start_line": 0}, "workspace.file_not_found",
         "workspace path `scratch/none.md` was not found."),
        ({"path": "scratch/three.md", "start_line": 0}, "workspace.invalid_line_range",
         "start_line must be >= 1"),
    ]
    for args, code, message in cases:
        result = run.call_tool("workspace.read_file", args)
        assert (result.error_code, result.content) == (code, message), args


def test_prefixed_path_errors(run: Run) -> None:
    """Acceptance 9 and 10."""
    absolute = run.call_tool("workspace.read_file", {"path": "/output/main.md"})
    assert (absolute.error_code, absolute.content) == (
        "workspace.invalid_path", "Invalid data: Workspace path must be relative")
    assert absolute.structured == {"error": {
        "code": "workspace.invalid_path",
        "message": "Invalid data: Workspace path must be relative"}}
    hidden = run.call_tool("workspace.read_file", {"path": "manifest.json"})
    assert (hidden.error_code, hidden.content) == (
        "workspace.path_not_visible",
        "Permission denied: `manifest.json` is not readable for this task.")
    written = run.call_tool("workspace.write_file", {"path": "tool-results/x.md", "content": "x"})
    assert (written.error_code, written.content) == (
        "workspace.path_not_writable",
        "Permission denied: `tool-results/x.md` is not writable for this task.")
    assert written.structured["error"]["message"] == written.content


def test_directory_and_missing_file(run: Run) -> None:
    """Acceptance 6."""
    result = run.call_tool("workspace.read_file", {"path": "scratch"})
    assert (result.error_code, result.content) == (
        "workspace.path_is_directory",
        "workspace path `scratch` is a directory; call workspace_list_files to list its "
        "contents and re-target a specific file.")
    missing = run.call_tool("workspace.read_file", {"path": "scratch/none.md"})
    assert (missing.error_code, missing.content) == (
        "workspace.file_not_found", "workspace path `scratch/none.md` was not found.")


def test_binary_file(run: Run) -> None:
    run.internals.scope.write_file(WorkspacePath("scratch/b.bin"), b"\xff\x00",
                                   WriteGuard.unchecked())
    result = run.call_tool("workspace.read_file", {"path": "scratch/b.bin"})
    assert (result.error_code, result.content) == ("workspace.file_not_text",
                                                   "workspace file `scratch/b.bin` is not UTF-8 "
                                                   "text")


def test_macros_are_not_expanded_in_ordinary_files(run: Run, put: Put) -> None:
    put(run, "scratch/m.md", "{{char}} and {{user}}")
    content, _ = read(run, path="scratch/m.md")
    assert content.endswith("1 | {{char}} and {{user}}")


def test_read_only_roots_are_readable(run: Run) -> None:
    run.call_tool("workspace.list_files", {"path": "output"}, call_id="call_x")
    stored = f"tool-results/{run.internals.main.id}/round-001-call_"
    listing = run.call_tool("workspace.list_files",
                            {"path": f"tool-results/{run.internals.main.id}"})
    path = listing.structured["entries"][0]["path"]
    assert path.startswith(stored)
    _, structured = read(run, path=path)
    assert structured["fullRead"] is True


# --- read records (6.1) -------------------------------------------------------------------------


def test_full_reads_store_full_records(run: Run, put: Put) -> None:
    put(run, "scratch/a.md", "a\nb")
    read(run, path="scratch/a.md")
    record = run.internals.main.records.get("scratch/a.md")
    assert record is not None
    assert (record.sha256, record.full_read, record.observed_texts,
            record.patch_requires_full_read) == (sha256_hex(b"a\nb"), True, [], False)


def test_partial_reads_accumulate(run: Run, put: Put) -> None:
    put(run, "scratch/a.md", "one\ntwo\nthree\nfour")
    read(run, path="scratch/a.md", line_count=1)
    read(run, path="scratch/a.md", start_line=3, line_count=2)
    record = run.internals.main.records.get("scratch/a.md")
    assert record is not None
    assert (record.full_read, record.observed_texts) == (False, ["one", "three\nfour"])
    assert record.sha256 == sha256_hex(b"one\ntwo\nthree\nfour")


def test_a_changed_digest_resets_the_record_but_keeps_the_flag(run: Run, put: Put) -> None:
    put(run, "scratch/a.md", "one\ntwo\nthree")
    read(run, path="scratch/a.md", line_count=1)
    refused = run.call_tool("workspace.apply_patch", {"path": "scratch/a.md",
                                                      "old_string": "two", "new_string": "2"})
    assert refused.error_code == "workspace.patch_requires_full_read"
    put(run, "scratch/a.md", "uno\ntwo\nthree")   # the shell edits the file
    read(run, path="scratch/a.md", start_line=2, line_count=1)
    record = run.internals.main.records.get("scratch/a.md")
    assert record is not None
    assert (record.sha256, record.full_read, record.observed_texts,
            record.patch_requires_full_read) == (sha256_hex(b"uno\ntwo\nthree"), False,
                                                 ["two"], True)
    # a full read clears everything
    read(run, path="scratch/a.md")
    record = run.internals.main.records.get("scratch/a.md")
    assert record is not None
    assert (record.full_read, record.patch_requires_full_read) == (True, False)


def test_a_partial_read_after_a_full_read_of_the_same_content_keeps_it_full(run: Run,
                                                                           put: Put) -> None:
    """tavernlab reading of 6.1: a partial read adds nothing to what a full read already saw."""
    put(run, "scratch/a.md", "one\ntwo")
    read(run, path="scratch/a.md")
    read(run, path="scratch/a.md", start_line=2)
    record = run.internals.main.records.get("scratch/a.md")
    assert record is not None and record.full_read


def test_records_belong_to_the_invocation(run: Run, put: Put) -> None:
    put(run, "scratch/a.md", "one")
    helper = run.start_subagent("helper")
    run.call_tool("workspace.read_file", {"path": "scratch/a.md"}, invocation=helper)
    assert run.internals.main.records.get("scratch/a.md") is None
    refused = run.call_tool("workspace.write_file", {"path": "scratch/a.md", "content": "x"})
    assert refused.error_code == "workspace.write_requires_read"
    ok = run.call_tool("workspace.write_file", {"path": "scratch/a.md", "content": "x"},
                       invocation=helper)
    assert not ok.is_error


def test_shell_reads_create_no_records(run: Run, put: Put) -> None:
    put(run, "scratch/a.md", "one")
    run.internals.scope.read_text(WorkspacePath("scratch/a.md"))
    assert run.internals.main.records.get("scratch/a.md") is None
