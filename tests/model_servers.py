"""Local model servers for the tests: a real HTTP server on 127.0.0.1 that speaks the OpenAI
Chat Completions or the Anthropic Messages wire format (JSON and SSE), serving turns written in
upstream's fixture shape -- the same dicts :class:`tavernlab.models.Scripted` takes.

A turn is ``{"choices": [{"message": {...}, "finish_reason": ...}], "usage": {...}}`` or a
failure ``{"error": {"status": 429, "message": ...}}`` (that HTTP status, with the provider's
error JSON), ``{"error": {"network": ..., ...}}`` (the server drops the connection without an
answer: a real client sees ``network.request_failed``, whatever code the fixture names; with
a ``delayMs`` longer than the call's timeout it sees ``network.timeout``) or
``{"error": {"code": ...}}``: for ``model.invalid_tool_call`` a tool call without an id, for
``model.unknown_tool_call`` a call of the alias ``error.alias`` (``unknown_tool``), for
``model.output_truncated`` / ``model.provider_refusal`` an answer cut by its length or
refused -- so the real client fails with that same code (its own message); any other code is
served as an HTTP 400 with the message. ``"delayMs"`` pauses before each
streamed chunk (before the body of a JSON answer), for cancellation and first-token tests.

A turn may also misbehave (``"misbehave": <name>``; ignored by ``Scripted``):

* ``truncate``  -- the body ends before its end (SSE: in the middle of an event, without the
  stream's terminator; JSON: half of a ``Content-Length`` body, then the connection closes);
* ``invalid_json`` -- a body (or one SSE event) that is not JSON;
* ``no_id`` -- the tool calls are sent without their ids;
* ``unknown_alias`` -- the first tool call's name becomes ``unknown_tool``;
* ``error_body`` -- HTTP 200 with the provider's error JSON (SSE: an error event);
* ``oversize`` -- an answer larger than 8 MiB (the text is padded).

The server records every request body it received (``requests``, parsed JSON), its headers
(``headers``) and, per request, the ``time.monotonic()`` at which each streamed chunk was sent
(``sent_at``) and how many answers it sent to their end (``finished``). It is stopped by its
context manager; no thread is left behind.

:func:`provider_for` builds a provider of each kind over such turns for the agent-loop tests.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tavernlab.models import Scripted

#: The environment variable :func:`provider_for` puts its dummy key in.
TEST_KEY_ENV = "TAVERNLAB_TEST_KEY"
#: The dummy key itself (tests check it never leaks).
TEST_KEY = "fake-key-5ecr3t-never-written"
#: The size of an oversize answer's padding (the providers refuse answers past 8 MiB; this
#: is well past it, so that a client that stops reading leaves the server unable to finish).
OVERSIZE_BYTES = 24 * 1024 * 1024

_PIECE_CHARS = 8


def _pieces(text: str, size: int = _PIECE_CHARS) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)] or []


def _turn_message(turn: Mapping[str, Any]) -> tuple[dict[str, Any], Any]:
    choice = (turn.get("choices") or [{}])[0]
    message = copy.deepcopy(choice.get("message") or {})
    return message, choice.get("finish_reason")


def _apply_misbehaviour(turn: dict[str, Any]) -> dict[str, Any]:
    """The turn with its ``no_id`` / ``unknown_alias`` / ``oversize`` change applied."""
    how = turn.get("misbehave")
    if how not in ("no_id", "unknown_alias", "oversize") or "choices" not in turn:
        return turn
    turn = copy.deepcopy(turn)
    message = turn["choices"][0].setdefault("message", {})
    calls = message.get("tool_calls") or []
    if how == "no_id":
        for call in calls:
            call.pop("id", None)
    elif how == "unknown_alias" and calls:
        calls[0]["function"]["name"] = "unknown_tool"
    elif how == "oversize":
        message["content"] = (message.get("content") or "") + "x" * OVERSIZE_BYTES
    return turn


# --- OpenAI Chat Completions ---------------------------------------------------------------

def openai_body(turn: Mapping[str, Any], index: int, model: str) -> dict[str, Any]:
    """The non-streamed Chat Completions body of a fixture turn."""
    message, finish = _turn_message(turn)
    message.setdefault("role", "assistant")
    message.setdefault("content", None)
    if finish is None:
        finish = "tool_calls" if message.get("tool_calls") else "stop"
    body: dict[str, Any] = {
        "id": turn.get("id", f"chatcmpl-{index + 1}"), "object": "chat.completion",
        "created": 1_700_000_000 + index, "model": turn.get("model", model),
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
    }
    if "usage" in turn:
        body["usage"] = copy.deepcopy(turn["usage"])
    return body


def openai_chunks(turn: Mapping[str, Any], index: int, model: str,
                  include_usage: bool) -> list[dict[str, Any]]:
    """The SSE chunks (``chat.completion.chunk`` objects) of a fixture turn."""
    full = openai_body(turn, index, model)
    message = full["choices"][0]["message"]
    base = {"id": full["id"], "object": "chat.completion.chunk", "created": full["created"],
            "model": full["model"]}

    def chunk(delta: dict[str, Any], finish: Any = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    chunks = [chunk({"role": "assistant", "content": ""})]
    for key in ("reasoning_content", "reasoning"):
        if isinstance(message.get(key), str):
            chunks += [chunk({key: p}) for p in _pieces(message[key])]
    if isinstance(message.get("content"), str):
        text = message["content"]
        size = 65536 if len(text) > 1 << 20 else _PIECE_CHARS
        chunks += [chunk({"content": p}) for p in _pieces(text, size)]
    for position, call in enumerate(message.get("tool_calls") or []):
        function = call.get("function") or {}
        first: dict[str, Any] = {"index": position, "type": "function",
                                 "function": {"name": function.get("name"), "arguments": ""}}
        if "id" in call:
            first["id"] = call["id"]
        chunks.append(chunk({"tool_calls": [first]}))
        arguments = function.get("arguments")
        if not isinstance(arguments, str):
            arguments = "" if arguments is None else json.dumps(arguments)
        for piece in _pieces(arguments):
            chunks.append(chunk({"tool_calls": [{"index": position,
                                                 "function": {"arguments": piece}}]}))
    chunks.append(chunk({}, full["choices"][0]["finish_reason"]))
    if include_usage and "usage" in full:
        chunks.append({**base, "choices": [], "usage": full["usage"]})
    return chunks


def openai_error(status: int, message: str) -> dict[str, Any]:
    """OpenAI's error JSON."""
    kind = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
            404: "not_found_error", 429: "rate_limit_error"}.get(status, "server_error")
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


