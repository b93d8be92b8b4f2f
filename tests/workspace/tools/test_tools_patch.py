"""``workspace.apply_patch`` (docs/workspace.md) and its read-record rules."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from typing import Any

import pytest

from tavernlab.host import Run
from tavernlab.paths import WorkspacePath
from tavernlab.workspace.storage._fs import WriteGuard, sha256_hex
from tavernlab.workspace.tools import (
    PATCH_EMPTY,
    PATCH_NO_CHANGE,
    PATCH_NOT_FOUND,
    PATCH_REQUIRES_FULL_READ,
    PATCH_REQUIRES_READ,
    PATCH_STALE,
)
from tavernlab.workspace.tools._writing import MAX_WRITE_BYTES

#: The ``put`` fixture (tests/conftest.py): a shell-like unchecked write.
Put = Callable[[Run, str, str], None]


def patch(run: Run, path: str, old: str, new: str, **extra: Any) -> tuple[str, str | None]:
    """Call apply_patch; returns (content, error code)."""
    result = run.call_tool("workspace.apply_patch",
                           {"path": path, "old_string": old, "new_string": new, **extra})
    return result.content, result.error_code


def disk(run: Run, path: str) -> str:
    """The file's text on disk."""
    return (run.workspace_dir / path).read_text(encoding="utf-8")


def flagged(run: Run, path: str) -> bool:
    """Whether the path's read record requires a full read before the next patch."""
    record = run.internals.main.records.get(path)
    assert record is not None
    return record.patch_requires_full_read


def test_the_acceptance_sequence_of_a_partial_read(run: Run, put: Put) -> None:
    """Acceptance 1-3 with a partial record of the first five characters."""
    put(run, "scratch/a.md", "alpha beta gamma")
    run.internals.main.records.partial("scratch/a.md", sha256_hex(b"alpha beta gamma"), "alpha")
    assert patch(run, "scratch/a.md", "delta", "x") == (
        PATCH_REQUIRES_FULL_READ, "workspace.patch_requires_full_read")
    assert patch(run, "scratch/a.md", "alpha", "omega") == (
        PATCH_REQUIRES_FULL_READ, "workspace.patch_requires_full_read")
    assert disk(run, "scratch/a.md") == "alpha beta gamma"
    run.call_tool("workspace.read_file", {"path": "scratch/a.md"})
    content, code = patch(run, "scratch/a.md", "alpha", "omega")
    assert code is None
    assert content == "Patched scratch/a.md with 1 replacement(s); file now has 16 chars / 3 words."
    assert disk(run, "scratch/a.md") == "omega beta gamma"


def test_the_acceptance_sequence_through_read_file(run: Run, put: Put) -> None:
    """The same facts when the partial read is a real ``read_file`` window."""
    put(run, "scratch/a.md", "alpha beta gamma\nzeta")
    run.call_tool("workspace.read_file", {"path": "scratch/a.md", "line_count": 1})
    assert patch(run, "scratch/a.md", "delta", "x")[1] == "workspace.patch_requires_full_read"
    assert patch(run, "scratch/a.md", "alpha", "omega")[1] == "workspace.patch_requires_full_read"
    run.call_tool("workspace.read_file", {"path": "scratch/a.md"})
    assert patch(run, "scratch/a.md", "alpha", "omega")[1] is None
    assert disk(run, "scratch/a.md") == "omega beta gamma\nzeta"


def test_success_payload(run: Run, put: Put) -> None:
    put(run, "scratch/a.md", "one two two three")
    run.call_tool("workspace.read_file", {"path": "scratch/a.md"})
    result = run.call_tool("workspace.apply_patch", {
        "path": "scratch/a.md", "old_string": "two", "new_string": "2", "replace_all": True})
    assert result.content == ("Patched scratch/a.md with 2 replacement(s); file now has 13 chars "
                              "/ 4 words.")
    assert result.structured == {"path": "scratch/a.md", "chars": 13, "words": 4,
                                 "oldSha256": sha256_hex(b"one two two three"),
                                 "sha256": sha256_hex(b"one 2 2 three"), "replacements": 2}
    assert result.resource_refs == ["scratch/a.md"]
    assert disk(run, "scratch/a.md") == "one 2 2 three"
    # the record follows the new content: a second patch needs no new read
    assert patch(run, "scratch/a.md", "one", "1")[1] is None
    assert disk(run, "scratch/a.md") == "1 2 2 three"


@pytest.mark.parametrize(("old", "new", "code", "message"), [
    ("", "x", "workspace.patch_empty_old_string", PATCH_EMPTY),
    ("same", "same", "workspace.patch_no_change", PATCH_NO_CHANGE),
])
def test_step_1_comes_before_the_path(run: Run, old: str, new: str, code: str,
                                      message: str) -> None:
    for path in ("scratch/missing.md", "../x", "run.json"):
        assert patch(run, path, old, new) == (message, code)


