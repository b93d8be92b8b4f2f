"""How a model call fails, classified the way upstream's retry policy reads it.

``kind`` is upstream's error kind: ``rate_limited`` (HTTP 429), ``transient`` (408, 425, 500,
502, 503, 504, and an unreadable provider body), ``upstream`` (a network failure: the codes
``network.timeout``, ``network.connect_failed``, ``network.proxy_failed``,
``network.dns_failed``, ``network.tls_failed``, ``network.body_interrupted``,
``network.request_failed``), ``invalid_data`` (400), ``unauthorized`` (401/403), ``validation``
(a response that breaks the tool-call contract: ``model.invalid_tool_call`` …), ``internal``
(any other status). The first three are retried by the loop; the rest end the run.
"""

from __future__ import annotations

from typing import Any, Literal

from tavernlab.errors import ModelError

ErrorKind = Literal["rate_limited", "transient", "upstream", "invalid_data", "unauthorized",
                    "validation", "internal"]

RETRYABLE_KINDS: frozenset[str] = frozenset({"rate_limited", "transient", "upstream"})

#: The Display prefix upstream puts before a message of each kind (``technicalMessage``).
DISPLAY_PREFIX: dict[str, str] = {
    "rate_limited": "", "transient": "", "upstream": "", "invalid_data": "Validation error: ",
    "validation": "Validation error: ", "unauthorized": "Unauthorized: ",
    "internal": "Internal error: ",
}


class ModelCallError(ModelError):
    """A model call that failed; ``message`` starts with its code (``<code>: <detail>``) the way
    upstream's error text does, so the failure payload splits it back the same way."""

    def __init__(self, code: str, detail: str, *, kind: ErrorKind,
                 status: int | None = None, **details: Any) -> None:
        super().__init__(f"{code}: {detail}", code=code, **details)
        self.detail = detail
        self.kind: ErrorKind = kind
        self.status = status

    @property
    def retryable(self) -> bool:
        """Whether upstream's policy retries this failure."""
        return self.kind in RETRYABLE_KINDS

    @property
    def technical_message(self) -> str:
        """The error's Display, as upstream prints it (``Validation error: model.…: …``)."""
        return DISPLAY_PREFIX[self.kind] + self.message


#: What a run cancelled by its user says (upstream's loop message, ``run_cancelled``).
CANCELLED_MESSAGE = "Generation cancelled by user"


class ModelCancelled(ModelError):
    """The model call stopped because the run was cancelled."""

    code = "agent.cancelled"

    def __init__(self, message: str = CANCELLED_MESSAGE) -> None:
        super().__init__(message)


def status_error(status: int, detail: str) -> ModelCallError:
    """The classified error for an HTTP ``status`` answered by the provider."""
    if status == 429:
        return ModelCallError("agent.rate_limited", detail, kind="rate_limited", status=status)
    if status in (408, 425, 500, 502, 503, 504):
        return ModelCallError("agent.transient", detail, kind="transient", status=status)
    if status == 400:
        return ModelCallError("agent.validation_error", detail, kind="invalid_data",
                              status=status)
    if status in (401, 403):
        return ModelCallError("agent.unauthorized", detail, kind="unauthorized", status=status)
    return ModelCallError("agent.internal_error", detail, kind="internal", status=status)


def network_error(code: str, detail: str) -> ModelCallError:
    """A transport failure (``network.timeout`` …): retried."""
    return ModelCallError(code, detail, kind="upstream")


def contract_error(code: str, detail: str) -> ModelCallError:
    """A response that breaks the tool-call contract (``model.invalid_tool_call``,
    ``model.unknown_tool_call``, ``model.output_truncated``, ``model.provider_refusal``,
    ``model.native_metadata_lost``): never retried."""
    return ModelCallError(code, detail, kind="validation")


def invalid_response(detail: str) -> ModelCallError:
    """An unreadable provider body (``model.upstream_invalid_response``): transient, retried."""
    return ModelCallError("model.upstream_invalid_response", detail, kind="transient")
