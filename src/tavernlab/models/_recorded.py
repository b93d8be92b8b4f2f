"""The recorded model: the ``model-responses/`` of an earlier run, served again for replay.

Each record is what the loop stored, ``{"round": N, "invocationId": "<id>", "response":
<ModelResponse>}``, keyed by ``(invocationId, round)``. A request is answered with exactly the
response recorded for its ``providerState.invocationId`` and the next round of that
invocation (the first request of ``inv_root`` gets ``inv_root`` round 1, its second round 2
…). A request the recording has no answer for raises ``replay.model_response_missing``. Every
request is kept (:attr:`Recorded.requests`) so that replay can compare it with the recorded
one.
"""

from __future__ import annotations

import copy
import json
import re
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tavernlab.layout as layout
from tavernlab.cancel import CancelToken
from tavernlab.models._canonical import ModelRequest, ModelResponse
from tavernlab.models._errors import ModelCallError, ModelCancelled
from tavernlab.models._provider import (
    DEFAULT_TIMEOUT_S,
    DeltaCallback,
    ReasoningDelta,
    TextDelta,
    ToolCallDelta,
    next_provider_state,
)

ROOT_INVOCATION_ID = "inv_root"
_ROUND_FILE = re.compile(r"^round-(\d{3,})\.json$")
_PIECE = re.compile(r"\S+\s*|\s+")


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """One request the recorded model received: the invocation and round it was answered
    for, the request itself and whether it asked for a stream."""

    invocation_id: str
    round: int
    request: ModelRequest
    stream: bool


