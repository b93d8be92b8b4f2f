"""Both SDK-backed providers through their real clients against the local server: answers,
tool calls, streaming, malformed answers, HTTP statuses, dropped connections, retries off,
cancellation, credentials and the key never leaking."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest
from conftest import Factory, call, make_request, turn
from model_servers import OVERSIZE_BYTES, TEST_KEY, TEST_KEY_ENV, ModelServer

import tavernlab.models as models
from tavernlab.cancel import CancelToken
from tavernlab.models import (
    ModelCallError,
    ModelCancelled,
    ModelResponse,
    ReasoningDelta,
    TextDelta,
    ToolCallDelta,
)

WIRES = ["openai", "anthropic"]
BOTH = pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])


def generate(provider: Any, *, stream: bool, request: Any = None,
             deltas: list[Any] | None = None, cancel: CancelToken | None = None,
             timeout_s: float = 30.0) -> ModelResponse:
    sink = deltas.append if deltas is not None else None
    return provider.generate(request or make_request(), stream=stream, on_delta=sink,
                             cancel=cancel or CancelToken(), timeout_s=timeout_s)


def failure(provider: Any, *, stream: bool, **kwargs: Any) -> ModelCallError:
    with pytest.raises(ModelCallError) as caught:
        generate(provider, stream=stream, **kwargs)
    return caught.value


@pytest.mark.parametrize("wire", WIRES)
@BOTH
def test_plain_text_answer(serve: Factory, wire: str, stream: bool) -> None:
    server, provider = serve(wire, [turn("Hello there.", usage={
        "prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15})])
    response = generate(provider, stream=stream)
    assert response.text == "Hello there."
    assert response.tool_calls == []
    assert response.message.role == "assistant"
    assert response.usage.input_tokens == 12
    assert response.usage.output_tokens == 3
    assert response.usage.total_tokens == 15
    assert response.provider_metadata["providerFormat"] == provider.provider_format
    assert server.requests[0]["stream"] is stream
    assert response.provider_state["sessionId"] == "run_x:inv_root"
    assert response.provider_state["messageCursor"] == 2


@pytest.mark.parametrize("wire", WIRES)
@BOTH
def test_tool_calls_valid_empty_and_invalid_arguments(serve: Factory, wire: str,
                                                      stream: bool) -> None:
    _, provider = serve(wire, [turn(
        "Looking around.",
        call("call_write", "workspace_write_file",
             '{"path":"output/main.md","content":"héllo"}'),
        call("call_empty", "workspace_list_files", "null"),
        call("call_invalid", "workspace_list_files", '{"path":'))])
    response = generate(provider, stream=stream)
    calls = response.tool_calls
    assert [c.call_id for c in calls] == ["call_write", "call_empty", "call_invalid"]
    assert [c.tool_id for c in calls] == ["builtin:workspace.write_file",
                                          "builtin:workspace.list_files",
                                          "builtin:workspace.list_files"]
    assert calls[0].arguments == {"path": "output/main.md", "content": "héllo"}
    assert calls[1].arguments == {}
    assert calls[2].arguments == '{"path":'
    assert not calls[2].arguments_valid
    assert [c.model_alias for c in calls] == ["workspace_write_file", "workspace_list_files",
                                              "workspace_list_files"]
    assert response.text == "Looking around."


@pytest.mark.parametrize("wire", WIRES)
def test_stream_deltas_arrive_before_the_answer_ends(serve: Factory, wire: str) -> None:
    server, provider = serve(wire, [turn(
        "One two three four five six.",
        call("call_write", "workspace_write_file", '{"path":"a.md","content":"x"}'),
        call("call_bad", "unadvertised_tool_never_called", "{}"),
        reasoning_content="Thinking it over.", delayMs=30)])
    seen: list[tuple[float, Any]] = []

    def on_delta(delta: Any) -> None:
        seen.append((time.monotonic(), delta))

    with pytest.raises(ModelCallError) as caught:  # the made-up alias fails the answer at the end
        provider.generate(make_request(), stream=True, on_delta=on_delta, cancel=CancelToken())
    assert caught.value.code == "model.unknown_tool_call"
    sent = server.sent_at[0]
    assert seen and seen[0][0] < sent[-1]  # the first piece was seen before the last was sent
    kinds = [type(d) for _, d in seen]
    assert kinds.index(ReasoningDelta) < kinds.index(TextDelta) < kinds.index(ToolCallDelta)
    text = "".join(d.text for _, d in seen if isinstance(d, TextDelta))
    assert text == "One two three four five six."
    assert "".join(d.text for _, d in seen if isinstance(d, ReasoningDelta)) == \
        "Thinking it over."
    fragments = [d for _, d in seen if isinstance(d, ToolCallDelta)]
    assert {d.tool_id for d in fragments} == {"builtin:workspace.write_file"}  # advertised only
    assert "".join(d.arguments_fragment for d in fragments) == '{"path":"a.md","content":"x"}'
    assert {d.tool_call_index for d in fragments} == {0}


MALFORMED = [
    ("truncate", "network.body_interrupted", "interrupted while it was being read"),
    ("invalid_json", "model.upstream_invalid_response", "JSON"),
    ("no_id", "model.invalid_tool_call", "tool call 0 is missing id"),
    ("unknown_alias", "model.unknown_tool_call",
     "model returned unadvertised tool alias `unknown_tool`"),
    ("error_body", "agent.validation_error", "The server is overloaded (scripted error body)."),
    ("oversize", "model.upstream_invalid_response", "larger than 8 MiB"),
]


@pytest.mark.parametrize("wire", WIRES)
@BOTH
@pytest.mark.parametrize(("how", "code", "text"), MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_answer_is_classified(serve: Factory, wire: str, stream: bool, how: str,
                                        code: str, text: str) -> None:
    server, provider = serve(wire, [turn(
        "Writing.", call("call_write", "workspace_write_file", '{"path":"a.md","content":"x"}'),
        misbehave=how)])
    error = failure(provider, stream=stream)
    assert error.code == code
    assert text in error.message
    assert error.message.startswith(f"{code}: ")
    assert len(server.requests) == 1
    expected_kind = {"network.body_interrupted": "upstream",
                     "model.upstream_invalid_response": "transient",
                     "agent.validation_error": "invalid_data"}.get(code, "validation")
    assert error.kind == expected_kind


@pytest.mark.parametrize("wire", WIRES)
def test_oversize_answer_is_refused_while_reading(serve: Factory, wire: str) -> None:
    server, provider = serve(wire, [turn("big", misbehave="oversize")])
    error = failure(provider, stream=False)
    assert error.code == "model.upstream_invalid_response"
    assert "8 MiB" in error.message and "refused" in error.message
    assert OVERSIZE_BYTES > 8 * 1024 * 1024
    assert server.finished == 0  # the client stopped reading before the body's end


STATUSES = [
    (429, "agent.rate_limited", "rate_limited"),
    (503, "agent.transient", "transient"),
    (500, "agent.transient", "transient"),
    (400, "agent.validation_error", "invalid_data"),
    (401, "agent.unauthorized", "unauthorized"),
    (403, "agent.unauthorized", "unauthorized"),
    (404, "agent.internal_error", "internal"),
]


@pytest.mark.parametrize("wire", WIRES)
@pytest.mark.parametrize(("status", "code", "kind"), STATUSES, ids=[str(s[0]) for s in STATUSES])
def test_http_status_is_classified_and_never_retried_by_the_client(
        serve: Factory, wire: str, status: int, code: str, kind: str) -> None:
    server, provider = serve(wire, [{"error": {"status": status, "message": "scripted no"}},
                                    turn("should never be asked for")])
    error = failure(provider, stream=True)
    assert (error.code, error.kind, error.status) == (code, kind, status)
    assert "scripted no" in error.message
    if status in (429, 500, 503, 404):
        assert f"endpoint failed with status {status}: scripted no" in error.message
    assert error.retryable is (kind in ("rate_limited", "transient"))
    assert len(server.requests) == 1  # the SDK's own retries are off


@pytest.mark.parametrize("wire", WIRES)
@BOTH
def test_dropped_connection_is_a_retryable_network_failure(serve: Factory, wire: str,
                                                           stream: bool) -> None:
    server, provider = serve(wire, [{"error": {"network": "network.request_failed"}}])
    error = failure(provider, stream=stream)
    assert error.code == "network.request_failed"
    assert error.kind == "upstream" and error.retryable
    assert error.message == ("network.request_failed: Network request failed. "
                             f"({server.base_url.rstrip('/')}"
                             f"{'/chat/completions' if wire == 'openai' else '/v1/messages'})")
    assert len(server.requests) == 1


@pytest.mark.parametrize("wire", WIRES)
def test_refused_connection_and_unknown_host(wire: str, test_key: str) -> None:
    with ModelServer(wire, []) as server:
        base = server.base_url
    kind = models.OpenAICompatible if wire == "openai" else models.ClaudeMessages
    closed = kind("m", base_url=base, api_key_env=TEST_KEY_ENV)  # nobody listens there now
    error = failure(closed, stream=True)
    assert error.code == "network.connect_failed"
    assert "Could not connect to the target service." in error.message
    nowhere = kind("m", base_url="http://no-such-host.invalid/v1", api_key_env=TEST_KEY_ENV)
    error = failure(nowhere, stream=False)
    assert error.code == "network.dns_failed"
    assert error.retryable
    closed.close()
    nowhere.close()


@pytest.mark.parametrize("wire", WIRES)
@BOTH
def test_timeout(serve: Factory, wire: str, stream: bool) -> None:
    server, provider = serve(wire, [turn("late", delayMs=3000)])
    error = failure(provider, stream=stream, timeout_s=0.3)
    assert error.code == "network.timeout"
    assert "timed out" in error.message
    assert len(server.requests) == 1


@pytest.mark.parametrize("wire", WIRES)
def test_cancel_mid_stream_stops_the_read(serve: Factory, wire: str) -> None:
    text = "word " * 40
    server, provider = serve(wire, [turn(text, delayMs=100)])
    cancel = CancelToken()
    first = threading.Event()
    deltas: list[Any] = []

    def on_delta(delta: Any) -> None:
        deltas.append(delta)
        first.set()

    canceller = threading.Thread(target=lambda: first.wait(10) and cancel.cancel())
    canceller.start()
    with pytest.raises(ModelCancelled) as caught:
        provider.generate(make_request(), stream=True, on_delta=on_delta, cancel=cancel)
    canceller.join()
    assert caught.value.message == "Generation cancelled by user"
    assert caught.value.code == "agent.cancelled"
    assert len(deltas) < len(text) // 8  # far from all of the pieces arrived
    assert server.finished == 0


@pytest.mark.parametrize("wire", WIRES)
def test_cancel_while_waiting_for_the_answer(serve: Factory, wire: str) -> None:
    server, provider = serve(wire, [{"error": {"status": 500}, "delayMs": 10_000}])
    cancel = CancelToken()
    started = threading.Thread(target=lambda: (_wait_for_request(server), cancel.cancel()))
    started.start()
    with pytest.raises(ModelCancelled):
        provider.generate(make_request(), stream=False, on_delta=None, cancel=cancel)
    started.join()
    assert server.finished == 0  # the server was still holding its answer back


def _wait_for_request(server: ModelServer) -> None:
    deadline = time.monotonic() + 10
    while not server.requests and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.05)


@pytest.mark.parametrize("wire", WIRES)
def test_cancelled_before_the_call_sends_nothing(serve: Factory, wire: str) -> None:
    server, provider = serve(wire, [turn("never")])
    cancel = CancelToken()
    cancel.cancel()
    with pytest.raises(ModelCancelled):
        generate(provider, stream=True, cancel=cancel)
    assert server.requests == []


@pytest.mark.parametrize("wire", WIRES)
def test_missing_credential_names_the_variable(serve: Factory, wire: str,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TAVERNLAB_NO_SUCH_KEY", raising=False)
    server, provider = serve(wire, [turn("never")], api_key_env="TAVERNLAB_NO_SUCH_KEY")
    error = failure(provider, stream=True)
    assert error.code == "model.credentials_missing"
    assert "`TAVERNLAB_NO_SUCH_KEY`" in error.message and "set" in error.message
    assert error.kind == "unauthorized" and not error.retryable
    assert server.requests == []
    monkeypatch.setenv("TAVERNLAB_NO_SUCH_KEY", "   ")
    assert failure(provider, stream=False).code == "model.credentials_missing"


@pytest.mark.parametrize("wire", WIRES)
def test_the_key_never_leaks(serve: Factory, wire: str) -> None:
    server, provider = serve(wire, [
        turn("ok", call("call_1", "workspace_list_files", "{}")),
        {"error": {"status": 401, "message": "bad key"}},
        {"error": {"network": "network.request_failed"}},
        turn("x", misbehave="invalid_json"),
    ], params={"temperature": 0.2})
    outputs = [json.dumps(provider.describe()), repr(provider)]
    response = generate(provider, stream=True)
    outputs.append(response.model_dump_json(by_alias=True))
    outputs.append(json.dumps(response.provider_state))
    for stream in (False, True, False):
        outputs.append(str(failure(provider, stream=stream)))
    assert all(TEST_KEY not in text for text in outputs)
    assert all(TEST_KEY not in json.dumps(body) for body in server.requests)
    assert all(TEST_KEY in _credential_header(h) for h in server.headers)
    assert provider.describe() == {
        "provider": provider.provider_format, "model": "test-model",
        "baseUrl": server.base_url, "apiKeyEnv": TEST_KEY_ENV,
        "params": {"temperature": 0.2}}


@pytest.mark.parametrize("wire", WIRES)
def test_the_key_is_read_at_call_time(serve: Factory, wire: str,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    server, provider = serve(wire, [turn("a"), turn("b")])
    generate(provider, stream=False)
    monkeypatch.setenv(TEST_KEY_ENV, "sk-rotated")
    generate(provider, stream=False)
    assert TEST_KEY in _credential_header(server.headers[0])
    assert "sk-rotated" in _credential_header(server.headers[1])


def _credential_header(headers: dict[str, str]) -> str:
    """The header the SDK put the key in (``x-api-key`` or ``authorization``)."""
    return headers.get("x-api-key") or headers["authorization"]


@pytest.mark.parametrize("wire", WIRES)
def test_a_key_echoed_by_the_server_is_masked(serve: Factory, wire: str) -> None:
    _, provider = serve(wire, [{"error": {"status": 401,
                                          "message": f"Incorrect API key provided: {TEST_KEY}"}}])
    error = failure(provider, stream=False)
    assert error.code == "agent.unauthorized"
    assert TEST_KEY not in str(error)
    assert str(error) == "agent.unauthorized: Incorrect API key provided: ***"


CONTRACT = [
    ({"code": "model.invalid_tool_call", "message": "missing id"},
     "model.invalid_tool_call: tool call 0 is missing id"),
    ({"code": "model.unknown_tool_call", "alias": "foo"},
     "model.unknown_tool_call: model returned unadvertised tool alias `foo`"),
    ({"code": "model.output_truncated"},
     "model.output_truncated: provider stopped before completing the Agent turn (length)"),
    ({"code": "model.provider_refusal"},
     "model.provider_refusal: provider refused to complete the Agent turn"),
]


@pytest.mark.parametrize("wire", WIRES)
@pytest.mark.parametrize(("spec", "message"), CONTRACT, ids=[c[0]["code"] for c in CONTRACT])
def test_scripted_contract_errors_are_real_answers_on_the_wire(
        serve: Factory, wire: str, spec: dict[str, Any], message: str) -> None:
    _, provider = serve(wire, [{"error": spec}])
    error = failure(provider, stream=True)
    if wire == "anthropic":
        message = message.replace("(length)", "(max_tokens)")
    assert str(error) == message
    assert error.kind == "validation" and not error.retryable
