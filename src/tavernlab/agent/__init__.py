"""The agent loop: a model drives a run through the workspace tools, as upstream's runtime
does.

:func:`start_agent` (``Lab.start_agent``) starts a Chat run and runs the loop on a thread of
its own; :func:`run_agent` (``Lab.run_agent``) waits for its :class:`AgentOutcome`. The loop
assembles the prompt (upstream's default agent system prompt with the skill and agent
catalogs), shows the model the invocation's tool snapshot, and plays rounds of one model call
(retried by the Profile's fixed-interval policy) and the tool calls it asked for, through the
host's one dispatch and event path, until a completion tool ends the turn. Everything it does
is a record of the run (``input/``, ``model-responses/``, ``tool-args/``, ``tool-results/``,
``events.jsonl``).

A live view subscribes to two things: ``run.subscribe(callback)`` (every event and journal
record as it is written; ``model_call_attempt_*``, ``model_completed`` with ``attempts``,
``elapsedMs`` and ``usage``, ``tool_call_*``, ``chat_commit_*``, the terminal event) and the
``on_delta`` callback of :func:`start_agent` (each streamed text, reasoning and tool-argument
piece as a :class:`LiveDelta`, never written to the run's records).

Importing this package registers ``agent.run``, ``agent.start`` and
``agent.tool_definitions`` with the host's presenter registry, which is how
:class:`~tavernlab.host.Lab` reaches it without importing it.
"""

from __future__ import annotations

from tavernlab.agent._api import (
    DEFAULT_CHAT_ID,
    AgentHandle,
    AgentOutcome,
    profile_from,
    run_agent,
    start_agent,
    tool_definitions,
)
from tavernlab.agent._external import CallAnswer, ExternalAgent, ExternalClient
from tavernlab.agent._failure import failure_payload
from tavernlab.agent._loop import AgentLoop, LiveDelta
from tavernlab.agent._prompt import default_system_prompt
from tavernlab.agent._tools import ToolSnapshot, build_snapshot
from tavernlab.host import register_presenter
from tavernlab.models import CANCELLED_MESSAGE

__all__ = [
    "CANCELLED_MESSAGE", "DEFAULT_CHAT_ID", "AgentHandle", "AgentLoop", "AgentOutcome",
    "CallAnswer", "ExternalAgent", "ExternalClient",
    "LiveDelta", "ToolSnapshot", "build_snapshot", "default_system_prompt", "failure_payload",
    "profile_from",
    "run_agent", "start_agent", "tool_definitions",
]

register_presenter("agent.run", run_agent)
register_presenter("agent.start", start_agent)
register_presenter("agent.tool_definitions", tool_definitions)