def test_step_2_path_errors(run: Run) -> None:
    assert patch(run, "../x.md", "a", "b")[1] == "workspace.invalid_path"
    assert patch(run, "tool-results/x.json", "a", "b")[1] == "workspace.path_not_writable"
    assert patch(run, "scratch/none.md", "a", "b") == (
        "workspace path `scratch/none.md` was not found.", "workspace.file_not_found")


def test_step_3_requires_a_read(run: Run, put: Put) -> None:
    put(run, "scratch/a.md", "alpha")
    assert patch(run, "scratch/a.md", "alpha", "x") == (PATCH_REQUIRES_READ,
                                                        "workspace.patch_requires_read")
    assert disk(run, "scratch/a.md") == "alpha"


def test_steps_4_and_5_replace_all_after_a_partial_read(run: Run, put: Put) -> None:
    put(run, "scratch/a.md", "aa\nbb")
    run.call_tool("workspace.read_file", {"path": "scratch/a.md", "line_count": 1})
    assert not flagged(run, "scratch/a.md")
    assert patch(run, "scratch/a.md", "aa", "x", replace_all=True)[1] == (
        "workspace.patch_requires_full_read")
    assert flagged(run, "scratch/a.md")
    # step 4: the flag alone refuses an otherwise fine patch
    assert patch(run, "scratch/a.md", "aa", "x")[1] == "workspace.patch_requires_full_read"
    assert disk(run, "scratch/a.md") == "aa\nbb"


def test_step_7_stale_partial_records_are_flagged(run: Run, put: Put) -> None:
    put(run, "scratch/a.md", "aa\nbb")
    run.call_tool("workspace.read_file", {"path": "scratch/a.md", "line_count": 1})
    put(run, "scratch/a.md", "aa\nbb\ncc")
    assert patch(run, "scratch/a.md", "aa", "x") == (PATCH_STALE, "workspace.patch_stale_file")
    assert flagged(run, "scratch/a.md")
    # a partial read of the new content keeps the flag (6.1)
    run.call_tool("workspace.read_file", {"path": "scratch/a.md", "line_count": 1})
    assert flagged(run, "scratch/a.md")
    assert patch(run, "scratch/a.md", "aa", "x")[1] == "workspace.patch_requires_full_read"


def test_step_7_stale_full_records(run: Run, put: Put) -> None:
    put(run, "scratch/a.md", "alpha")
    run.call_tool("workspace.read_file", {"path": "scratch/a.md"})
    put(run, "scratch/a.md", "alpha beta")      # the shell edits the file
    assert patch(run, "scratch/a.md", "alpha", "x") == (PATCH_STALE,
                                                        "workspace.patch_stale_file")
    assert disk(run, "scratch/a.md") == "alpha beta"
    run.call_tool("workspace.read_file", {"path": "scratch/a.md"})
    assert patch(run, "scratch/a.md", "alpha", "x")[1] is None


def test_step_8_occurrences(run: Run, put: Put) -> None:
    put(run, "scratch/a.md", "aaaa b b b")
    run.call_tool("workspace.read_file", {"path": "scratch/a.md"})
    assert patch(run, "scratch/a.md", "zzz", "x") == (PATCH_NOT_FOUND,
                                                      "workspace.patch_old_string_not_found")
    assert patch(run, "scratch/a.md", "b", "x") == (
        "old_string matched 3 times; provide more context or set replace_all=true",
        "workspace.patch_old_string_not_unique")
    # occurrences are counted without overlap: `aa` in `aaaa` is 2, not 3
    assert patch(run, "scratch/a.md", "aa", "x") == (
        "old_string matched 2 times; provide more context or set replace_all=true",
        "workspace.patch_old_string_not_unique")
    assert disk(run, "scratch/a.md") == "aaaa b b b"
    # a full record is never flagged
    record = run.internals.main.records.get("scratch/a.md")
    assert record is not None and not record.patch_requires_full_read
    content, code = patch(run, "scratch/a.md", "aa", "x", replace_all=True)
    assert code is None and "with 2 replacement(s)" in content
    assert disk(run, "scratch/a.md") == "xx b b b"


def test_step_8_flags_partial_records(run: Run, put: Put) -> None:
    put(run, "scratch/a.md", "key key\nother key")
    run.call_tool("workspace.read_file", {"path": "scratch/a.md", "line_count": 1})
    assert patch(run, "scratch/a.md", "key", "x")[1] == "workspace.patch_old_string_not_unique"
    assert flagged(run, "scratch/a.md")


def test_step_9_guard_conflict(run: Run, put: Put) -> None:
    """A shell write landing between the patch's read and its guarded write."""
    put(run, "scratch/a.md", "alpha")
    run.call_tool("workspace.read_file", {"path": "scratch/a.md"})
    calls = 0

    def race() -> None:
        nonlocal calls
        calls += 1
        if calls == 2:  # 1: the patch's read, 2: its guarded write
            run.internals.fs.write_text(WorkspacePath("scratch/a.md"), "racer",
                                        WriteGuard.unchecked())

    run.internals.main.scope.check = race
    assert patch(run, "scratch/a.md", "alpha", "omega") == (PATCH_STALE,
                                                            "workspace.patch_stale_file")
    assert disk(run, "scratch/a.md") == "racer"