# --- Anthropic Messages --------------------------------------------------------------------

_STOP_REASONS = {"tool_calls": "tool_use", "stop": "end_turn", "length": "max_tokens",
                 "max_tokens": "max_tokens", "refusal": "refusal",
                 "model_context_window_exceeded": "model_context_window_exceeded"}


def anthropic_blocks(message: Mapping[str, Any], index: int) -> list[dict[str, Any]]:
    """The content blocks of a fixture message: thinking (with its signature), text,
    tool_use. A tool call whose arguments are not a JSON object keeps them as raw text in
    ``input`` (the streamed form sends that text as ``input_json_delta`` pieces)."""
    blocks: list[dict[str, Any]] = []
    reasoning = message.get("reasoning_content")
    if isinstance(reasoning, str):
        blocks.append({"type": "thinking", "thinking": reasoning,
                       "signature": message.get("thinking_signature", f"sig-turn-{index + 1}")})
    if isinstance(message.get("content"), str) and message["content"]:
        blocks.append({"type": "text", "text": message["content"]})
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        arguments = function.get("arguments")
        value: Any
        if arguments is None or (isinstance(arguments, str) and arguments.strip() in ("", "null")):
            value = {}
        elif isinstance(arguments, str):
            try:
                value = json.loads(arguments)
            except ValueError:
                value = arguments
            if not isinstance(value, dict):
                value = arguments
        else:
            value = arguments
        block: dict[str, Any] = {"type": "tool_use", "name": function.get("name"), "input": value}
        if "id" in call:
            block["id"] = call["id"]
        blocks.append(block)
    return blocks


