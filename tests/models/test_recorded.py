"""The recorded model: a run's model-responses/ served by invocation and round."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import call, make_request, turn

from tavernlab.cancel import CancelToken
from tavernlab.models import (
    ModelCallError,
    ModelResponse,
    Recorded,
    Scripted,
    TextDelta,
    ToolCallDelta,
)


def scripted_response(entry: dict[str, Any], invocation: str = "inv_root") -> ModelResponse:
    return Scripted([entry]).generate(make_request(invocation=invocation), stream=False,
                                      on_delta=None, cancel=CancelToken())


def write_record(run_dir: Path, invocation: str, number: int, response: ModelResponse) -> Path:
    folder = run_dir / "model-responses"
    if invocation != "inv_root":
        folder = folder / invocation
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"round-{number:03d}.json"
    record = {"round": number, "invocationId": invocation,
              "response": response.model_dump(by_alias=True, mode="json")}
    path.write_text(json.dumps(record, indent=2, ensure_ascii=False), encoding="utf-8")
    return path


def ask(model: Recorded, invocation: str = "inv_root", **kwargs: Any) -> ModelResponse:
    return model.generate(make_request(invocation=invocation), stream=kwargs.pop("stream", False),
                          on_delta=kwargs.pop("on_delta", None), cancel=CancelToken())


def test_from_run_dir_serves_each_invocation_its_rounds(tmp_path: Path) -> None:
    root1 = scripted_response(turn("root one", call("c1", "workspace_list_files", "{}")))
    root2 = scripted_response(turn("root two"))
    child1 = scripted_response(turn("child one"), "inv_child")
    write_record(tmp_path, "inv_root", 1, root1)
    write_record(tmp_path, "inv_root", 2, root2)
    write_record(tmp_path, "inv_child", 1, child1)
    model = Recorded.from_run_dir(tmp_path)
    assert model.keys == [("inv_child", 1), ("inv_root", 1), ("inv_root", 2)]
    first = ask(model)
    assert first == root1
    assert first.model_dump_json(by_alias=True) == root1.model_dump_json(by_alias=True)
    assert ask(model, "inv_child").text == "child one"
    assert ask(model).text == "root two"
    assert [(r.invocation_id, r.round) for r in model.requests] == \
        [("inv_root", 1), ("inv_child", 1), ("inv_root", 2)]
    assert model.requests[1].request.provider_state["invocationId"] == "inv_child"
    assert first.provider_state["chatCompletionSource"] == "scripted"
    assert first.provider_state["providerFormat"] == "scripted"
    assert first.provider_state["sessionId"] == "run_x:inv_root"
    assert model.describe() == {"provider": "recorded", "model": "recorded", "responses": 3}


def test_a_request_beyond_the_recording_is_a_clear_error(tmp_path: Path) -> None:
    write_record(tmp_path, "inv_root", 1, scripted_response(turn("only")))
    model = Recorded.from_run_dir(tmp_path)
    ask(model)
    with pytest.raises(ModelCallError) as caught:
        ask(model)
    assert caught.value.code == "replay.model_response_missing"
    assert caught.value.kind == "internal" and not caught.value.retryable
    assert str(caught.value) == ("replay.model_response_missing: the recording has no model "
                                 "response for invocation `inv_root` round 2 (1 recorded)")
    with pytest.raises(ModelCallError, match="invocation `inv_other` round 1"):
        ask(model, "inv_other")
    assert len(model.requests) == 3  # kept, so that replay can show what was asked


def test_records_in_memory_and_bare_responses() -> None:
    a, b = scripted_response(turn("a")), scripted_response(turn("b"))
    model = Recorded([a.model_dump(by_alias=True, mode="json"), b])
    assert [ask(model).text, ask(model).text] == ["a", "b"]
    keyed = Recorded([{"round": 2, "invocationId": "inv_root", "response": b},
                      {"round": 1, "invocationId": "inv_root", "response": a}])
    assert [ask(keyed).text, ask(keyed).text] == ["a", "b"]
    with pytest.raises(ValueError, match="two recorded responses for invocation `inv_root`"):
        Recorded([{"round": 1, "invocationId": "inv_root", "response": a}, a])


def test_a_record_that_contradicts_its_path_is_refused(tmp_path: Path) -> None:
    path = write_record(tmp_path, "inv_root", 1, scripted_response(turn("a")))
    path.rename(path.with_name("round-002.json"))
    with pytest.raises(ValueError, match="its path says `inv_root` round 2"):
        Recorded.from_run_dir(tmp_path)
    (tmp_path / "model-responses" / "round-002.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(ValueError, match="not a readable model response record"):
        Recorded.from_run_dir(tmp_path)


def test_no_model_responses_means_an_empty_recording(tmp_path: Path) -> None:
    model = Recorded.from_run_dir(tmp_path)
    assert model.keys == []
    with pytest.raises(ModelCallError, match=r"replay\.model_response_missing"):
        ask(model)


def test_streamed_replay_delivers_the_recorded_pieces() -> None:
    response = scripted_response(turn("Hello again.", call("c1", "workspace_list_files",
                                                           '{"depth":1}')))
    model = Recorded([response])
    deltas: list[Any] = []
    assert ask(model, stream=True, on_delta=deltas.append) == response
    assert "".join(d.text for d in deltas if isinstance(d, TextDelta)) == "Hello again."
    assert [d for d in deltas if isinstance(d, ToolCallDelta)] == [
        ToolCallDelta(0, "builtin:workspace.list_files", '{"depth":1}')]


def test_native_continuation_is_restored_from_the_recording() -> None:
    response = ModelResponse.model_validate({
        "message": {"role": "assistant", "parts": [
            {"type": "text", "text": "hi"},
            {"type": "native", "provider": "claude_messages",
             "value": [{"type": "thinking", "thinking": "t", "signature": "s"},
                       {"type": "text", "text": "hi"}]}]},
        "text": "hi", "providerMetadata": {"id": "msg_1", "model": "claude-x",
                                          "chatCompletionSource": "claude",
                                          "providerFormat": "claude_messages"}})
    state = ask(Recorded([response])).provider_state
    assert state["nativeContinuation"] == {"provider": "claude_messages", "partCount": 2}
    assert (state["chatCompletionSource"], state["providerFormat"], state["lastResponseId"]) \
        == ("claude", "claude_messages", "msg_1")
