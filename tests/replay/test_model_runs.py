"""Replaying runs the agent loop drove: byte for byte without the model, the model requests
compared against a changed skill, a live model continuing from the divergence."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
import sys
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from model_servers import provider_for
from tests.agent.scripts import call, failure, finish, turn, write

import tavernlab
import tavernlab.agent  # registers Lab.run_agent
import tavernlab.models
from tavernlab.cli import main
from tavernlab.models import Scripted
from tavernlab.replay import FORMAT_VERSION, Replay, read_bundle
from tavernlab.replay._errors import BundleInvalid, ReplaySetupError
from tavernlab.workspace.records import read_json

from .conftest import deterministic_lab, write_package

SKILL_MD = ("---\nname: greet\ndescription: Greets people.\n---\n"
            "Run `js /skills/greet/scripts/hi.js` and commit what it says.\n")
GREET = {"SKILL.md": SKILL_MD, "scripts/hi.js": "console.log('hi there');\n"}
TASK = "Greet the reader with the greet skill."


def turns() -> list[dict[str, Any]]:
    """Read the skill, run its script, write, commit and finish: three rounds."""
    return [
        turn("Reading the skill.", call("c1", "workspace_read_file",
                                        {"path": "skills/greet/SKILL.md"}), usage=(100, 7)),
        turn("Running it.", call("c2", "workspace_shell",
                                 {"command": "js /skills/greet/scripts/hi.js"}), usage=(150, 9)),
        turn(None, write("c3", "output/main.md", "hi there"),
             call("c4", "workspace_commit", {}), finish("c5"), usage=(200, 11)),
    ]


def live_turns(text: str = "bye for now") -> list[dict[str, Any]]:
    """A live model's answer from the diverged round on."""
    return [turn(None, write("l1", "output/main.md", text), call("l2", "workspace_commit", {}),
                 finish("l3"))]


def files_below(root: Path) -> dict[str, bytes | None]:
    """Every file (bytes) and directory (``None``) below ``root``."""
    return {p.relative_to(root).as_posix(): None if p.is_dir() else p.read_bytes()
            for p in sorted(root.rglob("*"))}


def same_lab_files(recorded: Path, replayed: Path) -> None:
    """The run directories and the chat files of two labs hold the same bytes."""
    for part in ("agent-workspaces", "host-chats"):
        a = files_below(recorded / "_tauritavern" / part)
        b = files_below(replayed / "_tauritavern" / part)
        assert sorted(a) == sorted(b)
        assert [p for p in a if a[p] != b[p]] == []


def replayed_run(lab: Path, run_id: str) -> dict[str, Any]:
    """``run.json`` of ``run_id`` in a kept replay lab."""
    record: dict[str, Any] = read_json(next(lab.rglob(f"{run_id}/run.json")))
    return record


def payloads(run_dir: Path, kind: str) -> list[dict[str, Any]]:
    """The payloads of the ``kind`` events in a run directory."""
    lines = (run_dir / "events.jsonl").read_text(encoding="utf-8").splitlines()
    return [e["payload"] for e in map(json.loads, lines) if e["type"] == kind]


class Recording:
    """A recorded model-driven run: its lab root, run id, bundle and skill package."""

    def __init__(self, tmp_path: Path, responses: list[dict[str, Any]] | None = None, *,
                 model: Any = None, name: str = "model", **options: Any) -> None:
        self.package = write_package(tmp_path / f"{name}-greet", GREET)
        self.root = tmp_path / f"{name}-recording"
        lab = deterministic_lab(self.root)
        lab.skills.install(self.package)
        self.outcome = lab.run_agent(TASK, model=model or Scripted(responses or turns()),
                                     **options)
        self.run_id = self.outcome.run.id
        self.run_dir = self.outcome.run.dir
        self.bundle = self.outcome.run.export(tmp_path / "bundles" / f"{name}.tavernrun")
        lab.close()


@pytest.fixture
def recording(tmp_path: Path) -> Recording:
    """The three-round run of :func:`turns` through ``Scripted``, exported."""
    return Recording(tmp_path)


