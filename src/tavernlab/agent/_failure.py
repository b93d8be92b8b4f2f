"""How a failed model-driven run describes its error: upstream's failure payload.

``{code, message, technicalMessage, retryable, userRetryable, details}``: the code and
message are split from the error text when it starts with ``<code>:`` (a code holds a ``.``
and only ``[a-z0-9._-]``), else the error kind's fallback code; ``technicalMessage`` is the
error's display with its kind's prefix (``Validation error: ``, ``Internal error: `` …, none
for rate-limited, transient and network failures); ``retryable`` is true for rate-limited,
transient and network failures; ``userRetryable`` also for the drift, turn-order and
round-budget codes.
"""

from __future__ import annotations

from typing import Any, Literal

from tavernlab.errors import AgentError, TavernlabError
from tavernlab.events import ERROR_CODE as CODE
from tavernlab.models import ModelCallError

USER_RETRYABLE_CODES = frozenset({"model.tool_call_required", "agent.tool_after_finish",
                                  "agent.max_tool_rounds_exceeded"})

Kind = Literal["validation", "internal"]
PREFIX = {"validation": "Validation error: ", "internal": "Internal error: "}
FALLBACK = {"validation": "agent.validation_error", "internal": "agent.internal_error"}


class LoopError(AgentError):
    """An error the loop raises itself (``<code>: <detail>``, the way upstream's error text
    reads): drift past the last round, the round budget, a fatal tool outcome."""

    def __init__(self, code: str, detail: str, *, kind: Kind = "validation") -> None:
        super().__init__(f"{code}: {detail}", code=code)
        self.kind: Kind = kind


def split_code(text: str) -> tuple[str | None, str]:
    """``("model.x", "detail")`` for ``"model.x: detail"``, else ``(None, text)``."""
    match = CODE.match(text)
    if match is None:
        return None, text
    return match.group(1), match.group(2)


def failure_payload(error: BaseException) -> dict[str, Any]:
    """The failure payload of ``error``."""
    if isinstance(error, ModelCallError):
        code, message = error.code, error.detail
        technical, retryable = error.technical_message, error.retryable
    else:
        kind: Kind = error.kind if isinstance(error, LoopError) else "internal"
        text = error.message if isinstance(error, TavernlabError) else (
            str(error) or type(error).__name__)
        found, message = split_code(text)
        code = found or FALLBACK[kind]
        technical, retryable = PREFIX[kind] + text, False
    return {"code": code, "message": message, "technicalMessage": technical,
            "retryable": retryable,
            "userRetryable": retryable or code in USER_RETRYABLE_CODES, "details": {}}
