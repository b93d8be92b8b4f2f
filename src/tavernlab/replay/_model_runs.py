"""Replaying a run the agent loop drove: the loop runs again, the recording answers for the
model.

A bundle whose manifest has ``agent`` (:class:`~tavernlab.replay._manifest.AgentRecording`)
is replayed by starting the loop again (:func:`tavernlab.agent.start_agent`) in a lab prepared
as the recorded one stood, with the recorded clock and ids, the same task, chat,
presentation, stream flag, Profile and agents, the host's recorded answer to each commit
request, and a :class:`ReplayModel` in place of the model: it serves the run's
``model-responses/`` by invocation and round (through :class:`tavernlab.models.Recorded`),
fails again the attempts that failed in the recording, and presents itself as the recorded
model did (source, format, model id, binding), so every record comes out the same and the
comparison of :mod:`tavernlab.replay._compare` applies unchanged. A run cancelled during a
model call is cancelled again at that attempt (the loop's own cancel, then the call ends as a
cancelled one); a cancellation during a tool call or a retry pause is not replayed, and the
comparison reports what the replay did beyond it.

Against a changed skill, each model request the loop makes is also compared with the
recorded one. The recorded requests are rebuilt from the recorded transcript by the loop
itself: the bundle is first replayed with its own skills (byte for byte, so its requests are
the ones the recorded run sent) and the requests that replay makes are kept. tavernlab's
choice, over storing a digest of each request beside ``model-responses/``: the request is
assembled in one place only (the loop), nothing is added to the records upstream defines,
and the comparison can show *what* differed (a diff of the first differing message), which
a digest cannot. The first request that differs is the **divergence** (its invocation, round,
the tool call whose result differed, a diff); its recorded response and every one after it
are not served: the model call fails with ``replay.model_request_diverged``, so the replayed
run ends ``failed`` (``partial_success`` when it had committed before) with that code in its
failure payload, through the loop's ordinary finalisation.

``live=provider`` then continues from the divergence as a new run in the same (kept) lab:
the loop starts again on the same task, the recorded responses answer the rounds before the
divergence (the requests of those rounds are rebuilt by the loop from the recorded
transcript, with the changed skill's tool results), and ``provider`` answers from the
diverged round on.
"""

from __future__ import annotations

import difflib
import json
import re
import shutil
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tavernlab.layout as layout
from tavernlab.agent import AgentHandle, start_agent
from tavernlab.cancel import CancelToken
from tavernlab.host import Lab, Run
from tavernlab.models import (
    DEFAULT_TIMEOUT_S,
    DeltaCallback,
    ErrorKind,
    ModelCallError,
    ModelCancelled,
    ModelProvider,
    ModelRequest,
    ModelResponse,
    Recorded,
)
from tavernlab.replay._actions import action_at
from tavernlab.replay._bundle import Bundle, read_bundle
from tavernlab.replay._compare import _merged, compare, text_diff
from tavernlab.replay._errors import BundleInvalid, ReplaySetupError
from tavernlab.replay._manifest import AgentRecording
from tavernlab.replay._replaying import SkillSources, lab_root, open_replay_lab
from tavernlab.replay._report import Divergence, LiveContinuation, RecordedModelCall, ReplayReport

#: The code of a model call the replay refused because its request differed.
DIVERGED = "replay.model_request_diverged"
ROOT = "inv_root"
_CODE = re.compile(r"^([a-z0-9._-]*\.[a-z0-9._-]*):\s?(.*)$", re.DOTALL)
_KINDS: dict[str, ErrorKind] = {"rate_limited": "rate_limited", "transient": "transient",
                                "upstream": "upstream", "invalid_data": "invalid_data",
                                "unauthorized": "unauthorized", "validation": "validation",
                                "internal": "internal"}

Key = tuple[str, int]


# -- the recording ------------------------------------------------------------------------------


def recording_of(bundle: Bundle) -> AgentRecording:
    """The bundle's agent recording (``replay.setup_failed`` for a run played by hand)."""
    agent = bundle.manifest.agent
    if agent is None:
        raise ReplaySetupError("the bundle's run was not driven by the agent loop")
    return agent