def changed(tmp_path: Path, name: str, **files: str) -> Path:
    """The greet skill with some files replaced."""
    return write_package(tmp_path / name, {**GREET, **files})


# -- the bundle -----------------------------------------------------------------------------------


def test_the_bundle_holds_the_loop_records_and_what_drives_the_loop(
        recording: Recording) -> None:
    assert recording.outcome.status == "completed" and recording.outcome.rounds == 3
    manifest = read_bundle(recording.bundle).manifest
    assert manifest.format_version == FORMAT_VERSION == 3
    files = set(manifest.run.files)
    for path in ("input/prompt_snapshot.json", "input/resolved_skills.json",
                 "input/invocations/inv_root/tool_snapshot.json", "input/loop_start.json",
                 "model-responses/round-001.json", "model-responses/round-002.json",
                 "model-responses/round-003.json", "events.jsonl", "journal.jsonl",
                 "output/main.md"):
        assert path in files, path
    assert any(p.startswith("tool-args/inv_root/") for p in files)
    assert any(p.startswith("tool-results/inv_root/") for p in files)
    agent = manifest.agent
    assert agent is not None
    assert (agent.task, agent.chat_id, agent.presentation, agent.stream, agent.agents) == (
        TASK, "agent", "foreground", True, {})
    assert agent.model == {"mode": "configured", "chatCompletionSource": "scripted",
                           "customApiFormat": "scripted", "modelId": "scripted",
                           "binding": {"provider": "scripted", "model": "scripted",
                                       "responses": 3}}
    assert agent.commit_answers == [None] and agent.failed_attempts == []
    assert [(r.invocation_id, r.round, r.path) for r in agent.responses] == [
        ("inv_root", n, f"model-responses/round-00{n}.json") for n in (1, 2, 3)]
    assert read_json(recording.run_dir / "input" / "loop_start.json") == {
        "task": TASK, "chatId": "agent", "presentation": "foreground", "stream": True,
        "agents": {}}


# -- byte for byte --------------------------------------------------------------------------------


def test_a_scripted_run_replays_byte_identical_in_another_lab(recording: Recording,
                                                              tmp_path: Path) -> None:
    other = tmp_path / "other-lab"
    report = tavernlab.replay.replay(recording.bundle, lab=other)
    assert report.identical, str(report)
    assert report.lab == str(other.resolve())
    same_lab_files(recording.root, other)
    assert [(t.invocation, t.round, t.input_tokens, t.output_tokens, t.served)
            for t in report.model_turns] == [
        ("inv_root", 1, 100, 7, True), ("inv_root", 2, 150, 9, True),
        ("inv_root", 3, 200, 11, True)]
    assert report.model_divergence is None and report.live is None
    assert str(report).splitlines() == [
        f"identical: {report.actions} actions of {recording.run_id} replayed byte for byte",
        "model turns:",
        "  round 1 (inv_root): no id (scripted), 100 in + 7 out tokens, served",
        "  round 2 (inv_root): no id (scripted), 150 in + 9 out tokens, served",
        "  round 3 (inv_root): no id (scripted), 200 in + 11 out tokens, served"]


def test_a_temporary_replay_lab_is_removed(recording: Recording) -> None:
    report = tavernlab.replay.replay(recording.bundle)
    assert report.identical and report.lab is None


def test_a_scripted_run_replays_in_another_process(recording: Recording,
                                                   tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "tavernlab.cli", "replay", str(recording.bundle), "--lab",
         "replayed", "--json"], cwd=elsewhere, capture_output=True, text=True, timeout=300,
        env=dict(os.environ))
    assert (done.returncode, done.stderr) == (0, "")
    report = json.loads(done.stdout)
    assert (report["identical"], report["divergences"], report["modelDivergence"]) == (
        True, [], None)
    assert [(t["round"], t["served"]) for t in report["modelTurns"]] == [
        (1, True), (2, True), (3, True)]
    same_lab_files(recording.root, elsewhere / "replayed")


