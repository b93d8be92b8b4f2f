"""Bad bundles are refused with the member named, before anything is replayed."""

from __future__ import annotations

import hashlib
import json
import stat
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import tavernlab
import tavernlab.replay._bundle as bundle_module
import tavernlab.replay._export as export_module
from tavernlab.cli import main
from tavernlab.errors import TavernlabError
from tavernlab.replay import FORMAT_VERSION, read_bundle
from tavernlab.replay._errors import BundleInvalid, BundleTooLarge, BundleVersionUnsupported

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
        tavernlab.replay.replay(path)
    return info.value.message


def test_the_good_bundle_replays(bundle: Path) -> None:
    assert tavernlab.replay.replay(bundle).identical


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
    report = tavernlab.replay.replay(bundle, lab=tmp_path / "replayed")
    assert report.identical and report.lab == str(tmp_path / "replayed")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*before, "replayed"])
    with pytest.raises(TavernlabError) as info:
        tavernlab.replay.replay(bundle, lab=tmp_path / "replayed")
    assert info.value.message == (f"the replay lab {tmp_path / 'replayed'} must be a new or "
                                  "empty directory")


def test_an_action_the_replay_cannot_play_is_a_divergence(bundle: Path, tmp_path: Path) -> None:
    def stranger(m: dict[str, object]) -> None:
        m["actions"][0]["invocationId"] = "inv_nobody"  # type: ignore[index]

    target = rewrite(bundle, tmp_path / "a.tavernrun", edit_manifest(stranger), reseal=True)
    report = tavernlab.replay.replay(target)
    first = report.first
    assert first is not None
    assert (first.index, first.kind, first.subject, first.actual) == (
        0, "error", "replay.setup_failed", "no agent `inv_nobody` to make call_1")
    assert [(d.index, d.kind) for d in report.divergences[:2]] == [(0, "error"), (0, "result")]
    played = [d for d in report.divergences if d.index == 1]  # the rest was played on
    assert played and {d.kind for d in played} <= {"event", "result", "file"}


# -- hostile manifests and recorded files: one line, never a traceback ------------------------

def cli_replay(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """``tavernlab replay PATH`` in this process: its status and its stderr."""
    status = main(["replay", str(path)])
    return status, capsys.readouterr().err


def set_field(path: str, value: object) -> Callable[[dict[str, object]], None]:
    """An edit setting the manifest field at the dotted ``path`` to ``value``."""
    def edit(m: dict[str, object]) -> None:
        *parents, last = path.split(".")
        node: Any = m
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node[key]
        node[last] = value
    return edit


@pytest.mark.parametrize(("field", "value", "message"), [
    ("record", {}, "bundle member manifest.json: record.id: Field required"),
    ("record.presentation", 7,
     "bundle member manifest.json: record.presentation: Input should be 'foreground' or "
     "'background'"),
    ("record.createdAt", "2026-13-45T99:00:00Z",
     "bundle member manifest.json: record.createdAt: Input should be a valid datetime or "
     "date, month value is outside expected range of 1-12"),
    ("clock.kind", "wall", "bundle member manifest.json: clock: not a fixed clock's settings: "
     "{'kind': 'wall', 'start': '2026-01-01T00:00:00Z', 'stepMicroseconds': 1000, "),
    ("clock.stepMicroseconds", 10**30, "bundle member manifest.json: clock: "),
    ("clock.readings", 10**30, "bundle member manifest.json: clock: "),
    ("clock.readings", -1,
     "bundle member manifest.json: clock: FixedClock readings must not be negative"),
    ("ids.counters", [], "bundle member manifest.json: ids: not sequential ids' settings: "),
])
def test_a_manifest_field_of_the_wrong_type_or_size_is_one_line(
        bundle: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], field: str,
        value: object, message: str) -> None:
    target = rewrite(bundle, tmp_path / "hostile.tavernrun", edit_manifest(
        set_field(field, value)), reseal=True)
    with pytest.raises(BundleInvalid) as info:
        tavernlab.replay.replay(target)
    assert info.value.message.startswith(message)
    assert "\n" not in info.value.message
    status, err = cli_replay(target, capsys)
    assert (status, err) == (1, f"error: replay.bundle_invalid: {info.value.message}\n")
    assert not list(tmp_path.glob("tavernlab-replay-*"))


