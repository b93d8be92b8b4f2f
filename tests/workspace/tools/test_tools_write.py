"""``workspace.write_file`` (docs/workspace.md) and its read-record rules."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tavernlab.errors import WriteConflict
from tavernlab.host import Run
from tavernlab.paths import WorkspacePath
from tavernlab.workspace.storage._fs import WriteGuard, sha256_hex
from tavernlab.workspace.tools._writing import MAX_WRITE_BYTES

#: The ``put`` fixture (tests/conftest.py): a shell-like unchecked write.
Put = Callable[[Run, str, str], None]


REQUIRES_READ = "file already exists; read it with workspace_read_file before rewriting it"
STALE = "file changed since you last read or wrote it. Read the file again before rewriting it."
GONE = ("file changed since you last read or wrote it and is no longer present. Read the parent "
        "directory before writing again.")


def write(run: Run, path: str, content: str, mode: str | None = None) -> tuple[str, str | None]:
    """Call write_file; returns (content, error code)."""
    args = {"path": path, "content": content}
    if mode is not None:
        args["mode"] = mode
    result = run.call_tool("workspace.write_file", args)
    return result.content, result.error_code


def disk(run: Run, path: str) -> str:
    """The file's text on disk."""
    return (run.workspace_dir / path).read_text(encoding="utf-8")


def test_a_new_file_needs_no_read(run: Run) -> None:
    """Acceptance 3, with the success text and payload."""
    result = run.call_tool("workspace.write_file",
                           {"path": "scratch/new/deep/a.md", "content": "  hello world\n"})
    assert (result.is_error, result.content) == (
        False, "Wrote 14 chars / 2 words to scratch/new/deep/a.md.")
    assert result.structured == {"path": "scratch/new/deep/a.md", "mode": "replace",
                                 "chars": 14, "words": 2, "sha256": sha256_hex(b"  hello world\n")}
    assert result.resource_refs == ["scratch/new/deep/a.md"]
    assert disk(run, "scratch/new/deep/a.md") == "  hello world\n"   # raw, never trimmed


def test_an_existing_file_needs_a_read(run: Run, put: Put) -> None:
    """Acceptance 1."""
    put(run, "output/main.md", "old")
    assert write(run, "output/main.md", "new") == (REQUIRES_READ, "workspace.write_requires_read")
    assert disk(run, "output/main.md") == "old"


def test_a_shell_change_after_the_read_is_stale(run: Run, put: Put) -> None:
    """Acceptance 2."""
    put(run, "output/main.md", "old")
    run.call_tool("workspace.read_file", {"path": "output/main.md"})
    put(run, "output/main.md", "changed by the shell")
    assert write(run, "output/main.md", "new") == (STALE, "workspace.write_stale_file")
    assert disk(run, "output/main.md") == "changed by the shell"
    run.call_tool("workspace.read_file", {"path": "output/main.md"})
    assert write(run, "output/main.md", "new") == (
        "Wrote 3 chars / 1 words to output/main.md.", None)
    assert disk(run, "output/main.md") == "new"


def test_a_partial_read_is_enough_for_replace(run: Run, put: Put) -> None:
    put(run, "scratch/a.md", "one\ntwo")
    run.call_tool("workspace.read_file", {"path": "scratch/a.md", "line_count": 1})
    assert write(run, "scratch/a.md", "fresh")[1] is None
    assert disk(run, "scratch/a.md") == "fresh"


def test_a_replace_write_records_its_own_content(run: Run) -> None:
    assert write(run, "scratch/a.md", "v1")[1] is None
    assert write(run, "scratch/a.md", "v2")[1] is None
    record = run.internals.main.records.get("scratch/a.md")
    assert record is not None
    assert (record.sha256, record.full_read) == (sha256_hex(b"v2"), True)
    assert disk(run, "scratch/a.md") == "v2"


def test_a_file_deleted_after_the_read_is_written_as_new(run: Run, put: Put) -> None:
    put(run, "scratch/a.md", "one")
    run.call_tool("workspace.read_file", {"path": "scratch/a.md"})
    run.internals.scope.remove(WorkspacePath("scratch/a.md"), recursive=False)
    assert write(run, "scratch/a.md", "two")[1] is None
    assert disk(run, "scratch/a.md") == "two"