@pytest.mark.parametrize("stream", [True, False])
def test_the_openai_client_run_replays_with_no_server(tmp_path: Path, stream: bool) -> None:
    with contextlib.ExitStack() as stack:
        provider, sent = provider_for("openai", turns(), stack)
        recording = Recording(tmp_path, model=provider, name="openai", stream=stream)
        assert recording.outcome.status == "completed" and len(sent()) == 3
    # the server is gone: the replay never calls a model
    agent = read_bundle(recording.bundle).manifest.agent
    assert agent is not None and agent.stream is stream
    assert agent.model["chatCompletionSource"] != "scripted"
    other = tmp_path / "openai-replayed"
    report = tavernlab.replay.replay(recording.bundle, lab=other)
    assert report.identical, str(report)
    same_lab_files(recording.root, other)
    assert [t.served for t in report.model_turns] == [True, True, True]


def test_retried_attempts_failures_and_rejected_commits_replay_identically(
        tmp_path: Path) -> None:
    quick = {"run": {"modelRetry": {"maxRetries": 2, "intervalMs": 1}}}
    retried = Recording(tmp_path, [failure(status=503, message="busy"), *turns()],
                        name="retried", profile=quick,
                        review=lambda request: "not yet" if request["callId"] == "c4" else None)
    # the only commit was refused, so the finish was too, and round 4 found no answer left
    assert retried.outcome.status == "failed"
    agent = read_bundle(retried.bundle).manifest.agent
    assert agent is not None and agent.commit_answers == ["not yet"]
    assert [(f.round, f.attempt, f.retryable, f.kind) for f in agent.failed_attempts] == [
        (1, 1, True, "transient"), (4, 1, False, "internal")]
    assert tavernlab.replay.replay(retried.bundle).identical
    fatal = Recording(tmp_path, [turns()[0], failure(status=401, message="no key")],
                      name="fatal", profile=quick)
    assert fatal.outcome.failure is not None
    assert fatal.outcome.failure["code"] == "agent.unauthorized"
    report = tavernlab.replay.replay(fatal.bundle)
    assert report.identical, str(report)


# -- against a changed skill ----------------------------------------------------------------------


def test_a_changed_description_diverges_at_round_1s_model_request(
        recording: Recording, tmp_path: Path) -> None:
    warmer = changed(tmp_path, "warmer", **{"SKILL.md": SKILL_MD.replace(
        "Greets people.", "Greets everyone warmly.")})
    lab = tmp_path / "warmer-lab"
    report = tavernlab.replay.replay(recording.bundle, lab=lab, skills={"greet": warmer})
    diverged = report.model_divergence
    assert diverged is not None and report.first is diverged
    assert (diverged.kind, diverged.invocation, diverged.round, diverged.call,
            diverged.subject, diverged.index) == (
        "model_request", "inv_root", 1, None, "message 0 (system)", -1)
    assert diverged.diff is not None
    changes = [line for line in diverged.diff.splitlines()
               if line.startswith(("-", "+")) and not line.startswith(("---", "+++"))]
    assert changes == ['-      - greet: "Greets people."',
                       '+      - greet: "Greets everyone warmly."']
    # the recorded responses were not served: the run stopped at round 1, failed
    assert [t.served for t in report.model_turns] == [False, False, False]
    record = replayed_run(lab, recording.run_id)
    assert record["status"] == "failed"
    run_dir = next(lab.rglob(f"{recording.run_id}/run.json")).parent
    failed = payloads(run_dir, "run_failed")[0]
    assert failed["code"] == "replay.model_request_diverged"
    assert failed["message"] == (
        "the model request of invocation `inv_root` round 1 differs from the recorded one "
        "(message 0 (system)); the recorded responses from there on are not served")
    assert not (run_dir / "model-responses").exists()
    lines = str(report).splitlines()
    assert lines[0] == (f"diverged: {len(report.divergences)} divergences in "
                        f"{recording.run_id}, first: round 1 model request (inv_root): "
                        "model_request message 0 (system)")
    assert lines[1].startswith("skill greet: ")
    assert lines[2] == "--- recorded/request/messages/0"
    assert "  round 1 (inv_root): no id (scripted), 100 in + 7 out tokens, not served" in lines
    html = report._repr_html_()
    assert "<td>diverged: message 0 (system)</td>" in html
    assert "<summary>request diff</summary>" in html and "Greets everyone warmly." in html
    data = report.to_json()
    assert data["modelDivergence"]["round"] == 1
    assert data["modelDivergence"]["subject"] == "message 0 (system)"
    assert [t["served"] for t in data["modelTurns"]] == [False, False, False]


