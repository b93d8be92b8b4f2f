"""Bad bundles are refused with the member named, before anything is replayed."""

from __future__ import annotations

import hashlib
import json
import stat
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

import tavernlab
import tavernlab.replay.bundle as bundle_module
import tavernlab.replay.export as export_module
from tavernlab.errors import TavernlabError
from tavernlab.replay import FORMAT_VERSION, read_bundle
from tavernlab.replay.errors import BundleInvalid, BundleTooLarge, BundleVersionUnsupported

from .conftest import deterministic_lab

Members = dict[str, bytes]


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    """A run that started from a persist state, exported."""
    lab = deterministic_lab(tmp_path / "lab")
    first = lab.start_run(chat_id="alice")
    first.call_tool("workspace.write_file", {"path": "persist/notes.md", "content": "kept\n"})
    first.call_tool("workspace.write_file", {"path": "output/main.md", "content": "one"})
    first.call_tool("workspace.commit", {})
    first.finish()
    run = lab.start_run(chat_id="alice",
                        persist_base=lab.chat("alice").current_persist_state())
    run.call_tool("workspace.write_file", {"path": "output/main.md", "content": "Hello"})
    run.shell("cat /persist/notes.md")
    return run.export(tmp_path / "good.tavernrun")


def members(path: Path) -> Members:
    with zipfile.ZipFile(path) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def rewrite(source: Path, target: Path, change: Callable[[Members], object], *,
            reseal: bool = False) -> Path:
    """``source`` with its members changed by ``change`` (and, with ``reseal``, the
    manifest digest recomputed, as a careful forger would)."""
    found = members(source)
    change(found)
    if reseal:
        digest = hashlib.sha256(found["manifest.json"]).hexdigest()
        found["manifest.sha256"] = f"{digest}\n".encode()
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in found.items():
            archive.writestr(name, data)
    return target


def manifest_of(found: Members) -> dict[str, object]:
    data: dict[str, object] = json.loads(found["manifest.json"])
    return data


def edit_manifest(edit: Callable[[dict[str, object]], None]) -> Callable[[Members], None]:
    def change(found: Members) -> None:
        data = manifest_of(found)
        edit(data)
        found["manifest.json"] = json.dumps(data).encode()
    return change


def refused(path: Path, kind: type[TavernlabError] = BundleInvalid) -> str:
    with pytest.raises(kind) as info:
        read_bundle(path)
    with pytest.raises(kind):
        tavernlab.replay(path)
    return info.value.message


def test_the_good_bundle_replays(bundle: Path) -> None:
    assert tavernlab.replay(bundle).identical


def test_a_changed_byte_names_the_member(bundle: Path, tmp_path: Path) -> None:
    found = members(bundle)
    digest = json.loads(found["manifest.json"])["run"]["files"]["output/main.md"]
    name = f"blobs/{digest}"

    def flip(found: Members) -> None:
        found[name] = b"J" + found[name][1:]

    assert refused(rewrite(bundle, tmp_path / "a.tavernrun", flip)) == (
        f"bundle member {name} does not match its digest (its bytes were changed)")

    def touch_manifest(found: Members) -> None:
        found["manifest.json"] = found["manifest.json"].replace(b"calling_model", b"calling_modem")

    assert refused(rewrite(bundle, tmp_path / "b.tavernrun", touch_manifest)) == (
        "bundle member manifest.json does not match its digest in manifest.sha256")