def test_guard_conflicts_map_to_the_same_codes(run: Run, put: Put) -> None:
    """A shell change that lands right before the guarded write (the view's check hook runs
    once, before the one hold of the lock in which the tool looks at the file and writes it)
    is caught by the guard."""
    put(run, "scratch/a.md", "one")
    run.call_tool("workspace.read_file", {"path": "scratch/a.md"})
    fs = run.internals.fs
    calls = 0

    def race(effect: str) -> None:
        nonlocal calls
        calls += 1
        if calls == 1:  # the guarded write's look and write, under one hold
            if effect == "change":
                fs.write_text(WorkspacePath("scratch/a.md"), "racer", WriteGuard.unchecked())
            elif effect == "delete":
                fs.remove(WorkspacePath("scratch/a.md"), recursive=False)
            else:
                fs.write_text(WorkspacePath("scratch/new.md"), "racer", WriteGuard.unchecked())

    run.internals.main.scope.check = lambda: race("change")
    assert write(run, "scratch/a.md", "mine") == (STALE, "workspace.write_stale_file")
    assert disk(run, "scratch/a.md") == "racer"
    run.internals.main.scope.check = None
    run.call_tool("workspace.read_file", {"path": "scratch/a.md"})
    calls = 0
    run.internals.main.scope.check = lambda: race("delete")
    assert write(run, "scratch/a.md", "mine")[1] is None  # gone: written as a new file
    assert disk(run, "scratch/a.md") == "mine"
    calls = 0
    run.internals.main.scope.check = lambda: race("create")
    assert write(run, "scratch/new.md", "mine") == (REQUIRES_READ,
                                                     "workspace.write_requires_read")
    assert disk(run, "scratch/new.md") == "racer"


def test_a_stale_conflict_without_a_file_is_the_gone_message(
        run: Run, put: Put, monkeypatch: pytest.MonkeyPatch) -> None:
    """A ``stale`` conflict that found no file maps to upstream's "no longer present" text."""
    put(run, "scratch/a.md", "one")
    run.call_tool("workspace.read_file", {"path": "scratch/a.md"})
    scope = run.internals.main.scope

    def gone(path: WorkspacePath, text: str, sha256: str | None) -> str:
        raise WriteConflict(path.text, "stale", expected_sha256=sha256)

    monkeypatch.setattr(scope, "replace_text", gone)
    assert write(run, "scratch/a.md", "mine") == (GONE, "workspace.write_stale_file")
    assert disk(run, "scratch/a.md") == "one"


def test_append(run: Run, put: Put) -> None:
    result = run.call_tool("workspace.write_file",
                           {"path": "scratch/log.md", "content": "one", "mode": "append"})
    assert (result.content, result.structured) == (
        "Appended 3 chars / 1 words to scratch/log.md.",
        {"path": "scratch/log.md", "mode": "append", "chars": 3, "words": 1,
         "sha256": sha256_hex(b"one")})
    put(run, "scratch/log.md", "shell ")      # appends need no read, even after a shell edit
    result = run.call_tool("workspace.write_file",
                           {"path": "scratch/log.md", "content": "two 二", "mode": "append"})
    assert result.content == "Appended 11 chars / 3 words to scratch/log.md."
    assert result.structured["sha256"] == sha256_hex("shell two 二".encode())
    assert disk(run, "scratch/log.md") == "shell two 二"


def test_append_creates_parent_directories(run: Run) -> None:
    result = run.call_tool("workspace.write_file",
                           {"path": "scratch/new/deep/log.md", "content": "x", "mode": "append"})
    assert (result.is_error, result.content) == (
        False, "Appended 1 chars / 1 words to scratch/new/deep/log.md.")
    assert disk(run, "scratch/new/deep/log.md") == "x"


def test_append_to_a_binary_file(run: Run) -> None:
    run.internals.scope.write_file(WorkspacePath("scratch/b.md"), b"\xff", WriteGuard.unchecked())
    content, code = write(run, "scratch/b.md", "x", "append")
    assert (code, content) == ("workspace.file_not_text",
                               "workspace file `scratch/b.md` is not UTF-8 text")
    assert (run.workspace_dir / "scratch/b.md").read_bytes() == b"\xff"


@pytest.mark.parametrize("mode", ["prepend", "", "Replace", "APPEND"])
def test_mode_invalid(run: Run, mode: str) -> None:
    assert write(run, "scratch/a.md", "x", mode) == ("mode must be `replace` or `append`",
                                                      "workspace.write_mode_invalid")
    assert not (run.workspace_dir / "scratch/a.md").exists()


def test_writing_under_a_file_fails_without_changes(run: Run, put: Put) -> None:
    put(run, "scratch/f.md", "f")
    content, code = write(run, "scratch/f.md/x.md", "x")
    assert code == "workspace.file_io"
    assert "Not a directory" in content
    assert disk(run, "scratch/f.md") == "f"


# --- read records of writes and appends (6.1) ----------------------------------------------------