@pytest.mark.parametrize(("path", "data", "message"), [
    ("input/resolved_profile.json", b"not json",
     "the bundle's run file input/resolved_profile.json is not JSON: Expecting value: line 1 "
     "column 1 (char 0)"),
    ("input/resolved_profile.json", b"[]",
     "the bundle's run file input/resolved_profile.json holds list, not a JSON object"),
    ("input/prompt_snapshot.json", b'"x"',
     "the bundle's run file input/prompt_snapshot.json holds str, not a JSON object"),
    ("input/prompt_snapshot.json", b"1e999",
     "the bundle's run file input/prompt_snapshot.json holds float, not a JSON object"),
])
def test_a_recorded_input_of_the_wrong_shape_is_one_line(
        bundle: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], path: str,
        data: bytes, message: str) -> None:
    def replace(found: Members) -> None:
        manifest = manifest_of(found)
        manifest["run"]["files"][path] = hashlib.sha256(data).hexdigest()  # type: ignore[index]
        found["manifest.json"] = json.dumps(manifest).encode()
        found[f"blobs/{hashlib.sha256(data).hexdigest()}"] = data

    target = rewrite(bundle, tmp_path / "hostile.tavernrun", replace, reseal=True)
    assert cli_replay(target, capsys) == (1, f"error: replay.bundle_invalid: {message}\n")


@pytest.mark.parametrize(("data", "message"), [
    (b"not json\n", "log line 1 of the recording is not JSON: Expecting value: line 1 "
                    "column 1 (char 0)"),
    (b"[1]\n", "log line 1 of the recording is not a JSON object"),
    (b'{"a": 1}\n', "a log record of the recording is not an event: "),
])
def test_a_recorded_log_that_is_not_events_is_a_divergence(
        bundle: Path, tmp_path: Path, data: bytes, message: str) -> None:
    def replace(found: Members) -> None:
        manifest = manifest_of(found)
        digest = hashlib.sha256(data).hexdigest()
        manifest["run"]["files"]["events.jsonl"] = digest  # type: ignore[index]
        found["manifest.json"] = json.dumps(manifest).encode()
        found[f"blobs/{hashlib.sha256(data).hexdigest()}"] = data

    target = rewrite(bundle, tmp_path / "log.tavernrun", replace, reseal=True)
    report = tavernlab.replay.replay(target)
    errors = [d for d in report.divergences if d.kind == "error"]
    assert [(d.subject, d.action) for d in errors] == [
        ("replay.bundle_invalid", "after the last action")]
    assert errors[0].actual is not None and errors[0].actual.startswith(message)
    assert not report.identical


def test_a_recorded_value_with_line_breaks_stays_on_one_line(
        bundle: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = rewrite(bundle, tmp_path / "lines.tavernrun", edit_manifest(
        set_field("actions.0.resultPath", "tool-results/x\nerror: forged\r\n")), reseal=True)
    assert main(["replay", str(target)]) == 1
    out, err = capsys.readouterr()
    assert err == ""
    assert out.splitlines()[0].endswith(
        "first: action 2 (after the last action): error replay.bundle_invalid: recorded None, "
        "replayed the bundle has no run file tool-results/x\\nerror: forged\\r\\n")
    assert not any(line.startswith("error: forged") for line in out.splitlines())


def test_a_notebook_never_replaces_its_own_bundle(bundle: Path, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    before = bundle.read_bytes()
    alias = tmp_path / "alias.tavernrun"
    alias.hardlink_to(bundle)
    monkeypatch.chdir(bundle.parent)
    for output in (str(bundle), f"./{bundle.name}", str(alias)):
        # --force lets a notebook replace an older notebook, never the bundle it is made from
        assert main(["notebook", "from-run", str(bundle), "-o", output, "--force"]) == 1
        assert capsys.readouterr() == ("", (
            f"error: workspace.invalid_data: the notebook {output} would replace its own "
            f"bundle {bundle}\n"))
    assert bundle.read_bytes() == before
    assert main(["notebook", "from-run", str(bundle), "-o", "walk.ipynb"]) == 0
    assert capsys.readouterr().out == f"{bundle.parent / 'walk.ipynb'}\n"


def manifest_arguments(bundle: Path) -> str:
    """The stored arguments of the bundle's first action."""
    with zipfile.ZipFile(bundle) as archive:
        manifest = json.loads(archive.read("manifest.json"))
    return str(manifest["actions"][0]["argumentsPath"])


def test_a_recorded_file_of_the_wrong_shape_is_one_line_for_the_notebook(
        bundle: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = b"[]"

    def replace(found: Members) -> None:
        manifest = manifest_of(found)
        arguments = manifest["actions"][0]["argumentsPath"]  # type: ignore[index]
        manifest["run"]["files"][arguments] = hashlib.sha256(data).hexdigest()  # type: ignore[index]
        found["manifest.json"] = json.dumps(manifest).encode()
        found[f"blobs/{hashlib.sha256(data).hexdigest()}"] = data

    target = rewrite(bundle, tmp_path / "shape.tavernrun", replace, reseal=True)
    assert main(["notebook", "from-run", str(target), "-o", str(tmp_path / "n.ipynb")]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert err.startswith("error: replay.bundle_invalid: the bundle's run file "
                          f"{manifest_arguments(target)} is not a JSON object")
    assert not (tmp_path / "n.ipynb").exists()