def recorded_responses(bundle: Bundle) -> list[dict[str, Any]]:
    """Every recorded ``model-responses/`` record of the bundle, checked: each readable, of
    the invocation and round its manifest entry and the run's ``model_response_stored``
    event name, and every stored response the events name present
    (``replay.bundle_invalid`` naming the file otherwise)."""
    agent = recording_of(bundle)
    listed = {(r.invocation_id, r.round): r.path for r in agent.responses}
    for raw in _lines(bundle.run_file(layout.EVENTS) if bundle.has_run_file(layout.EVENTS)
                      else b""):
        if raw.get("type") != "model_response_stored":
            continue
        payload = raw.get("payload") or {}
        key = (str(payload.get("invocationId")), int(payload.get("round") or 0))
        if listed.get(key) != payload.get("path") or not bundle.has_run_file(
                str(payload.get("path"))):
            raise BundleInvalid(f"the bundle has no recorded model response "
                                f"{payload.get('path')} (invocation `{key[0]}` round "
                                f"{key[1]}, named by its model_response_stored event)")
    records = []
    for response in agent.responses:
        try:
            record = json.loads(bundle.run_file(response.path))
            ModelResponse.model_validate(record["response"])
        except (ValueError, TypeError, KeyError) as exc:
            raise BundleInvalid(f"run file {response.path} is not a model response record: "
                                f"{str(exc).splitlines()[0]}") from None
        if not isinstance(record, dict) or record.get("invocationId") != response.invocation_id \
                or record.get("round") != response.round:
            raise BundleInvalid(f"run file {response.path} does not hold the model response "
                                f"of invocation `{response.invocation_id}` round "
                                f"{response.round}")
        records.append(record)
    try:
        Recorded(records)
    except ValueError as exc:
        raise BundleInvalid(f"the bundle's model responses: {exc}") from None
    return records


def _lines(data: bytes) -> Iterator[dict[str, Any]]:
    for line in data.splitlines():
        if line.strip():
            yield json.loads(line)


def canonical_request(request: ModelRequest, substitutions: Mapping[str, str]) -> dict[str, Any]:
    """A request as compared: its JSON form (camelCase), with each replaced skill's hash
    read as the recorded one."""
    text = json.dumps(request.model_dump(mode="json", by_alias=True), ensure_ascii=False,
                      sort_keys=True)
    for new, old in substitutions.items():
        text = text.replace(new, old)
    loaded: dict[str, Any] = json.loads(text)
    return loaded


# -- the model ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class RequestDivergence:
    """Where a model request first differed from the recorded one."""

    invocation: str
    round: int
    subject: str
    call: str | None
    diff: str


