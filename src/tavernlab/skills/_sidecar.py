"""The optional sidecar ``agents/tauritavern.json`` of a skill package (docs/js-and-skills.md).

JSON, camelCase, strict types, unknown fields rejected (upstream ``deny_unknown_fields``),
``version`` must be ``1``. An invalid sidecar fails the whole package, with the first problem
as one short line (``Invalid agents/tauritavern.json: unknown field `x```).
"""

from __future__ import annotations

from pydantic import ConfigDict, Field, ValidationError

from tavernlab.ondisk import Model
from tavernlab.skills._errors import InvalidSkillPackage

SIDECAR_PATH = "agents/tauritavern.json"
SIDECAR_VERSION = 1


class _SidecarModel(Model):
    """camelCase only, strict types, unknown fields rejected (upstream ``deny_unknown_fields``)."""

    model_config = ConfigDict(populate_by_name=False, extra="forbid", strict=True, frozen=True)


class RecommendedContext(_SidecarModel):
    """``recommendedContext`` of the sidecar."""

    default_budget_tokens: int | None = Field(default=None, ge=0)
    preferred_mode: str | None = None


class Sidecar(_SidecarModel):
    """``agents/tauritavern.json``; ``version`` must be ``1``."""

    version: int
    display_name: str | None = None
    source_kind: str | None = None
    allow_implicit_invocation: bool | None = None
    recommended_tools: list[str] = Field(default_factory=list)
    recommended_context: RecommendedContext | None = None
    tags: list[str] = Field(default_factory=list)
    notes: str | None = None


def parse_sidecar(data: bytes) -> Sidecar:
    """Validate the sidecar; any problem fails the whole package."""
    try:
        sidecar = Sidecar.model_validate_json(data)
    except ValidationError as exc:
        raise InvalidSkillPackage(
            f"Invalid {SIDECAR_PATH}: {_describe_validation(exc)}") from None
    if sidecar.version != SIDECAR_VERSION:
        raise InvalidSkillPackage(f"Unsupported {SIDECAR_PATH} version {sidecar.version}")
    return sidecar


def _describe_validation(exc: ValidationError) -> str:
    """The first pydantic error as one short line (``unknown field `x``` for extras)."""
    error = exc.errors(include_url=False)[0]
    where = ".".join(str(part) for part in error["loc"])
    if error["type"] == "extra_forbidden":
        return f"unknown field `{where}`"
    if error["type"] == "json_invalid":
        return f"not valid JSON ({error['msg']})"
    return f"{where}: {error['msg']}" if where else str(error["msg"])