def test_appending_to_a_new_file_records_it_in_full(run: Run) -> None:
    write(run, "scratch/log.md", "one", "append")
    record = run.internals.main.records.get("scratch/log.md")
    assert record is not None and (record.sha256, record.full_read) == (sha256_hex(b"one"), True)
    assert write(run, "scratch/log.md", "replaced")[1] is None


def test_appending_after_a_full_read_keeps_the_record_full(run: Run, put: Put) -> None:
    put(run, "scratch/log.md", "one")
    run.call_tool("workspace.read_file", {"path": "scratch/log.md"})
    write(run, "scratch/log.md", "+two", "append")
    record = run.internals.main.records.get("scratch/log.md")
    assert record is not None
    assert (record.sha256, record.full_read) == (sha256_hex(b"one+two"), True)
    assert write(run, "scratch/log.md", "replaced")[1] is None


def test_appending_without_a_record_creates_none(run: Run, put: Put) -> None:
    put(run, "scratch/log.md", "one")
    write(run, "scratch/log.md", "+two", "append")
    assert run.internals.main.records.get("scratch/log.md") is None
    assert write(run, "scratch/log.md", "x") == (REQUIRES_READ, "workspace.write_requires_read")


def test_appending_after_a_stale_full_read_keeps_the_old_record(run: Run, put: Put) -> None:
    put(run, "scratch/log.md", "one")
    run.call_tool("workspace.read_file", {"path": "scratch/log.md"})
    put(run, "scratch/log.md", "shell")
    write(run, "scratch/log.md", "+two", "append")
    record = run.internals.main.records.get("scratch/log.md")
    assert record is not None and record.sha256 == sha256_hex(b"one")
    assert write(run, "scratch/log.md", "x") == (STALE, "workspace.write_stale_file")
    assert disk(run, "scratch/log.md") == "shell+two"


def test_appending_after_a_partial_read_keeps_the_partial_record(run: Run, put: Put) -> None:
    put(run, "scratch/log.md", "one\ntwo")
    run.call_tool("workspace.read_file", {"path": "scratch/log.md", "line_count": 1})
    write(run, "scratch/log.md", "\nthree", "append")
    record = run.internals.main.records.get("scratch/log.md")
    assert record is not None
    assert (record.sha256, record.full_read, record.observed_texts) == (
        sha256_hex(b"one\ntwo"), False, ["one"])
    assert write(run, "scratch/log.md", "x") == (STALE, "workspace.write_stale_file")


# --- auto-commit candidate --------------------------------------------------------------------


def test_text_writes_become_the_candidate(run: Run) -> None:
    write(run, "scratch/a.md", "a")
    write(run, "scratch/data.json", "{}")
    assert run.internals.tracker.candidate == "scratch/a.md"
    write(run, "plan/p.TXT", "p", "append")
    assert (run.internals.tracker.candidate, run.internals.tracker.changed) == ("plan/p.TXT", True)
    run.internals.fs.write_text(WorkspacePath("scratch/other.md"), "o", WriteGuard.unchecked())
    run.internals.tracker.changed = False
    assert write(run, "scratch/other.md", "refused")[1] == "workspace.write_requires_read"
    assert (run.internals.tracker.candidate, run.internals.tracker.changed) == ("plan/p.TXT", False)


def test_writes_over_the_write_limit_are_refused(run: Run, put: Put) -> None:
    """tavernlab's 8 MiB write limit of the text tools: nothing is written."""
    message = ("the file would be {} bytes, over the 8388608-byte write limit; split the text "
               "across several files")
    assert write(run, "scratch/big.md", "x" * (MAX_WRITE_BYTES + 1)) == (
        message.format(MAX_WRITE_BYTES + 1), "workspace.write_too_large")
    assert not (run.workspace_dir / "scratch/big.md").exists()
    assert write(run, "scratch/big.md", "x" * MAX_WRITE_BYTES)[1] is None
    assert write(run, "scratch/big.md", "\u00e9", "append") == (
        message.format(MAX_WRITE_BYTES + 2), "workspace.write_too_large")
    assert (run.workspace_dir / "scratch/big.md").stat().st_size == MAX_WRITE_BYTES
    put(run, "scratch/small.md", "abc")
    assert write(run, "scratch/small.md", "x" * (MAX_WRITE_BYTES - 3), "append")[1] is None


def test_the_required_path_is_trimmed(run: Run) -> None:
    """7.1: `` scratch/t.md `` is ``scratch/t.md``; the content is raw, never trimmed."""
    assert write(run, "  scratch/t.md\t", " padded \n") == (
        "Wrote 9 chars / 1 words to scratch/t.md.", None)
    assert disk(run, "scratch/t.md") == " padded \n"
    assert write(run, "   ", "x") == ("path is required", "tool.invalid_arguments")
