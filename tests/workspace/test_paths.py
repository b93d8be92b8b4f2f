"""Workspace path rules (docs/workspace.md, "Paths"): order of checks, messages, normalization."""

from __future__ import annotations

import pytest

from tavernlab.errors import InvalidData
from tavernlab.paths import (
    MAX_PATH_BYTES,
    MAX_PATH_SEGMENTS,
    InvalidWorkspacePath,
    WorkspacePath,
    display,
    extension,
)


@pytest.mark.parametrize(("text", "normalized"), [
    ("output/./main.md", "output/main.md"),          # Acceptance 1
    ("output//a.md", "output/a.md"),                 # Acceptance 1
    ("output/main.md/", "output/main.md"),
    ("./output/main.md", "output/main.md"),
    ("output\\main.md", "output/main.md"),           # `\` is a separator after the first char
    ("scratch\\a\\.\\b.txt", "scratch/a/b.txt"),
    ("scratch/...", "scratch/..."),                  # `...` is not `..`
    ("scratch/..x/x..", "scratch/..x/x.."),
    ("1:/x", "1:/x"),                                # a digit is not a drive letter
    ("é:/x", "é:/x"),                                # nor is a non-ASCII letter
    ("output/C:/x", "output/C:/x"),                  # a drive prefix only counts at the start
])
def test_normalization(text: str, normalized: str) -> None:
    assert WorkspacePath.parse(text).text == normalized


@pytest.mark.parametrize(("text", "message"), [
    # Acceptance 2
    ("../secrets.json", "Workspace path cannot contain .."),
    ("/abs/file", "Workspace path must be relative"),
    ("C:\\Users\\me\\file", "Workspace path cannot use a Windows drive prefix"),
    ("scratch/\0bad", "Workspace path cannot contain NUL"),
    (".", "Workspace path cannot be empty"),
    ("", "Workspace path cannot be empty"),
    # the rest of the table
    ("\\abs\\file", "Workspace path must be relative"),
    ("\\\\server\\share", "Workspace path must be relative"),
    ("c:relative", "Workspace path cannot use a Windows drive prefix"),
    ("Z:", "Workspace path cannot use a Windows drive prefix"),
    ("output/../run.json", "Workspace path cannot contain .."),
    ("output\\..\\run.json", "Workspace path cannot contain .."),
    ("..", "Workspace path cannot contain .."),
    ("./", "Workspace path cannot be empty"),
    ("././/.", "Workspace path cannot be empty"),
    ("//", "Workspace path must be relative"),
])
def test_rejections(text: str, message: str) -> None:
    with pytest.raises(InvalidWorkspacePath) as info:
        WorkspacePath.parse(text)
    assert info.value.message == message
    assert info.value.code == "workspace.invalid_path"
    assert isinstance(info.value, InvalidData)


@pytest.mark.parametrize(("text", "message"), [
    # NUL is checked before "relative", "relative" before the drive prefix, the drive prefix
    # before `..`, and `..` before "no segments left".
    ("/\0", "Workspace path cannot contain NUL"),
    ("C:\0", "Workspace path cannot contain NUL"),
    ("/C:/x", "Workspace path must be relative"),
    ("\\..", "Workspace path must be relative"),
    ("C:..", "Workspace path cannot use a Windows drive prefix"),
    ("C:/..", "Workspace path cannot use a Windows drive prefix"),
    ("./..", "Workspace path cannot contain .."),
])
def test_checks_run_in_upstream_order(text: str, message: str) -> None:
    with pytest.raises(InvalidWorkspacePath) as info:
        WorkspacePath.parse(text)
    assert info.value.message == message


def test_lone_surrogates_are_rejected() -> None:
    """tavernlab's addition: Python's JSON accepts ``"\\udcff"``; no file name can hold it."""
    for text in ("scratch/\udcff.md", "\ud800", "output/a\udfff/b"):
        with pytest.raises(InvalidWorkspacePath) as info:
            WorkspacePath.parse(text)
        assert info.value.message == "Workspace path must be valid Unicode text"
    assert WorkspacePath.parse("scratch/\U0001f600.md").text == "scratch/\U0001f600.md"


def test_length_and_segment_bounds() -> None:
    """tavernlab's addition: at most 4096 UTF-8 bytes (checked before anything else but the
    empty text) and at most 256 segments after normalization."""
    longest = "scratch/" + "x" * (MAX_PATH_BYTES - len("scratch/"))
    assert WorkspacePath.parse(longest).text == longest
    cases = [
        (longest + "y", "Workspace path exceeds 4096 bytes"),
        ("/" + "\0" * MAX_PATH_BYTES, "Workspace path exceeds 4096 bytes"),  # before NUL
        ("scratch/" + "\u00e9" * 2045, "Workspace path exceeds 4096 bytes"),  # bytes, not chars
        ("/".join(["a"] * (MAX_PATH_SEGMENTS + 1)), "Workspace path exceeds 256 segments"),
        ("/".join(["a"] * (MAX_PATH_SEGMENTS + 1)) + "/..", "Workspace path cannot contain .."),
    ]
    for text, message in cases:
        with pytest.raises(InvalidWorkspacePath) as info:
            WorkspacePath.parse(text)
        assert info.value.message == message
    # empty and `.` segments do not count
    padded = "/".join(["a"] * MAX_PATH_SEGMENTS) + "/./" + "//"
    assert len(WorkspacePath.parse(padded).parts) == MAX_PATH_SEGMENTS


def test_logical_root_is_no_path() -> None:
    for text in (None, "", ".", "./"):
        assert WorkspacePath.parse_optional(text) is None
    assert WorkspacePath.parse_optional("output") == WorkspacePath("output")
    with pytest.raises(InvalidWorkspacePath, match="cannot contain"):
        WorkspacePath.parse_optional("../x")
    assert display(None) == ""
    assert display(WorkspacePath("output/a.md")) == "output/a.md"


def test_non_strings_are_rejected() -> None:
    with pytest.raises(InvalidWorkspacePath):
        WorkspacePath.parse(42)  # type: ignore[arg-type]


def test_segment_helpers() -> None:
    path = WorkspacePath.parse("scratch/draft/Final.MD")
    assert path.parts == ("scratch", "draft", "Final.MD")
    assert path.root == "scratch"
    assert path.name == "Final.MD"
    assert extension(path.text) == "MD"
    assert path.parent == WorkspacePath("scratch/draft")
    assert WorkspacePath("scratch").parent is None
    assert extension("scratch/.hidden") == "" and extension("a.tar.gz") == "gz"
    assert WorkspacePath("scratch/draft").join("a/b.md") == WorkspacePath("scratch/draft/a/b.md")
    # segment-wise containment, never a text prefix
    assert WorkspacePath("output/a").is_under(WorkspacePath("output"))
    assert WorkspacePath("output").is_under(WorkspacePath("output"))
    assert not WorkspacePath("output_extra/x").is_under(WorkspacePath("output"))
    assert not WorkspacePath("output").is_strictly_under(WorkspacePath("output"))
    assert WorkspacePath("output/a/b").relative_to(WorkspacePath("output")) == "a/b"
    assert WorkspacePath("output").relative_to(WorkspacePath("output")) == ""
    with pytest.raises(ValueError, match="is not under"):
        WorkspacePath("output_extra/x").relative_to(WorkspacePath("output"))
    assert str(path) == "scratch/draft/Final.MD"
