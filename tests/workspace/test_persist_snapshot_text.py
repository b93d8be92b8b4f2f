"""A run's persist snapshot is rendered directly; its bytes are those the generic model
writer gives, for any file name, digest text and size."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tavernlab.workspace.persist import PersistSnapshot
from tavernlab.workspace.persist._persist_tree import FileEntry
from tavernlab.workspace.records import read_json, write_model

_NAMES = st.text(st.characters(blacklist_categories=["Cs"]), min_size=1, max_size=12)


def model_text(snapshot: PersistSnapshot) -> str:
    """What the generic writer renders for ``snapshot``."""
    return snapshot.model_dump_json(indent=2, by_alias=True, exclude_none=True)


@settings(max_examples=200, deadline=None)
@given(base=st.none() | _NAMES,
       files=st.lists(st.tuples(_NAMES, st.text("0123456789abcdef\"\\\n\x01", max_size=64),
                                st.integers(min_value=0, max_value=2**53)), max_size=6),
       directories=st.none() | st.lists(_NAMES, max_size=4))
def test_the_rendered_text_is_the_model_writers(base: str | None,
                                                files: list[tuple[str, str, int]],
                                                directories: list[str] | None) -> None:
    snapshot = PersistSnapshot(base_state_id=base,
                               files=[FileEntry(*entry) for entry in files],
                               directories=directories)
    assert snapshot.json_text() == model_text(snapshot)


def test_the_written_file_is_the_model_writers(tmp_path: Path) -> None:
    snapshot = PersistSnapshot(base_state_id="pst_1", files=[
        FileEntry("d/é \"q\".md", "ab" * 32, 3), FileEntry("d/tab\t.md", "cd" * 32, 0)],
        directories=["d"])
    snapshot.write(tmp_path / "rendered.json")
    write_model(tmp_path / "generic.json", snapshot)
    assert (tmp_path / "rendered.json").read_bytes() == (tmp_path / "generic.json").read_bytes()
    assert read_json(tmp_path / "rendered.json")["files"][0]["path"] == "d/é \"q\".md"


def test_an_empty_snapshot_is_written_as_the_model_writer_does() -> None:
    assert PersistSnapshot(base_state_id=None, files=[], directories=[]).json_text() == (
        '{\n  "files": [],\n  "directories": []\n}')
    assert PersistSnapshot(base_state_id=None, files=[], directories=None).json_text() == (
        '{\n  "files": []\n}')


def test_a_name_that_is_not_utf8_is_refused_as_the_model_writer_refuses_it(
        tmp_path: Path) -> None:
    snapshot = PersistSnapshot(base_state_id="pst_1",
                               files=[FileEntry("bad\udcff.md", "ab" * 32, 1)], directories=[])
    with pytest.raises(UnicodeEncodeError):
        write_model(tmp_path / "generic.json", snapshot)
    with pytest.raises(UnicodeEncodeError):
        snapshot.write(tmp_path / "rendered.json")
    assert list(tmp_path.iterdir()) == []
