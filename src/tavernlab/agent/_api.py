"""Starting the loop: :func:`start_agent` and :func:`run_agent`, their handle and outcome.

A loop runs on a thread of its own (named ``tavernlab-agent-<runId>``) that ends with its
run; the caller's thread only waits. Everything the loop does reaches the run's event feed
(``run.subscribe``, ``run.events``, ``Lab.follow``); the streamed pieces of each model call
reach ``on_delta`` as :class:`~tavernlab.agent.LiveDelta` values and are never written to the
run's records.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import tavernlab.layout as layout
from tavernlab.agent._loop import AgentLoop, DeltaObserver
from tavernlab.agent._mcp import McpTools
from tavernlab.agent._tools import build_snapshot
from tavernlab.errors import AgentError, UsageError
from tavernlab.host import Lab, Run, resolve_profile
from tavernlab.models import ModelProvider, Usage
from tavernlab.workspace.records import write_json
from tavernlab.workspace.roots import ModelBinding, Profile
from tavernlab.workspace.tools import ToolSpec

#: The chat a run starts in when no ``chat_id`` is given.
DEFAULT_CHAT_ID = "agent"
#: Where a run keeps how its loop was started (tavernlab's record, read by replay).
LOOP_START_FILE = layout.LOOP_START
Presentation = Literal["foreground", "background"]


@dataclass(slots=True)
class AgentOutcome:
    """How a model-driven run ended: the run, its terminal ``status``, the failure payload
    (``None`` unless it failed or partly succeeded), the token ``usage`` summed over every
    model call, the ``rounds`` the root invocation used, and the confirmed ``commits``
    (``{path, mode, messageId, round, isExplicit}`` each)."""

    run: Run
    status: str
    failure: dict[str, Any] | None
    usage: Usage
    rounds: int
    commits: list[dict[str, Any]] = field(default_factory=list)

    def __repr__(self) -> str:
        code = f" {self.failure['code']}" if self.failure else ""
        return f"<AgentOutcome {self.run.id} {self.status}{code} rounds={self.rounds}>"


class AgentHandle:
    """A running loop: its ``run``, :meth:`cancel` and :meth:`wait`."""

    def __init__(self, run: Run, loop: AgentLoop) -> None:
        self.run = run
        self._loop = loop
        self._done = threading.Event()
        self._outcome: AgentOutcome | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._main, name=f"tavernlab-agent-{run.id}",
                                        daemon=True)

    def _start(self) -> None:
        self._thread.start()

    def _main(self) -> None:
        loop = self._loop
        try:
            status = loop.execute()
            self._outcome = AgentOutcome(self.run, status, loop.failure, loop.totals.usage,
                                         loop.totals.rounds, [dict(e) for e in
                                                              loop.ledger.entries])
        except BaseException as exc:  # a fault of the loop itself: the caller gets it
            self._error = exc
        finally:
            self._done.set()
            done = loop.core.loop_done
            if done is not None:
                done.set()

    @property
    def done(self) -> bool:
        """Whether the loop has ended."""
        return self._done.is_set()

    def cancel(self, reason: str | None = None) -> int:
        """Cancel the run (safe from any thread): it ends ``cancelled``, ``run_cancelled``
        saying ``reason`` (upstream's ``Generation cancelled by user`` when none is given).
        Returns how many pieces of work were signalled (0 once it has ended)."""
        return self._loop.cancel(reason)

    def wait(self, timeout: float | None = None) -> AgentOutcome:
        """Wait for the run's end and return its outcome (``TimeoutError`` after
        ``timeout`` seconds; a KeyboardInterrupt while waiting cancels the run and waits for
        it to stop before it is re-raised)."""
        try:
            finished = self._done.wait(timeout)
        except KeyboardInterrupt:
            self.cancel()
            self._done.wait()
            self._thread.join()
            raise
        if not finished:
            raise TimeoutError(f"run {self.run.id} is still {self.run.status}")
        self._thread.join()
        if self._error is not None:
            raise self._error
        assert self._outcome is not None
        return self._outcome

    def __repr__(self) -> str:
        return f"<AgentHandle {self.run.id} {self.run.status}>"


def _resolve(lab: Lab, profile: Profile | Mapping[str, Any] | None,
             presentation: Presentation | None, stream: bool | None) -> tuple[
                 Profile, Presentation, bool]:
    resolved = resolve_profile(profile, Profile)
    if not resolved.run.direct_runnable:
        raise AgentError(f"agent.profile_not_direct_runnable: profile `{resolved.id}` can only "
                         "run as a delegated SubAgent", code="agent.profile_not_direct_runnable")
    chosen: Presentation = presentation or resolved.run.presentation
    if chosen not in ("foreground", "background"):
        raise UsageError("presentation must be `foreground` or `background`")
    if chosen == "foreground":
        allowed = {name.removeprefix("builtin:") for name in resolved.tools.allow}
        denied = {name.removeprefix("builtin:") for name in resolved.tools.deny}
        if ("workspace.commit" not in allowed or "workspace.commit" in denied
                or lab.tools.get("workspace.commit") is None):
            raise AgentError("agent.foreground_commit_unavailable: foreground runs require "
                             "workspace.commit", code="agent.foreground_commit_unavailable")
    return resolved, chosen, resolved.run.stream if stream is None else stream


#: The provider names a model binding may use, and the client each one builds.
BINDING_PROVIDERS = {"openai_compatible": "OpenAICompatible", "openai": "OpenAICompatible",
                     "claude_messages": "ClaudeMessages", "anthropic": "ClaudeMessages"}


def provider_from(model: Any, profile: Profile) -> tuple[ModelProvider, bool]:
    """The provider the loop calls, and whether the loop made it (and so closes it): a
    provider as given; a model binding (``{provider, model, baseUrl?, apiKeyEnv?,
    params?}``, as a mapping or :class:`~tavernlab.workspace.roots.ModelBinding`) made into
    its client; ``None``, the Profile's ``model``."""
    if isinstance(model, ModelProvider):
        return model, False
    if model is None:
        model = profile.model
        if model is None:
            raise UsageError("no model: pass model= (a provider or a binding) or set the "
                             "Profile's `model`")
    binding = model if isinstance(model, ModelBinding) else None
    if binding is None and isinstance(model, Mapping):
        binding = ModelBinding.model_validate(dict(model))
    if binding is None:
        raise UsageError("model must be a model provider (tavernlab.models.Scripted, "
                         "OpenAICompatible, ClaudeMessages, Recorded) or a binding "
                         "{provider, model, baseUrl?, apiKeyEnv?, params?}")
    name = BINDING_PROVIDERS.get(binding.provider)
    if name is None:
        raise UsageError(f"unknown model provider `{binding.provider}` (use "
                         "`openai_compatible` or `claude_messages`)")
    import tavernlab.models as models

    client = getattr(models, name)
    options: dict[str, Any] = {"base_url": binding.base_url, "params": binding.params or None}
    if binding.api_key_env is not None:
        options["api_key_env"] = binding.api_key_env
    made: ModelProvider = client(binding.model, **options)
    return made, True