def test_a_corrupted_file_names_the_member(bundle: Path, tmp_path: Path) -> None:
    raw = bytearray(bundle.read_bytes())
    with zipfile.ZipFile(bundle) as archive:
        info = archive.getinfo("manifest.json")
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    raw[start + info.compress_size // 2] ^= 0xFF
    broken = tmp_path / "broken.tavernrun"
    broken.write_bytes(bytes(raw))
    message = refused(broken)
    assert message.startswith("broken.tavernrun is not a readable bundle: Failed to read Skill "
                              "archive 'broken.tavernrun': entry 'manifest.json': ")


def test_a_newer_format_version_is_refused(bundle: Path, tmp_path: Path) -> None:
    newer = rewrite(bundle, tmp_path / "newer.tavernrun",
                    edit_manifest(lambda m: m.update(formatVersion=FORMAT_VERSION + 1)),
                    reseal=True)
    assert refused(newer, BundleVersionUnsupported) == (
        f"newer.tavernrun has bundle format version {FORMAT_VERSION + 1}, newer than the "
        f"version {FORMAT_VERSION} this tavernlab reads: upgrade tavernlab to replay it")
    other = rewrite(bundle, tmp_path / "other.tavernrun",
                    edit_manifest(lambda m: m.update(format="zip")), reseal=True)
    assert refused(other) == "other.tavernrun is not a tavernrun bundle"


@pytest.mark.parametrize(("entry", "message"), [
    ("../evil.txt", "Skill file path cannot contain .. (`../evil.txt`)"),
    ("/etc/evil", "Skill file path must be relative (`/etc/evil`)"),
    ("blobs/a\nb", "Skill archive entry name contains a control character: blobs/a\\nb"),
    ("notes.txt", "unexpected bundle member notes.txt"),
])
def test_escaping_and_unexpected_entries_are_refused(bundle: Path, tmp_path: Path, entry: str,
                                                     message: str) -> None:
    target = rewrite(bundle, tmp_path / "x.tavernrun",
                     lambda found: found.update({entry: b"x"}))
    prefix = "x.tavernrun is not a readable bundle: " if entry != "notes.txt" else ""
    assert refused(target) == prefix + message


def test_symlink_entries_are_refused(bundle: Path, tmp_path: Path) -> None:
    target = rewrite(bundle, tmp_path / "link.tavernrun", lambda found: None)
    with zipfile.ZipFile(target, "a") as archive:
        info = zipfile.ZipInfo("blobs/link")
        info.external_attr = (stat.S_IFLNK | 0o777) << 16
        archive.writestr(info, "/etc/passwd")
    assert refused(target) == ("link.tavernrun is not a readable bundle: Skill archive entry "
                               "cannot be a symlink: blobs/link")


def test_oversized_members_and_bundles_are_refused(bundle: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bundle_module, "MAX_MEMBER_BYTES", 100)
    message = refused(bundle, BundleTooLarge)
    assert message.startswith("bundle member ") and message.endswith("; the limit is 100")
    monkeypatch.setattr(bundle_module, "MAX_MEMBER_BYTES", 64 * 1024 * 1024)
    monkeypatch.setattr(bundle_module, "MAX_MEMBERS", 3)
    assert refused(bundle, BundleTooLarge) == "a bundle holds at most 3 members"


def test_export_refuses_a_run_over_the_limit(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    lab = deterministic_lab(tmp_path / "lab")
    run = lab.start_run(chat_id="a")
    run.call_tool("workspace.write_file", {"path": "output/a.md", "content": "x" * 5000})
    monkeypatch.setattr(export_module, "MAX_BUNDLE_BYTES", 4000)
    with pytest.raises(BundleTooLarge) as info:
        run.export(tmp_path / "big.tavernrun")
    assert info.value.message == "the run's files exceed 4000 bytes, the bundle limit"
    assert not (tmp_path / "big.tavernrun").exists()


def test_manifest_paths_that_would_leave_the_lab_are_refused(bundle: Path,
                                                             tmp_path: Path) -> None:
    def escape_run_file(m: dict[str, object]) -> None:
        files = m["run"]["files"]  # type: ignore[index]
        files["../../outside.md"] = next(iter(files.values()))

    target = rewrite(bundle, tmp_path / "a.tavernrun", edit_manifest(escape_run_file),
                     reseal=True)
    assert refused(target) == ("bundle member manifest.json: run file `../../outside.md`: "
                               "Workspace path cannot contain ..")

    def escape_state(m: dict[str, object]) -> None:
        m["persistBase"]["stateId"] = "../../x"  # type: ignore[index]

    target = rewrite(bundle, tmp_path / "b.tavernrun", edit_manifest(escape_state),
                     reseal=True)
    assert refused(target) == ("bundle member manifest.json: persist state id must match "
                               "[A-Za-z0-9_-]{1,128}: '../../x'")


def test_a_missing_blob_is_named(bundle: Path, tmp_path: Path) -> None:
    found = members(bundle)
    digest = json.loads(found["manifest.json"])["run"]["files"]["output/main.md"]
    target = rewrite(bundle, tmp_path / "a.tavernrun",
                     lambda found: found.pop(f"blobs/{digest}"))
    assert refused(target) == (f"bundle member blobs/{digest} is missing (named by "
                               "run/output/main.md)")


def test_replay_writes_only_inside_its_lab(bundle: Path, tmp_path: Path) -> None:
    before = sorted(p.name for p in tmp_path.iterdir())
    report = tavernlab.replay(bundle, lab=tmp_path / "replayed")
    assert report.identical and report.lab == str(tmp_path / "replayed")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*before, "replayed"])
    with pytest.raises(TavernlabError) as info:
        tavernlab.replay(bundle, lab=tmp_path / "replayed")
    assert info.value.message == (f"the replay lab {tmp_path / 'replayed'} must be a new or "
                                  "empty directory")


def test_an_action_the_replay_cannot_play_is_a_divergence(bundle: Path, tmp_path: Path) -> None:
    def stranger(m: dict[str, object]) -> None:
        m["actions"][0]["invocationId"] = "inv_nobody"  # type: ignore[index]

    target = rewrite(bundle, tmp_path / "a.tavernrun", edit_manifest(stranger), reseal=True)
    report = tavernlab.replay(target)
    first = report.first
    assert first is not None
    assert (first.index, first.kind, first.subject, first.actual) == (
        0, "error", "replay.setup_failed", "no agent `inv_nobody` to make call_1")
    assert [(d.index, d.kind) for d in report.divergences[:2]] == [(0, "error"), (0, "result")]
    played = [d for d in report.divergences if d.index == 1]  # the rest was played on
    assert played and {d.kind for d in played} <= {"event", "result", "file"}
