"""A state published in this process keeps its manifest's ``"files"`` text, and a run that
starts from it writes its persist snapshot with that text: the bytes are the model writer's
for any file name (quotes, backslashes, control characters, non-ASCII), exactly as a run
that starts from the state read back from disk writes them."""

from __future__ import annotations

from pathlib import Path

import pytest

import tavernlab.workspace.persist._persist as persist_module
from tavernlab.host import Lab, Run
from tavernlab.paths import WorkspacePath
from tavernlab.workspace.persist import PersistSnapshot
from tavernlab.workspace.persist._persist_tree import FileEntry
from tavernlab.workspace.records import write_model
from tavernlab.workspace.storage import ParsedFiles
from tavernlab.workspace.storage._fs import WriteGuard

NAMES = ["plain.md", 'q"uote.md', "back\\slash.md", "tab\t.md", "ctl\x01.md", "café.md",
         "sp ace.md", "del\x7f.md", "line\u2028sep.md"]


def published(lab: Lab, names: list[str]) -> tuple[Run, str]:
    """A finished run whose ``persist/`` held ``names`` (in folders and at the top)."""
    run = lab.start_run(chat_id="alice")
    persist = run.workspace_dir / "persist"
    (persist / "dir").mkdir()
    for index, name in enumerate(names):
        (persist / ("dir" if index % 2 else "") / name).write_text(f"{index}")
    run.internals.scope.write_text(WorkspacePath("output/main.md"), "body",
                                   WriteGuard.unchecked())
    assert not run.call_tool("workspace.commit", {}).is_error
    assert not run.finish().is_error
    assert run.persist_state_id is not None
    return run, run.persist_state_id


def snapshot_bytes(run: Run) -> bytes:
    return (run.dir / "input" / "persist_snapshot.json").read_bytes()


@pytest.mark.parametrize("names", [NAMES, [], ["only.md"]], ids=["odd", "none", "one"])
def test_the_kept_files_text_gives_the_model_writers_bytes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, names: list[str]) -> None:
    lab = Lab(tmp_path / "lab")
    _, state = published(lab, names)
    manifest_path = lab.chat("alice").persist.state_dir(state) / "manifest.json"
    manifest = lab.chat("alice").persist.load(state)
    write_model(tmp_path / "manifest.json", manifest)  # what the publication must write
    assert manifest_path.read_bytes() == (tmp_path / "manifest.json").read_bytes()

    kept = lab.start_run(chat_id="alice", persist_base=state)
    snapshot = kept.internals.persist_snapshot
    assert snapshot is not None and snapshot._files_member is not None  # the kept text
    write_model(tmp_path / "snapshot.json", snapshot)
    assert snapshot_bytes(kept) == (tmp_path / "snapshot.json").read_bytes()

    monkeypatch.setattr(persist_module, "_MANIFESTS", ParsedFiles())  # read back from disk
    fresh = lab.start_run(chat_id="alice", persist_base=state)
    assert fresh.internals.persist_snapshot is not None
    assert fresh.internals.persist_snapshot._files_member is None
    assert snapshot_bytes(fresh) == snapshot_bytes(kept)
    lab.close()


def test_a_snapshot_whose_files_changed_is_rendered_anew() -> None:
    entry = FileEntry("a.md", "ab" * 32, 1)
    snapshot = PersistSnapshot.model_construct(base_state_id="pst_1", files=[entry],
                                               directories=[])
    snapshot._files_member = (snapshot.files, 1, '  "files": ["the kept text"]')
    assert '"the kept text"' in snapshot.json_text()  # the kept text is what is written
    copy = snapshot.model_copy(update={"files": [entry]})  # another list
    assert copy.json_text() == copy.model_dump_json(indent=2, by_alias=True, exclude_none=True)
    snapshot.files.append(FileEntry("b.md", "cd" * 32, 2))  # the same list, grown
    assert snapshot.json_text() == snapshot.model_dump_json(indent=2, by_alias=True,
                                                            exclude_none=True)