def test_a_patch_after_a_partial_read_updates_the_observed_texts(run: Run, put: Put) -> None:
    put(run, "scratch/a.md", "alpha beta\nsecond\nthird")
    run.call_tool("workspace.read_file", {"path": "scratch/a.md", "line_count": 1})
    run.call_tool("workspace.read_file", {"path": "scratch/a.md", "start_line": 3})
    assert patch(run, "scratch/a.md", "alpha", "omega")[1] is None
    record = run.internals.main.records.get("scratch/a.md")
    assert record is not None
    assert (record.full_read, record.observed_texts, record.sha256) == (
        False, ["omega beta", "third"], sha256_hex(b"omega beta\nsecond\nthird"))
    # the new text is patchable without another read; text never observed is not
    assert patch(run, "scratch/a.md", "omega beta", "done")[1] is None
    assert patch(run, "scratch/a.md", "second", "2")[1] == "workspace.patch_requires_full_read"
    assert disk(run, "scratch/a.md") == "done\nsecond\nthird"


def test_a_successful_patch_clears_the_flag(run: Run, put: Put) -> None:
    put(run, "scratch/a.md", "alpha\nbeta")
    run.call_tool("workspace.read_file", {"path": "scratch/a.md", "line_count": 1})
    run.internals.main.records.flag("scratch/a.md")
    run.internals.main.records.patched("scratch/a.md", sha256_hex(b"alpha\nbeta"), "x", "x", False)
    assert not flagged(run, "scratch/a.md")
    assert patch(run, "scratch/a.md", "alpha", "omega")[1] is None


def test_patched_text_files_become_the_candidate(run: Run) -> None:
    run.call_tool("workspace.write_file", {"path": "scratch/a.md", "content": "alpha"})
    run.call_tool("workspace.write_file", {"path": "scratch/b.json", "content": "{\"a\": 1}"})
    run.call_tool("workspace.read_file", {"path": "scratch/b.json"})
    assert patch(run, "scratch/b.json", "1", "2")[1] is None
    assert run.internals.tracker.candidate == "scratch/a.md"
    assert patch(run, "scratch/a.md", "alpha", "beta")[1] is None
    assert run.internals.tracker.candidate == "scratch/a.md"


# --- the write limit ---------------------------------------------------------------------------


def too_large(size: int) -> str:
    return (f"the file would be {size} bytes, over the 8388608-byte write limit; split the "
            "text across several files")


def test_a_replace_all_over_the_write_limit_is_refused_in_bounded_memory(run: Run,
                                                                         put: Put) -> None:
    """A ~10 KB new_string over 2,000 matches would make a 20 MB file: the size is computed
    from the counts and the patch is refused before the result is built."""
    text = "x " * 2000
    put(run, "scratch/big.md", text)
    run.call_tool("workspace.read_file", {"path": "scratch/big.md"})
    new = "y" * 10_240
    tracemalloc.start()
    try:
        content, code = patch(run, "scratch/big.md", "x", new, replace_all=True)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert (content, code) == (too_large(4000 + 2000 * (10_240 - 1)), "workspace.write_too_large")
    assert peak < 2 * 1024 * 1024  # the refused result alone would have been 20 MB
    assert disk(run, "scratch/big.md") == text
    assert not flagged(run, "scratch/big.md")
    assert patch(run, "scratch/big.md", "x", "z", replace_all=True)[1] is None


def test_the_write_limit_is_inclusive(run: Run) -> None:
    path = WorkspacePath("scratch/edge.md")
    text = "a" * (MAX_WRITE_BYTES - 2) + "b"
    run.internals.scope.write_text(path, text, WriteGuard.unchecked())
    run.internals.main.records.full(path.text, sha256_hex(text.encode()))
    assert patch(run, path.text, "b", "cc")[1] is None  # exactly 8 MiB
    assert (run.workspace_dir / path.text).stat().st_size == MAX_WRITE_BYTES
    assert patch(run, path.text, "cc", "\u00e9d") == (  # one more byte in UTF-8
        too_large(MAX_WRITE_BYTES + 1), "workspace.write_too_large")
    assert (run.workspace_dir / path.text).read_bytes().endswith(b"acc")


def test_the_required_path_is_trimmed(run: Run, put: Put) -> None:
    put(run, "scratch/a.md", "alpha")
    run.call_tool("workspace.read_file", {"path": "scratch/a.md"})
    assert patch(run, " scratch/a.md ", "alpha", "beta") == (
        "Patched scratch/a.md with 1 replacement(s); file now has 4 chars / 1 words.", None)
    assert patch(run, "", "beta", "gamma") == ("path is required", "tool.invalid_arguments")
    assert disk(run, "scratch/a.md") == "beta"