def _anthropic_usage(turn: Mapping[str, Any]) -> dict[str, Any]:
    usage = turn.get("usage") or {}
    out = {"input_tokens": usage.get("prompt_tokens", usage.get("input_tokens", 0)),
           "output_tokens": usage.get("completion_tokens", usage.get("output_tokens", 0))}
    for key in ("cache_read_input_tokens", "cache_creation_input_tokens"):
        if key in usage:
            out[key] = usage[key]
    return out


def anthropic_body(turn: Mapping[str, Any], index: int, model: str) -> dict[str, Any]:
    """The non-streamed Messages body of a fixture turn."""
    message, finish = _turn_message(turn)
    blocks = anthropic_blocks(message, index)
    if finish is None:
        finish = "tool_calls" if message.get("tool_calls") else "stop"
    return {"id": turn.get("id", f"msg_{index + 1:04d}"), "type": "message",
            "role": "assistant", "model": turn.get("model", model), "content": blocks,
            "stop_reason": _STOP_REASONS.get(finish, finish), "stop_sequence": None,
            "usage": _anthropic_usage(turn)}


def anthropic_events(turn: Mapping[str, Any], index: int, model: str
                     ) -> list[tuple[str, dict[str, Any]]]:
    """The SSE events ``(event, data)`` of a fixture turn."""
    body = anthropic_body(turn, index, model)
    usage = body["usage"]
    start = {**body, "content": [], "stop_reason": None,
             "usage": {**usage, "output_tokens": 0}}
    events: list[tuple[str, dict[str, Any]]] = [("message_start", {"type": "message_start",
                                                                   "message": start})]
    for position, block in enumerate(body["content"]):
        kind = block["type"]
        if kind == "thinking":
            opening = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [{"type": "thinking_delta", "thinking": p}
                      for p in _pieces(block["thinking"])]
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
        elif kind == "text":
            opening = {"type": "text", "text": ""}
            size = 65536 if len(block["text"]) > 1 << 20 else _PIECE_CHARS
            deltas = [{"type": "text_delta", "text": p} for p in _pieces(block["text"], size)]
        else:
            opening = {"type": "tool_use", "name": block["name"], "input": {}}
            if "id" in block:
                opening["id"] = block["id"]
            raw = block["input"]
            text = raw if isinstance(raw, str) else (
                json.dumps(raw, ensure_ascii=False, separators=(",", ":")) if raw else "")
            deltas = [{"type": "input_json_delta", "partial_json": p} for p in _pieces(text)]
        events.append(("content_block_start", {"type": "content_block_start",
                                               "index": position, "content_block": opening}))
        events += [("content_block_delta", {"type": "content_block_delta", "index": position,
                                            "delta": d}) for d in deltas]
        events.append(("content_block_stop", {"type": "content_block_stop", "index": position}))
    events.append(("message_delta", {"type": "message_delta",
                                     "delta": {"stop_reason": body["stop_reason"],
                                               "stop_sequence": None},
                                     "usage": {"output_tokens": usage["output_tokens"]}}))
    events.append(("message_stop", {"type": "message_stop"}))
    return events


def anthropic_error(status: int, message: str) -> dict[str, Any]:
    """Anthropic's error JSON."""
    kind = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
            404: "not_found_error", 429: "rate_limit_error", 529: "overloaded_error"
            }.get(status, "api_error")
    return {"type": "error", "error": {"type": kind, "message": message}}


def _contract_turn(spec: Mapping[str, Any]) -> dict[str, Any] | None:
    """The answer that makes a real client fail with the contract error ``spec["code"]``
    (a call without id, an unadvertised alias, a cut or refused answer), or ``None``."""
    code = spec.get("code")
    if code == "model.invalid_tool_call":
        calls = [{"type": "function", "function": {"name": "scripted_call", "arguments": "{}"}}]
        return {"choices": [{"message": {"role": "assistant", "content": None,
                                         "tool_calls": calls}}]}
    if code == "model.unknown_tool_call":
        calls = [{"id": "call_unknown", "type": "function",
                  "function": {"name": spec.get("alias", "unknown_tool"), "arguments": "{}"}}]
        return {"choices": [{"message": {"role": "assistant", "content": None,
                                         "tool_calls": calls}}]}
    reason = {"model.output_truncated": "length", "model.provider_refusal": "refusal"}.get(
        str(code))
    if reason is not None:
        return {"choices": [{"message": {"role": "assistant", "content": "..."},
                             "finish_reason": reason}]}
    return None