class ReplayModel:
    """The recorded model of a bundle's run, presented as the recorded model was.

    Serves each request the recorded response of its invocation's next round, fails the
    attempts that failed in the recording with their recorded error, and keeps every
    request (:attr:`requests`, canonical JSON by ``(invocation, round)``). With
    ``expected`` (the recorded requests), a request that differs is refused with
    ``replay.model_request_diverged`` and :attr:`divergence` says where; nothing is served
    after it.
    """

    def __init__(self, recording: AgentRecording, responses: list[dict[str, Any]], *,
                 expected: Mapping[Key, dict[str, Any]] | None = None,
                 substitutions: Mapping[str, str] | None = None) -> None:
        self._recorded = Recorded(responses, model=str(recording.model.get("modelId")))
        self._identity = recording.model
        self._failures = {(f.invocation_id, f.round, f.attempt): f
                          for f in recording.failed_attempts}
        self._attempts: dict[Key, int] = {}
        self._expected = expected
        self._substitutions = dict(substitutions or {})
        self._lock = threading.Lock()
        self._cancelled = recording.cancelled_attempt
        self._cancel: Callable[..., object] | None = None
        self._attached = threading.Event()
        self.requests: dict[Key, dict[str, Any]] = {}
        self.divergence: RequestDivergence | None = None

    def attach(self, cancel: Callable[..., object]) -> None:
        """The replayed loop's cancel (called at the attempt the recorded run was cancelled
        during)."""
        self._cancel = cancel
        self._attached.set()

    @property
    def provider_format(self) -> str:
        """The recorded binding's format."""
        return str(self._identity.get("customApiFormat") or "recorded")

    @property
    def source(self) -> str:
        """The recorded binding's source."""
        return str(self._identity.get("chatCompletionSource") or "recorded")

    @property
    def model_id(self) -> str:
        """The recorded model id."""
        return str(self._identity.get("modelId") or "recorded")

    def describe(self) -> dict[str, Any]:
        """The binding the recorded loop announced."""
        return dict(self._identity.get("binding") or {})

    def close_session(self, session_id: str) -> None:
        """Nothing to close."""

    def close(self) -> None:
        """Nothing to release."""

    def next_key(self, request: ModelRequest) -> Key:
        """The ``(invocation, round)`` the request is for."""
        invocation = str(request.provider_state.get("invocationId") or ROOT)
        return invocation, self._recorded.served(invocation) + 1

    def generate(self, request: ModelRequest, *, stream: bool,
                 on_delta: DeltaCallback | None, cancel: CancelToken,
                 timeout_s: float = DEFAULT_TIMEOUT_S) -> ModelResponse:
        """The recorded answer (or recorded failure) for the request's round."""
        key = self.next_key(request)
        with self._lock:
            if self.divergence is not None:
                raise ModelCallError(DIVERGED, "the replay stopped at an earlier divergence",
                                     kind="internal")
            attempt = self._attempts.get(key, 0) + 1
            self._attempts[key] = attempt
            seen = canonical_request(request, self._substitutions)
            self.requests.setdefault(key, seen)
            if self._expected is not None:
                found = _first_difference(key, self._expected.get(key), seen)
                if found is not None:
                    self.divergence = found
                    raise ModelCallError(
                        DIVERGED, f"the model request of invocation `{key[0]}` round "
                        f"{key[1]} differs from the recorded one ({found.subject}); the "
                        "recorded responses from there on are not served", kind="internal")
        stopped = self._cancelled
        if stopped is not None and (stopped.invocation_id, stopped.round,
                                    stopped.attempt) == (*key, attempt):
            self._attached.wait()
            assert self._cancel is not None
            if stopped.message is None:
                self._cancel()
            else:
                self._cancel(stopped.message)
            raise ModelCancelled()
        failed = self._failures.get((*key, attempt))
        if failed is not None:
            match = _CODE.match(failed.message)
            code, detail = (match.group(1), match.group(2)) if match else (
                "agent.internal_error", failed.message)
            raise ModelCallError(code, detail, kind=_KINDS.get(failed.kind, "internal"))
        return self._recorded.generate(request, stream=stream, on_delta=on_delta,
                                       cancel=cancel, timeout_s=timeout_s)


def _render(value: Any, indent: str = "") -> list[str]:
    """A JSON value as lines (texts keep their own lines), for a readable diff."""
    if isinstance(value, dict):
        lines = []
        for key in value:
            item = value[key]
            if isinstance(item, dict | list) and item:
                lines.append(f"{indent}{key}:")
                lines += _render(item, indent + "  ")
            elif isinstance(item, str) and "\n" in item:
                lines.append(f"{indent}{key}: |")
                lines += [f"{indent}  {line}" for line in item.splitlines()]
            else:
                lines.append(f"{indent}{key}: {json.dumps(item, ensure_ascii=False)}")
        return lines
    if isinstance(value, list):
        lines = []
        for item in value:
            inner = _render(item, indent + "  ")
            lines.append(f"{indent}- {inner[0].strip() if inner else ''}")
            lines += inner[1:]
        return lines
    return [f"{indent}{json.dumps(value, ensure_ascii=False)}"]


def _message_label(index: int, message: dict[str, Any]) -> tuple[str, str | None]:
    role = str(message.get("role"))
    for part in message.get("parts") or []:
        result = part.get("result") if isinstance(part, dict) else None
        if isinstance(result, dict) and result.get("callId"):
            call = str(result["callId"])
            return f"message {index} (tool result of {call})", call
    return f"message {index} ({role})", None


def _first_difference(key: Key, recorded: dict[str, Any] | None, seen: dict[str, Any]
                      ) -> RequestDivergence | None:
    """Where ``seen`` first differs from ``recorded`` (messages in order, then the tools,
    then the other fields)."""
    if recorded is None:
        return RequestDivergence(key[0], key[1], "a model request the recording never made",
                                 None, text_diff("", "\n".join(_render(seen)), "request"))
    if recorded == seen:
        return None
    old, new = recorded.get("messages") or [], seen.get("messages") or []
    for index in range(max(len(old), len(new))):
        a = old[index] if index < len(old) else None
        b = new[index] if index < len(new) else None
        if a == b:
            continue
        subject, call = _message_label(index, b if b is not None else a)  # type: ignore[arg-type]
        name = f"request/messages/{index}"
        diff = "\n".join(difflib.unified_diff(
            _render(a) if a is not None else [], _render(b) if b is not None else [],
            f"recorded/{name}", f"replayed/{name}", lineterm="")) + "\n"
        return RequestDivergence(key[0], key[1], subject, call, diff)
    for field in sorted(set(recorded) | set(seen)):
        if recorded.get(field) != seen.get(field):
            name = f"request/{field}"
            diff = "\n".join(difflib.unified_diff(
                _render(recorded.get(field)), _render(seen.get(field)), f"recorded/{name}",
                f"replayed/{name}", lineterm="")) + "\n"
            return RequestDivergence(key[0], key[1], field, None, diff)
    return None