def start_agent(lab: Lab, task: str, *, model: Any, chat_id: str | None = None,
                profile: Profile | Mapping[str, Any] | None = None,
                presentation: Presentation | None = None, stream: bool | None = None,
                on_delta: DeltaObserver | None = None,
                review: Callable[[dict[str, Any]], str | None] | None = None,
                agents: Mapping[str, Profile | Mapping[str, Any]] | None = None
                ) -> AgentHandle:
    """Start the loop on ``task`` in a new Chat run of ``lab`` and return its handle.

    ``model`` is a provider, a model binding or ``None`` (the Profile's ``model``);
    ``profile`` defaults to the default writer; ``presentation``
    and ``stream`` default to the Profile's ``run`` settings. ``on_delta`` receives the
    streamed pieces of every model call (on the loop's thread); ``review`` is the host's
    answer to each commit request (``None`` accepts it, a message rejects it; by default
    every commit is accepted and saved in the lab's chat file). ``agents`` are the Profiles
    the run's agents may delegate to or hand the run to, by id (a Profile's ``id`` is set to
    its key). Everything is checked before the run is created. How the loop was started
    (the task, chat, presentation, stream flag and agents; never the model's credentials)
    is kept in the run's ``input/loop_start.json``, which is what a replay re-drives it
    from.
    """
    if not isinstance(task, str) or not task.strip():
        raise UsageError("the task must be non-empty text")
    resolved, chosen, streaming = _resolve(lab, profile, presentation, stream)
    provider, owned = provider_from(model, resolved)
    targets: dict[str, Profile] = {}
    for agent_id, agent_profile in (agents or {}).items():
        target = resolve_profile(agent_profile, Profile)
        target.id = agent_id
        target.policy()
        targets[agent_id] = target
    chat = chat_id or DEFAULT_CHAT_ID
    run = lab.start_loop_run(chat, presentation=chosen, profile=resolved)
    write_json(run.dir / LOOP_START_FILE, {
        "task": task, "chatId": chat, "presentation": chosen, "stream": streaming,
        "agents": {agent_id: target.model_dump(mode="json", by_alias=True)
                   for agent_id, target in targets.items()}})
    core = run._core
    loop = AgentLoop(run, core, lab.tools, provider, task=task, stream=streaming,
                     on_delta=on_delta, review=review, agents=targets, owns_provider=owned)
    core.loop_cancel = loop.cancel
    core.loop_done = threading.Event()
    handle = AgentHandle(run, loop)
    handle._start()
    return handle


def run_agent(lab: Lab, task: str, **options: Any) -> AgentOutcome:
    """:func:`start_agent`, then wait for the outcome."""
    return start_agent(lab, task, **options).wait()


def tool_definitions(lab: Lab, profile: Profile | Mapping[str, Any] | None = None, *,
                     provider_format: str = "openai_compatible") -> list[dict[str, Any]]:
    """What a model driving a run of ``profile`` in ``lab`` is shown of the tools, in
    ``provider_format``'s wire shape (the root invocation of a Chat run)."""
    resolved = resolve_profile(profile, Profile)
    registry = lab.tools
    external: list[ToolSpec] = []
    if resolved.mcp.servers:  # the servers are started, listed and stopped again
        tools = McpTools()
        try:
            external = tools.tools_for(resolved)
        finally:
            tools.close()
    snapshot = build_snapshot(registry, resolved, "inv_root", mode="root", chat=True,
                              external=external)
    from tavernlab.models import tool_definitions as shaped

    return shaped(snapshot.model_tools(), provider_format)


def profile_from(path: str | None, rounds: int | None, *, label: str = "") -> Profile | None:
    """The Profile a command line or a magic line names: the JSON file ``path`` (upstream's
    camelCase shape), with ``rounds`` as its round budget; ``None`` when neither is given
    (the default writer). A bad file or a round count below 1 is a ``UsageError`` whose
    message starts with ``label``."""
    profile: Profile | None = None
    if path is not None:
        try:
            data = json.loads(Path(path).expanduser().read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise UsageError(f"{label}--profile {path}: {exc}") from None
        profile = Profile.model_validate(data)
    if rounds is not None:
        if rounds < 1:
            raise UsageError(f"{label}--rounds must be at least 1")
        profile = profile or Profile()
        profile.tools.max_rounds = rounds
    return profile