# --- the server ----------------------------------------------------------------------------

class _Dropped(Exception):
    """The handler dropped the connection on purpose."""


class ModelServer:
    """A threaded HTTP server on 127.0.0.1 (random port) serving ``turns`` in order in the
    ``wire`` format (``"openai"`` or ``"anthropic"``)."""

    def __init__(self, wire: str, turns: Sequence[Mapping[str, Any]], *,
                 model: str = "test-model") -> None:
        if wire not in ("openai", "anthropic"):
            raise ValueError(f"unknown wire format {wire!r}")
        self.wire = wire
        self.model = model
        self.turns = [copy.deepcopy(dict(t)) for t in turns]
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.sent_at: list[list[float]] = []
        #: How many answers were sent to their end (a dropped or cut one is not counted).
        self.finished = 0
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._connections: set[socket.socket] = set()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # lifecycle
    def __enter__(self) -> ModelServer:
        server = self

        class Handler(_Handler):
            owner = server

        httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        httpd.daemon_threads = False
        httpd.block_on_close = True
        self._httpd = httpd
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="model-server", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop serving and join every thread the server started."""
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            with self._lock:
                open_connections = list(self._connections)
            for connection in open_connections:  # kept-alive ones wait for a next request
                with contextlib.suppress(OSError):
                    connection.shutdown(socket.SHUT_RDWR)
            self._httpd.server_close()  # joins the handler threads (block_on_close)
            self._httpd = None
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    @property
    def port(self) -> int:
        """The port the server listens on."""
        assert self._httpd is not None, "server not started"
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """The ``base_url`` to give the client (``…/v1`` for OpenAI, the root for Anthropic)."""
        root = f"http://127.0.0.1:{self.port}"
        return f"{root}/v1" if self.wire == "openai" else root

    def _next_turn(self, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, Any]:
        with self._lock:
            index = len(self.requests)
            self.requests.append(body)
            self.headers.append(headers)
            self.sent_at.append([])
            turn = self.turns[index] if index < len(self.turns) else None
        return index, turn

    def pause(self, seconds: float) -> None:
        """Sleep, waking early when the server stops."""
        if seconds > 0:
            self._stopping.wait(seconds)


class _Handler(BaseHTTPRequestHandler):
    owner: ModelServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        return

    def setup(self) -> None:
        super().setup()
        with self.owner._lock:
            self.owner._connections.add(self.connection)

    def finish(self) -> None:
        with contextlib.suppress(OSError):
            super().finish()
        with self.owner._lock:
            self.owner._connections.discard(self.connection)

    def handle(self) -> None:
        with contextlib.suppress(ConnectionError, TimeoutError):
            super().handle()

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {"_unparsed": raw.decode(errors="replace")}
        server = self.owner
        index, turn = server._next_turn(body, {k.lower(): v for k, v in self.headers.items()})
        try:
            self._answer(index, turn, body)
            with server._lock:
                server.finished += 1
        except (_Dropped, BrokenPipeError, ConnectionResetError):
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)

    # helpers
    def _send_json(self, status: int, payload: Any, *, delay: float = 0.0,
                   truncate: bool = False) -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.owner.pause(delay)
        if truncate:
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
            raise _Dropped()
        self.wfile.write(data)
        self.wfile.flush()

    def _start_sse(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def _chunk(self, index: int, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()
        self.owner.sent_at[index].append(time.monotonic())

    def _end_chunks(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _drop(self) -> None:
        raise _Dropped()

    def _answer(self, index: int, turn: Any, body: dict[str, Any]) -> None:
        server = self.owner
        wire = server.wire
        error_json: Callable[[int, str], dict[str, Any]] = (
            openai_error if wire == "openai" else anthropic_error)
        if turn is None:
            self._send_json(500, error_json(500, f"model server has no turn {index + 1} "
                                                 f"({len(server.turns)} scripted)"))
            return
        delay = float(turn.get("delayMs", 0)) / 1000.0
        if "error" in turn:
            spec = turn["error"]
            server.pause(delay)
            if "network" in spec:
                self._drop()
            contract = _contract_turn(spec)
            if contract is not None:
                self._answer_turn(index, contract, body, 0.0)
                return
            status = int(spec.get("status", 400))
            message = str(spec.get("message", "scripted failure"))
            self._send_json(status, error_json(status, message))
            return
        self._answer_turn(index, turn, body, delay)

    def _answer_turn(self, index: int, turn: dict[str, Any], body: dict[str, Any],
                     delay: float) -> None:
        server = self.owner
        wire = server.wire
        error_json: Callable[[int, str], dict[str, Any]] = (
            openai_error if wire == "openai" else anthropic_error)
        how = turn.get("misbehave")
        turn = _apply_misbehaviour(turn)
        stream = bool(body.get("stream"))
        if how == "error_body":
            payload = error_json(503, "The server is overloaded (scripted error body).")
            if not stream:
                self._send_json(200, payload, delay=delay)
                return
            self._start_sse()
            server.pause(delay)
            if wire == "openai":
                self._chunk(index, b"data: " + json.dumps(payload).encode() + b"\n\n")
            else:
                self._chunk(index, b"event: error\ndata: " + json.dumps(payload).encode()
                            + b"\n\n")
            self._end_chunks()
            return
        if not stream:
            if how == "invalid_json":
                self._send_json(200, b'{"id": "broken", "choices": [{"message": ', delay=delay)
                return
            payload = (openai_body(turn, index, server.model) if wire == "openai"
                       else anthropic_body(turn, index, server.model))
            self._send_json(200, payload, delay=delay, truncate=how == "truncate")
            return
        events: list[bytes]
        if wire == "openai":
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            events = [b"data: " + json.dumps(c).encode() + b"\n\n"
                      for c in openai_chunks(turn, index, server.model, include_usage)]
            events.append(b"data: [DONE]\n\n")
        else:
            events = [f"event: {name}\n".encode() + b"data: " + json.dumps(data).encode()
                      + b"\n\n" for name, data in anthropic_events(turn, index, server.model)]
        if how == "invalid_json":
            events.insert(min(2, len(events) - 1), b"data: {\"choices\": [{\"delta\": \n\n")
        if how == "truncate":
            keep = max(1, len(events) // 2)
            partial = events[keep][: len(events[keep]) // 2]
            events = [*events[:keep], partial]
        self._start_sse()
        for event in events:
            server.pause(delay)
            if server._stopping.is_set():
                self._drop()
            self._chunk(index, event)
        self._end_chunks()


# --- providers for the loop tests ----------------------------------------------------------

@contextlib.contextmanager
def _test_key() -> Iterator[None]:
    before = os.environ.get(TEST_KEY_ENV)
    os.environ[TEST_KEY_ENV] = TEST_KEY
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(TEST_KEY_ENV, None)
        else:
            os.environ[TEST_KEY_ENV] = before


def provider_for(kind: str, turns: Sequence[Mapping[str, Any]], stack: contextlib.ExitStack,
                 *, model: str = "test-model", params: Mapping[str, Any] | None = None
                 ) -> tuple[Any, Callable[[], list[dict[str, Any]]]]:
    """A provider of ``kind`` (``scripted``, ``openai``, ``anthropic``) serving ``turns``, and
    a function returning the request bodies it was sent.

    For ``scripted`` the bodies are the canonical requests dumped by alias (camelCase); for the
    two SDK providers they are the JSON bodies the local server received. The server (and the
    dummy key in ``TAVERNLAB_TEST_KEY``) belong to ``stack`` and end with it.
    """
    if kind == "scripted":
        scripted = Scripted(turns, model=model)
        return scripted, lambda: [r.request.model_dump(by_alias=True, mode="json")
                                  for r in scripted.requests]
    import tavernlab.models as models

    if kind not in ("openai", "anthropic"):
        raise ValueError(f"unknown provider kind {kind!r}")
    server = stack.enter_context(ModelServer(kind, turns, model=model))
    stack.enter_context(_test_key())
    provider: Any
    if kind == "openai":
        provider = models.OpenAICompatible(model, base_url=server.base_url,
                                           api_key_env=TEST_KEY_ENV, params=params)
    else:
        provider = models.ClaudeMessages(model, base_url=server.base_url,
                                         api_key_env=TEST_KEY_ENV, params=params)
    stack.callback(provider.close)
    return provider, lambda: copy.deepcopy(server.requests)