class Continuation:
    """A new run's model: the recorded responses before ``start`` (an ``(invocation,
    round)``), then ``live`` for that request and every later one; it presents itself as
    ``live``."""

    def __init__(self, recorded: ReplayModel, live: ModelProvider, start: Key) -> None:
        self._recorded = recorded
        self._live = live
        self._start = start
        self._switched = False

    @property
    def provider_format(self) -> str:
        """The live model's format."""
        return self._live.provider_format

    @property
    def source(self) -> str:
        """The live model's source."""
        return str(getattr(self._live, "source", self._live.provider_format))

    @property
    def model_id(self) -> str:
        """The live model's id."""
        return self._live.model_id

    def describe(self) -> dict[str, Any]:
        """The live model's binding."""
        return self._live.describe()

    def attach(self, cancel: Callable[..., object]) -> None:
        """The loop's cancel, for the recorded part."""
        self._recorded.attach(cancel)

    def close_session(self, session_id: str) -> None:
        """Closed on the live model."""
        self._live.close_session(session_id)

    def close(self) -> None:
        """The live model is its owner's to close."""

    def generate(self, request: ModelRequest, *, stream: bool,
                 on_delta: DeltaCallback | None, cancel: CancelToken,
                 timeout_s: float = DEFAULT_TIMEOUT_S) -> ModelResponse:
        """Recorded before the divergence, live from it on."""
        if not self._switched and self._recorded.next_key(request) == self._start:
            self._switched = True
        if self._switched:
            return self._live.generate(request, stream=stream, on_delta=on_delta,
                                       cancel=cancel, timeout_s=timeout_s)
        return self._recorded.generate(request, stream=stream, on_delta=on_delta,
                                       cancel=cancel, timeout_s=timeout_s)


# -- the replay ---------------------------------------------------------------------------------


def _answers(recording: AgentRecording) -> Any:
    """The host's recorded answer to each commit request, in order."""
    answers = iter(list(recording.commit_answers))

    def review(request: dict[str, Any]) -> str | None:
        return next(answers, None)
    return review


def _drive(bundle: Bundle, lab: Lab, model: ReplayModel | Continuation) -> AgentHandle:
    recording = recording_of(bundle)
    handle = start_agent(
        lab, recording.task, model=model, chat_id=recording.chat_id,
        profile=bundle.run_json(layout.RESOLVED_PROFILE),
        presentation=recording.presentation, stream=recording.stream,
        review=_answers(recording), agents=recording.agents or None)
    model.attach(handle.cancel)
    return handle


def recorded_requests(bundle: Bundle) -> tuple[dict[Key, dict[str, Any]], Divergence | None]:
    """The model requests of the recorded run, rebuilt by replaying it with its own skills
    in a temporary lab (see the module notes), and a ``setup`` divergence when that replay
    was not byte-identical (the requests are then the ones it made, which the recorded run
    may not have sent)."""
    root, _ = lab_root(None)
    try:
        _, _, _, lab = open_replay_lab(bundle, root, None)
        try:
            model = ReplayModel(recording_of(bundle), recorded_responses(bundle))
            run = _drive(bundle, lab, model).wait().run
            found = compare(bundle, run)
        finally:
            lab.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    note = None
    if found:
        note = Divergence(-1, "start of the run", "setup", "recorded model requests",
                          None, "the recording does not replay byte for byte with its own "
                          f"skills (first: {found[0].summary()}), so the requests compared "
                          "are the ones that replay made", found[0].diff)
    return model.requests, note


