"""Model providers: the canonical request and response, and the adapters that speak each
provider's wire format.

``models`` knows wire formats, not runs: a provider turns a :class:`ModelRequest` into its
SDK's call and the answer into a :class:`ModelResponse`, streaming :data:`Delta` pieces through
a callback. The agent loop (:mod:`tavernlab.agent`) drives it and records everything.

Providers: :class:`Scripted` (upstream's fixture shape, for tests, demos and docs);
:class:`OpenAICompatible` (the official ``openai`` client, Chat Completions, any ``base_url``);
:class:`ClaudeMessages` (the official ``anthropic`` client); :class:`Recorded` (the
``model-responses/`` of a recorded run, for replay). The two SDK-backed providers are imported
on first use, so ``import tavernlab.models`` stays light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tavernlab.lazy import lazy_names
from tavernlab.models._canonical import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    ModelTool,
    NativePart,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolInvocation,
    ToolResult,
    ToolResultPart,
    Usage,
)
from tavernlab.models._errors import CANCELLED_MESSAGE, ErrorKind, ModelCallError, ModelCancelled
from tavernlab.models._provider import (
    DEFAULT_TIMEOUT_S,
    Delta,
    DeltaCallback,
    ModelProvider,
    ReasoningDelta,
    TextDelta,
    ToolCallDelta,
    next_provider_state,
)
from tavernlab.models._scripted import Scripted, ScriptedRequest
from tavernlab.models._specs import (
    MODEL_PREFIXES,
    ModelPrefix,
    ModelSpecError,
    from_spec,
    model_prefixes,
)

if TYPE_CHECKING:
    from tavernlab.models._claude import ClaudeMessages
    from tavernlab.models._openai import OpenAICompatible
    from tavernlab.models._recorded import Recorded, RecordedRequest
    from tavernlab.models._tools import tool_definitions

#: Names resolved on first access, so that ``import tavernlab.models`` imports no SDK.
_LAZY = {
    "OpenAICompatible": "tavernlab.models._openai",
    "ClaudeMessages": "tavernlab.models._claude",
    "Recorded": "tavernlab.models._recorded",
    "RecordedRequest": "tavernlab.models._recorded",
    "tool_definitions": "tavernlab.models._tools",
}


__getattr__ = lazy_names(__name__, _LAZY)
def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])

__all__ = [
    "CANCELLED_MESSAGE",
    "DEFAULT_TIMEOUT_S",
    "MODEL_PREFIXES",
    "ClaudeMessages",
    "Delta",
    "DeltaCallback",
    "ErrorKind",
    "ModelCallError",
    "ModelCancelled",
    "ModelMessage",
    "ModelPrefix",
    "ModelProvider",
    "ModelRequest",
    "ModelResponse",
    "ModelSpecError",
    "ModelTool",
    "NativePart",
    "OpenAICompatible",
    "Part",
    "ReasoningDelta",
    "ReasoningPart",
    "Recorded",
    "RecordedRequest",
    "Scripted",
    "ScriptedRequest",
    "TextDelta",
    "TextPart",
    "ToolCallDelta",
    "ToolCallPart",
    "ToolInvocation",
    "ToolResult",
    "ToolResultPart",
    "Usage",
    "from_spec",
    "model_prefixes",
    "next_provider_state",
    "tool_definitions",
]