def test_a_changed_script_output_diverges_at_the_round_that_sees_its_result(
        recording: Recording, tmp_path: Path) -> None:
    bye = changed(tmp_path, "bye", **{"scripts/hi.js": "console.log('bye');\n"})
    report = tavernlab.replay.replay(recording.bundle, skills={"greet": bye})
    diverged = report.model_divergence
    assert diverged is not None and report.first is diverged
    assert (diverged.invocation, diverged.round, diverged.call, diverged.subject) == (
        "inv_root", 3, "c2", "message 5 (tool result of c2)")
    assert diverged.action == "model request of round 3 (inv_root, call c2)"
    changes = [line[0] + line[1:].strip() for line in (diverged.diff or "").splitlines()
               if line.startswith(("-", "+")) and not line.startswith(("---", "+++"))]
    assert changes == ["-hi there", "+bye"]
    assert [t.served for t in report.model_turns] == [True, True, False]
    assert diverged.summary() == ("round 3 model request (inv_root, call c2): model_request "
                                  "message 5 (tool result of c2)")
    # the tool call that ran the script differs too, and is listed with the rest
    assert any(d.kind == "result" and d.action == "builtin:workspace.shell c2"
               for d in report.divergences), [d.summary() for d in report.divergences]


def test_the_same_skill_from_a_path_is_identical(recording: Recording) -> None:
    report = tavernlab.replay.replay(recording.bundle, skills={"greet": recording.package})
    assert report.identical and report.model_divergence is None


# -- continuing live ------------------------------------------------------------------------------


def test_a_live_model_continues_from_the_divergence_as_a_new_run(
        recording: Recording, tmp_path: Path) -> None:
    bye = changed(tmp_path, "bye", **{"scripts/hi.js": "console.log('bye');\n"})
    live = Scripted(live_turns())
    report = tavernlab.replay.replay(recording.bundle, skills={"greet": bye}, live=live)
    continuation = report.live
    assert continuation is not None and report.lab is not None
    assert continuation.run_id != recording.run_id
    assert (continuation.status, continuation.failure, continuation.rounds,
            continuation.from_round, continuation.invocation) == (
        "completed", None, 3, 3, "inv_root")
    # the live model answered only the diverged round, from the rebuilt transcript
    assert len(live.requests) == 1
    last = live.requests[0].request.messages[-1]
    assert last.role == "tool" and "bye" in json.dumps(last.model_dump(mode="json"))
    lab = Path(report.lab)
    new_dir = next(lab.rglob(f"{continuation.run_id}/run.json")).parent
    for n in (1, 2):
        assert (new_dir / f"model-responses/round-00{n}.json").read_bytes() == \
            (recording.run_dir / f"model-responses/round-00{n}.json").read_bytes()
    assert (new_dir / "output" / "main.md").read_text() == "bye for now"
    assert continuation.summary() == (f"live run {continuation.run_id}: completed after 3 "
                                      "rounds (live from round 3 of inv_root)")
    assert str(report).splitlines()[-1] == continuation.summary()


def test_the_openai_client_continues_live_from_the_divergence(
        recording: Recording, tmp_path: Path) -> None:
    bye = changed(tmp_path, "bye", **{"scripts/hi.js": "console.log('bye');\n"})
    with contextlib.ExitStack() as stack:
        provider, sent = provider_for("openai", live_turns("live bye"), stack)
        report = tavernlab.replay.replay(recording.bundle, lab=tmp_path / "live-lab",
                                  skills={"greet": bye}, live=provider)
        bodies = sent()
    assert report.live is not None and report.live.status == "completed"
    assert len(bodies) == 1
    last = bodies[0]["messages"][-1]
    assert last["role"] == "tool" and last["tool_call_id"] == "c2" and "bye" in last["content"]
    new_dir = next((tmp_path / "live-lab").rglob(f"{report.live.run_id}/run.json")).parent
    assert (new_dir / "output" / "main.md").read_text() == "live bye"