def _turns(bundle: Bundle, run: Run) -> list[RecordedModelCall]:
    turns = []
    for response in recording_of(bundle).responses:
        record = bundle.run_json(response.path)
        stored = ModelResponse.model_validate(record["response"])
        usage = stored.usage
        replayed = run.dir / response.path
        turns.append(RecordedModelCall(response.invocation_id, response.round,
                                       stored.response_id, stored.model, usage.input_tokens,
                                       usage.output_tokens, replayed.is_file()))
    return turns


def _request_position(bundle: Bundle, key: Key) -> int:
    """The position of ``model_request_created`` for ``key`` in the recorded merged records
    (the end of the records when the recording made no such request)."""
    records = bundle.run_file(layout.EVENTS) if bundle.has_run_file(layout.EVENTS) else b""
    journal = bundle.run_file(layout.JOURNAL) if bundle.has_run_file(layout.JOURNAL) else b""
    merged = _merged(records, journal)
    for position, raw in enumerate(merged):
        payload = raw.get("payload") or {}
        if raw.get("type") == "model_request_created" and (
                payload.get("invocationId"), payload.get("round")) == key:
            return position
    return len(merged)


def _divergence(bundle: Bundle, found: RequestDivergence) -> Divergence:
    starts = [action.at for action in bundle.manifest.actions]
    index = action_at(starts, _request_position(bundle, (found.invocation, found.round)))
    call = f", call {found.call}" if found.call else ""
    return Divergence(index, f"model request of round {found.round} ({found.invocation}"
                      f"{call})", "model_request", found.subject, diff=found.diff,
                      invocation=found.invocation, round=found.round, call=found.call)


def replay_model_run(bundle: Bundle | str | Path, lab: str | Path | None = None,
                     skills: SkillSources | None = None,
                     live: ModelProvider | None = None) -> ReplayReport:
    """Replay a model-driven run's bundle (see the module notes) and compare everything;
    ``live`` continues from a divergence as a new run (the lab is then kept, and named in
    the report, even when it was temporary)."""
    started = time.monotonic()
    loaded = bundle if isinstance(bundle, Bundle) else read_bundle(bundle)
    recording = recording_of(loaded)
    responses = recorded_responses(loaded)  # refused before anything is written
    root, temporary = lab_root(lab)
    keep = not temporary or live is not None
    done = False
    try:
        versions, _, _, replay_lab = open_replay_lab(loaded, root, skills)
        try:
            changed = {v.replayed_hash: v.recorded_hash for v in versions if v.changed}
            expected, note = recorded_requests(loaded) if changed else (None, None)
            model = ReplayModel(recording, responses, expected=expected,
                                substitutions=changed)
            handle = _drive(loaded, replay_lab, model)
            handle.wait()
            run = handle.run
            errors: list[Divergence] = [note] if note is not None else []
            if run.id != loaded.manifest.run_id:
                errors.append(Divergence(-1, "start of the run", "setup", "run id",
                                         loaded.manifest.run_id, run.id))
            found = errors + compare(loaded, run, changed)
            diverged = None if model.divergence is None else _divergence(loaded,
                                                                         model.divergence)
            # the model request first among the divergences of its action (a stable sort)
            ordered = sorted(([diverged] if diverged else []) + found, key=lambda d: d.index)
            continuation = None
            if live is not None and model.divergence is not None:
                continuation = _continue(loaded, replay_lab, recording, responses,
                                         model.divergence, live)
            turns = _turns(loaded, run)
        finally:
            replay_lab.close()
        done = True
    finally:
        if temporary and not (done and keep):
            shutil.rmtree(root, ignore_errors=True)
    path = loaded.path
    return ReplayReport(
        bundle=str(path) if path else "", run_id=loaded.manifest.run_id,
        actions=len(loaded.manifest.actions), divergences=ordered, skills=list(versions),
        lab=str(root) if keep else None, elapsed_s=time.monotonic() - started,
        model_turns=turns, model_divergence=diverged, live=continuation)


def _continue(bundle: Bundle, lab: Lab, recording: AgentRecording,
              responses: list[dict[str, Any]], found: RequestDivergence,
              live: ModelProvider) -> LiveContinuation:
    """The new run: the recorded responses before the divergence, ``live`` from it on."""
    model = Continuation(ReplayModel(recording, responses), live,
                         (found.invocation, found.round))
    outcome = _drive(bundle, lab, model).wait()
    failure = outcome.failure["code"] if outcome.failure else None
    return LiveContinuation(outcome.run.id, outcome.status, failure, outcome.rounds,
                            found.round, found.invocation)