class Recorded:
    """A model that answers with the responses of a recording (see the module's text).

    ``responses`` are records ``{"round", "invocationId", "response"}`` (``response`` a dict
    or a :class:`ModelResponse`); a bare response (no ``response`` key) counts as the next
    round of ``inv_root``.
    """

    provider_format = "recorded"
    source = "recorded"

    def __init__(self, responses: Iterable[Mapping[str, Any] | ModelResponse], *,
                 model: str = "recorded") -> None:
        self._records: dict[tuple[str, int], ModelResponse] = {}
        root_rounds = 0
        for index, entry in enumerate(responses):
            if isinstance(entry, ModelResponse) or "response" not in entry:
                root_rounds += 1
                key = (ROOT_INVOCATION_ID, root_rounds)
                raw: Any = entry
            else:
                invocation = entry.get("invocationId", ROOT_INVOCATION_ID)
                number = entry.get("round")
                if not isinstance(invocation, str) or not invocation \
                        or not isinstance(number, int) or number < 1:
                    raise ValueError(f"recorded response {index} needs a positive `round` and "
                                     f"an `invocationId`")
                key = (invocation, number)
                raw = entry["response"]
            if key in self._records:
                raise ValueError(f"two recorded responses for invocation `{key[0]}` "
                                 f"round {key[1]}")
            self._records[key] = (raw.model_copy(deep=True) if isinstance(raw, ModelResponse)
                                  else ModelResponse.model_validate(copy.deepcopy(raw)))
        self._model = model
        self._lock = threading.Lock()
        self._served: dict[str, int] = {}
        self.requests: list[RecordedRequest] = []
        self.closed_sessions: list[str] = []

    @classmethod
    def from_run_dir(cls, path: str | Path, *, model: str = "recorded") -> Recorded:
        """The recording of the run stored in ``path``: ``model-responses/round-NNN.json``
        for the root invocation, ``model-responses/<invocationId>/round-NNN.json`` for the
        others (none when the run has no ``model-responses/``)."""
        root = Path(path) / layout.MODEL_RESPONSES
        records: list[dict[str, Any]] = []
        if root.is_dir():
            for file in sorted(root.rglob("round-*.json")):
                match = _ROUND_FILE.match(file.name)
                relative = file.relative_to(root)
                if match is None or len(relative.parts) > 2:
                    continue
                expected = relative.parts[0] if len(relative.parts) == 2 else ROOT_INVOCATION_ID
                try:
                    record = json.loads(file.read_text(encoding="utf-8"))
                except (OSError, ValueError) as error:
                    raise ValueError(f"{file}: not a readable model response record: "
                                     f"{error}") from None
                if not isinstance(record, dict) or "response" not in record:
                    raise ValueError(f"{file}: a model response record needs `round`, "
                                     f"`invocationId` and `response`")
                if record.get("invocationId") != expected \
                        or record.get("round") != int(match.group(1)):
                    raise ValueError(
                        f"{file}: the record says invocation `{record.get('invocationId')}` "
                        f"round {record.get('round')}, its path says `{expected}` round "
                        f"{int(match.group(1))}")
                records.append(record)
        return cls(records, model=model)

    @property
    def model_id(self) -> str:
        """The recorded model's name (``recorded`` unless given)."""
        return self._model

    @property
    def keys(self) -> list[tuple[str, int]]:
        """The ``(invocationId, round)`` pairs the recording holds, sorted."""
        return sorted(self._records)

    def served(self, invocation_id: str) -> int:
        """How many responses were served for ``invocation_id``."""
        with self._lock:
            return self._served.get(invocation_id, 0)

    def describe(self) -> dict[str, Any]:
        """``{provider: "recorded", model, responses: <count>}``."""
        return {"provider": "recorded", "model": self._model, "responses": len(self._records)}

    def close_session(self, session_id: str) -> None:
        """Note that the loop closed ``session_id``."""
        self.closed_sessions.append(session_id)

    def close(self) -> None:
        """Nothing to release."""

    def generate(self, request: ModelRequest, *, stream: bool,
                 on_delta: DeltaCallback | None, cancel: CancelToken,
                 timeout_s: float = DEFAULT_TIMEOUT_S) -> ModelResponse:
        """The recorded response for the request's invocation and its next round."""
        invocation = str(request.provider_state.get("invocationId") or ROOT_INVOCATION_ID)
        with self._lock:
            number = self._served.get(invocation, 0) + 1
            self.requests.append(RecordedRequest(invocation, number,
                                                 request.model_copy(deep=True), stream))
            recorded = self._records.get((invocation, number))
            if recorded is None:
                raise ModelCallError(
                    "replay.model_response_missing",
                    f"the recording has no model response for invocation `{invocation}` "
                    f"round {number} ({len(self._records)} recorded)", kind="internal")
            self._served[invocation] = number
        if cancel.cancelled:
            raise ModelCancelled()
        response = recorded.model_copy(deep=True)
        if stream and on_delta is not None:
            _replay_deltas(response, request, on_delta, cancel)
        metadata = response.provider_metadata
        extra: dict[str, Any] = {}
        native = response.message.native
        if native:
            provider = native[0].provider
            extra["nativeContinuation"] = {
                "provider": provider,
                "partCount": sum(1 for part in native if part.provider == provider)}
        response.provider_state = next_provider_state(
            request, response, source=str(metadata.get("chatCompletionSource") or self.source),
            provider_format=str(metadata.get("providerFormat") or self.provider_format),
            **extra)
        return response

    def __repr__(self) -> str:
        return f"<Recorded {len(self._records)} responses>"


def _replay_deltas(response: ModelResponse, request: ModelRequest, on_delta: DeltaCallback,
                   cancel: CancelToken) -> None:
    """The recorded answer's reasoning, text and call arguments as stream deltas."""
    pieces: list[Any] = [ReasoningDelta(p) for p in _PIECE.findall(response.message.reasoning)]
    pieces += [TextDelta(p) for p in _PIECE.findall(response.text)]
    for index, call in enumerate(response.tool_calls):
        if request.tool_for_alias(call.model_alias) is not None:
            arguments = (json.dumps(call.arguments, ensure_ascii=False, separators=(",", ":"))
                         if isinstance(call.arguments, dict) else call.arguments)
            pieces.append(ToolCallDelta(index, call.tool_id, arguments))
    for piece in pieces:
        if cancel.cancelled:
            raise ModelCancelled()
        on_delta(piece)