def test_the_cli_continues_live_with_a_scripted_file(
        recording: Recording, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bye = changed(tmp_path, "bye", **{"scripts/hi.js": "console.log('bye');\n"})
    script = tmp_path / "live.json"
    script.write_text(json.dumps(live_turns()))
    lab = tmp_path / "cli-live"
    assert main(["replay", str(recording.bundle), "--skill", f"greet={bye}", "--lab",
                 str(lab), "--live", f"scripted:{script}"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].endswith("first: round 3 model request (inv_root, call c2): model_request "
                           "message 5 (tool result of c2)")
    assert out[-1].startswith("live run run_") and out[-1].endswith(
        ": completed after 3 rounds (live from round 3 of inv_root)")
    assert main(["replay", str(recording.bundle), "--live", "scripted:/no/such.json"]) == 1
    assert capsys.readouterr().err == (
        "error: model.invalid_spec: scripted model file `/no/such.json` cannot be read: "
        "No such file or directory\n")


def test_a_live_model_needs_a_model_driven_run(tmp_path: Path) -> None:
    lab = deterministic_lab(tmp_path / "hand")
    run = lab.start_run(chat_id="alice")
    run.finish()
    bundle = run.export(tmp_path / "hand.tavernrun")
    with pytest.raises(ReplaySetupError) as info:
        tavernlab.replay.replay(bundle, live=Scripted(live_turns()))
    assert info.value.message == ("a live model can only continue a run the agent loop "
                                  "drove; this bundle's run was played by hand")


# -- old bundles and bad input --------------------------------------------------------------------

Members = dict[str, bytes]


def members(path: Path) -> Members:
    with zipfile.ZipFile(path) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def rewrite(source: Path, target: Path, change: Callable[[Members, dict[str, Any]], None]
            ) -> Path:
    """``source`` with its manifest (and members) changed, resealed as a forger would."""
    found = members(source)
    manifest = json.loads(found["manifest.json"])
    change(found, manifest)
    text = json.dumps(manifest, indent=1).encode()
    found["manifest.json"] = text
    found["manifest.sha256"] = (hashlib.sha256(text).hexdigest() + "\n").encode()
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in found.items():
            archive.writestr(name, data)
    return target


def test_a_version_1_bundle_still_replays(tmp_path: Path) -> None:
    lab = deterministic_lab(tmp_path / "hand")
    run = lab.start_run(chat_id="alice")
    run.call_tool("workspace.write_file", {"path": "output/main.md", "content": "Hello"})
    run.finish()
    bundle = run.export(tmp_path / "new.tavernrun")

    def version_1(found: Members, manifest: dict[str, Any]) -> None:
        assert manifest.pop("agent") is None
        manifest["formatVersion"] = 1

    old = rewrite(bundle, tmp_path / "old.tavernrun", version_1)
    assert read_bundle(old).manifest.format_version == 1
    report = tavernlab.replay.replay(old)
    assert report.identical and report.model_turns == []


def test_a_model_driven_bundle_is_not_played_action_by_action(recording: Recording) -> None:
    with pytest.raises(ReplaySetupError) as info:
        Replay.prepare(recording.bundle)
    assert "driven by the agent loop" in info.value.message


def _drop_listed(found: Members, manifest: dict[str, Any]) -> None:
    del manifest["run"]["files"]["model-responses/round-002.json"]
    manifest["agent"]["responses"] = [r for r in manifest["agent"]["responses"]
                                      if r["round"] != 2]


def _drop_file(found: Members, manifest: dict[str, Any]) -> None:
    del manifest["run"]["files"]["model-responses/round-002.json"]


def _forge(record: Callable[[dict[str, Any]], Any]) -> Callable[[Members, dict[str, Any]],
                                                                  None]:
    def change(found: Members, manifest: dict[str, Any]) -> None:
        files = manifest["run"]["files"]
        data = json.loads(found["blobs/" + files["model-responses/round-002.json"]])
        forged = json.dumps(record(data)).encode()
        digest = hashlib.sha256(forged).hexdigest()
        found["blobs/" + digest] = forged
        files["model-responses/round-002.json"] = digest
    return change


def _tamper_bytes(found: Members, manifest: dict[str, Any]) -> None:
    name = "blobs/" + manifest["run"]["files"]["model-responses/round-002.json"]
    found[name] = found[name].replace(b"Running it.", b"Running it!")


@pytest.mark.parametrize(("change", "message"), [
    (_drop_listed, "the bundle has no recorded model response model-responses/round-002.json "
                   "(invocation `inv_root` round 2, named by its model_response_stored "
                   "event)"),
    (_drop_file, "the bundle has no run file model-responses/round-002.json, the recorded "
                 "model response of invocation `inv_root` round 2"),
    (_forge(lambda r: {**r, "round": 3}),
     "run file model-responses/round-002.json does not hold the model response of "
     "invocation `inv_root` round 2"),
    (_forge(lambda r: {**r, "response": {"message": "not a message"}}),
     "run file model-responses/round-002.json is not a model response record: "),
    (_tamper_bytes, "does not match its digest (its bytes were changed)"),
])
def test_missing_or_tampered_model_responses_are_one_clear_line(
        recording: Recording, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        change: Callable[[Members, dict[str, Any]], None], message: str) -> None:
    bad = rewrite(recording.bundle, tmp_path / "bad.tavernrun", change)
    with pytest.raises(BundleInvalid) as info:
        tavernlab.replay.replay(bad, lab=tmp_path / "never")
    assert message in info.value.message
    assert not (tmp_path / "never").exists()
    assert main(["replay", str(bad), "--lab", str(tmp_path / "never")]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: replay.bundle_invalid: ")
    assert message in lines[0]
    assert not (tmp_path / "never").exists()


def test_temporary_labs_are_cleaned_up(recording: Recording, tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    bye = changed(tmp_path, "bye", **{"scripts/hi.js": "console.log('bye');\n"})
    report = tavernlab.replay.replay(recording.bundle, skills={"greet": bye})
    assert report.model_divergence is not None and report.lab is None
    assert list(_entries(tmp_path / "tmp")) == []


def _entries(folder: Path) -> Iterator[Path]:
    yield from folder.iterdir()


# -- sub-agents and handoff -----------------------------------------------------------------------

CRITIC = {"description": "Reviews scene drafts.", "delegation": {"allowHandoff": False}}
FINISHER = {"description": "Completes the final draft.",
            "delegation": {"allowSubAgent": False},
            "tools": {"allow": ["workspace.list_files", "workspace.read_file",
                                "workspace.write_file", "workspace.commit",
                                "workspace.finish"]}}


def test_a_delegated_task_replays_identically(tmp_path: Path) -> None:
    responses = [
        turn(None, call("d1", "agent_delegate", {"agentId": "scene-critic", "task": {
            "objective": "Review the scene.", "title": "Review"}}),
             call("d2", "agent_await", {"mode": "nextCompleted"})),
        turn(None, call("d3", "task_return", {"summary": "The scene works."})),
        turn(None, write("d4", "output/main.md", "reviewed"), finish("d5"))]
    recording = Recording(tmp_path, responses, name="delegated", presentation="background",
                          agents={"scene-critic": CRITIC})
    assert recording.outcome.status == "completed"
    agent = read_bundle(recording.bundle).manifest.agent
    assert agent is not None and list(agent.agents) == ["scene-critic"]
    assert [r.invocation_id == "inv_root" for r in agent.responses] == [True, False, True]
    other = tmp_path / "delegated-replayed"
    report = tavernlab.replay.replay(recording.bundle, lab=other)
    assert report.identical, str(report)
    same_lab_files(recording.root, other)
    assert [t.invocation == "inv_root" for t in report.model_turns] == [True, False, True]


def test_a_handoff_replays_identically(tmp_path: Path) -> None:
    from tavernlab.workspace.roots._profile import DEFAULT_ALLOWED_TOOLS

    handing_off = {"tools": {"allow": [*DEFAULT_ALLOWED_TOOLS, "agent.handoff"]}}
    responses = [
        turn(None, write("h1", "output/main.md", "draft"), call("h2", "workspace_commit", {}),
             call("h3", "agent_handoff", {"agentId": "finisher", "handoff": {
                 "objective": "Finish the draft.", "workspaceRefs": ["output/main.md"]}})),
        turn(None, finish("h4"))]
    recording = Recording(tmp_path, responses, name="handoff", profile=handing_off,
                          agents={"finisher": FINISHER})
    assert recording.outcome.status == "completed"
    report = tavernlab.replay.replay(recording.bundle)
    assert report.identical, str(report)


def test_a_model_driven_bundle_has_no_step_by_step_notebook(
        recording: Recording, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["notebook", "from-run", str(recording.bundle), "-o",
                 str(tmp_path / "n.ipynb")]) == 1
    assert capsys.readouterr().err.splitlines() == [
        "error: replay.setup_failed: the bundle's run was driven by the agent loop: replay it "
        "with tavernlab replay (the loop runs again), not cell by cell"]
    assert not (tmp_path / "n.ipynb").exists()


def test_a_recording_that_does_not_replay_identically_says_so_before_its_requests(
        recording: Recording, tmp_path: Path) -> None:
    def edit_main(found: Members, manifest: dict[str, Any]) -> None:
        files = manifest["run"]["files"]
        edited = b"edited by hand"
        digest = hashlib.sha256(edited).hexdigest()
        found["blobs/" + digest] = edited
        files["output/main.md"] = digest

    edited = rewrite(recording.bundle, tmp_path / "edited.tavernrun", edit_main)
    bye = changed(tmp_path, "bye", **{"scripts/hi.js": "console.log('bye');\n"})
    report = tavernlab.replay.replay(edited, skills={"greet": bye})
    note = report.divergences[0]
    assert (note.index, note.kind, note.subject) == (-1, "setup", "recorded model requests")
    assert note.actual is not None and note.actual.startswith(
        "the recording does not replay byte for byte with its own skills (first: action 4 "
        "(builtin:workspace.write_file c3): file output/main.md)")
    assert report.model_divergence is not None and report.model_divergence.round == 3


def test_a_run_cancelled_during_a_model_call_replays_identically(tmp_path: Path) -> None:
    import threading

    package = write_package(tmp_path / "greet", GREET)
    lab = deterministic_lab(tmp_path / "cancelled")
    lab.skills.install(package)
    slow = turn("Thinking " * 200, write("s1", "output/main.md", "never"))
    slow["delayMs"] = 5000  # the cancel ends the pause; a busy machine cannot outrun it
    handle = lab.start_agent(TASK, model=Scripted([turns()[0], slow]))
    started = threading.Event()

    def look(record: Any) -> None:
        if record.type == "model_call_attempt_started" and record.payload.round == 2:
            started.set()
    with handle.run.subscribe(look):
        assert started.wait(60)
    assert handle.cancel() >= 1
    outcome = handle.wait(60)
    assert outcome.status == "cancelled"
    bundle = outcome.run.export(tmp_path / "cancelled.tavernrun")
    lab.close()
    agent = read_bundle(bundle).manifest.agent
    assert agent is not None and agent.cancelled_attempt is not None
    assert (agent.cancelled_attempt.round, agent.cancelled_attempt.attempt) == (2, 1)
    other = tmp_path / "cancelled-replayed"
    report = tavernlab.replay.replay(bundle, lab=other)
    assert report.identical, str(report)
    same_lab_files(tmp_path / "cancelled", other)
    assert [t.round for t in report.model_turns] == [1]


def test_replay_many_takes_model_driven_bundles(recording: Recording, tmp_path: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    bye = changed(tmp_path, "bye", **{"scripts/hi.js": "console.log('bye');\n"})
    with ThreadPoolExecutor(max_workers=1) as pool:
        same = tavernlab.replay_many([recording.bundle], executor=pool)
        other = tavernlab.replay_many([recording.bundle], skills={"greet": str(bye)},
                                      executor=pool)
    assert same.identical == 1
    first = other.reports[0].first
    assert other.identical == 0 and first is not None and first.round == 3
    assert other.rows()[0]["first"] == ("round 3 model request (inv_root, call c2): "
                                        "model_request message 5 (tool result of c2)")
