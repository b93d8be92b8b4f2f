"""Agent Profiles: roots, message body path, tool budgets and skill policy.

A Profile is frozen into each run as ``input/resolved_profile.json``. The defaults are
upstream's default writer profile: ``maxRounds`` 80, ``maxCallsPerRun`` 80 (per invocation),
no per-tool cap (``maxCallsPerTool`` is a map by tool id), external results inlined up to
50 000 characters (``externalResultInlineCharLimit``); ``run`` holds the loop's settings
(presentation, streaming, the model retry policy and request timeout, whether the profile can
start a run directly) and ``model`` the model binding the loop uses when none is passed.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import AliasChoices, Field, field_validator, model_validator

import tavernlab.layout as layout
from tavernlab.ondisk import Model
from tavernlab.workspace.roots._ids import check_dir_name
from tavernlab.workspace.roots._policy import DEFAULT_ROOTS, Policy

SESSION_ROOTS: tuple[str, ...] = ("work", "tmp")


class WorkspaceSettings(Model):
    """``workspace.*`` of a Profile."""

    visible_roots: list[str] = Field(default_factory=lambda: list(DEFAULT_ROOTS))
    writable_roots: list[str] = Field(default_factory=lambda: list(DEFAULT_ROOTS))
    message_body_path: str = layout.MESSAGE_BODY


#: The tools upstream's default writer profile allows, in the order a model is shown them.
DEFAULT_ALLOWED_TOOLS: tuple[str, ...] = (
    "agent.delegate", "agent.await", "chat.search", "chat.read_messages",
    "worldinfo.read_activated", "workspace.list_files", "workspace.search_files",
    "workspace.read_file", "workspace.write_file", "workspace.apply_patch", "workspace.shell",
    "workspace.commit", "workspace.finish")


class ToolDescriptionOverride(Model):
    """``tools.toolDescriptions[toolId]``: a description and property descriptions that
    replace what a model is shown of a tool."""

    description: str | None = None
    properties: dict[str, str] = Field(default_factory=dict)


class ToolBudgets(Model):
    """``tools.*`` of a Profile: which tools the agent loop shows a model (``allow``, in that
    order, minus ``deny``; tools the lab lacks are skipped) with optional description
    overrides, the round budget of an invocation, its call budget
    (``maxCallsPerRun``, counted per invocation as upstream does), per-tool caps by tool id
    (``{"workspace.list_files": 2}``; absent = no cap) and the character count above which an
    external tool's result is stored as a readable view instead of being inlined
    (``externalResultInlineCharLimit``, alias ``mcpResultInlineCharLimit``). ``None`` means
    unlimited."""

    allow: list[str] = Field(default_factory=lambda: list(DEFAULT_ALLOWED_TOOLS))
    deny: list[str] = Field(default_factory=list)
    tool_descriptions: dict[str, ToolDescriptionOverride] = Field(default_factory=dict)
    max_rounds: int | None = Field(default=80, ge=1)
    max_calls_per_run: int | None = Field(default=80, ge=1)
    max_calls_per_tool: dict[str, int] = Field(default_factory=dict)
    external_result_inline_char_limit: int = Field(
        default=50_000, ge=1, validation_alias=AliasChoices(
            "externalResultInlineCharLimit", "external_result_inline_char_limit",
            "mcpResultInlineCharLimit"))

    @field_validator("max_calls_per_tool")
    @classmethod
    def _caps_are_positive(cls, value: dict[str, int]) -> dict[str, int]:
        for tool_id, cap in value.items():
            if cap < 1:
                raise ValueError(f"maxCallsPerTool[{tool_id}] must be at least 1")
        return value


class ModelRetry(Model):
    """``run.modelRetry``: how often a failed retryable model call is tried again
    (``maxRetries``, so up to ``1 + maxRetries`` attempts) and the fixed pause between tries
    (``intervalMs``; no backoff, no jitter)."""

    max_retries: int = Field(default=3, ge=0)
    interval_ms: int = Field(default=3000, ge=0)


class RunSettings(Model):
    """``run.*`` of a Profile: the presentation a run of this profile has by default, whether
    the model streams (``stream``; it also changes auto-commit of streamed text writes),
    the retry policy, the request timeout (``modelTimeoutMs``, 600 000) and whether the
    profile may start a run itself (``directRunnable``; else only as a delegated agent)."""

    presentation: Literal["foreground", "background"] = "foreground"
    stream: bool = True
    direct_runnable: bool = True
    model_retry: ModelRetry = Field(default_factory=ModelRetry)
    model_timeout_ms: int = Field(default=600_000, ge=1)


class ModelBinding(Model):
    """``model``: which model drives the loop (``{provider, model, baseUrl?, apiKeyEnv?,
    params?}``). ``apiKeyEnv`` names the environment variable holding the credential (the
    value itself is never stored); ``params`` are generation parameters (temperature, max
    tokens, reasoning effort) and land in the prompt snapshot's ``generationParameters``."""

    provider: str
    model: str
    base_url: str | None = None
    api_key_env: str | None = None
    params: dict[str, Any] = Field(default_factory=dict)


class SkillPolicy(Model):
    """``skills.*`` of a Profile: which installed skills an Invocation may bind.

    ``visible`` is ``"*"`` or a list of names; ``deny`` always wins. ``legacyRunScript``
    turns on the ``skill.run_script`` compatibility mode (off by default).
    """

    visible: Literal["*"] | list[str] = "*"
    deny: list[str] = Field(default_factory=list)
    legacy_run_script: bool = False

    def allows(self, name: str) -> bool:
        """Whether the policy lets an Invocation use the skill ``name``."""
        if name in self.deny:
            return False
        return self.visible == "*" or name in self.visible


class DelegationSettings(Model):
    """``delegation.*``: whether other agents may call this profile (``callable``) as a
    delegated sub-agent (``allowSubAgent``) or hand the run to it (``allowHandoff``), the
    line the agent catalog shows for it (``descriptionForAgents``, else the Profile's
    ``description``), which agents it may call itself (``allowedAgents``: ``"*"`` or ids)
    and the limits of a run (tavernlab's names for upstream's limits: 8 invocations per run,
    a handoff depth of 8)."""

    callable: bool = True
    allow_sub_agent: bool = True
    allow_handoff: bool = True
    description_for_agents: str | None = None
    allowed_agents: Literal["*"] | list[str] = "*"
    max_invocations_per_run: int = Field(default=8, ge=1)
    max_handoff_depth: int = Field(default=8, ge=1)


#: The hosts an MCP server's URL may name: servers on this machine only.
LOCAL_MCP_HOSTS = frozenset({"localhost", "::1"})


def _local_mcp_url(url: str) -> str:
    import ipaddress
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"MCP server url `{url}` must be an http:// or https:// URL")
    host = parts.hostname
    local = host in LOCAL_MCP_HOSTS
    if not local:
        try:
            local = ipaddress.ip_address(host).is_loopback
        except ValueError:
            local = False
    if not local:
        raise ValueError(f"MCP server url `{url}` is not on this machine (use 127.0.0.1, ::1 "
                         "or localhost)")
    return url


class McpServerSettings(Model):
    """``mcp.servers.<name>``: an MCP server the loop connects to at the start of each
    invocation. Either a command started over stdio (``command``, ``args``, extra ``env``,
    ``cwd``) or a streamable-HTTP ``url`` on this machine (127.0.0.0/8, ::1, localhost;
    any other host is refused). ``env`` is stored with the run's Profile, so a credential
    goes in ``envFrom`` instead: the names of variables of tavernlab's own environment the
    server gets (their values are never written; a stdio server otherwise sees only the
    ``mcp`` client's default environment). ``toolDescriptions`` (by the server's tool name) replace
    the server's own descriptions; the Profile's ``tools.toolDescriptions`` (by tool id
    ``mcp/<server>/<tool>``) win over both."""

    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    env_from: list[str] = Field(default_factory=list)
    cwd: str | None = None
    url: str | None = None
    tool_descriptions: dict[str, ToolDescriptionOverride] = Field(default_factory=dict)

    @field_validator("url")
    @classmethod
    def _url_is_local(cls, value: str | None) -> str | None:
        return None if value is None else _local_mcp_url(value)

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerSettings:
        if (self.command is None) == (self.url is None):
            raise ValueError("an MCP server needs exactly one of `command` (stdio) or `url` "
                             "(streamable HTTP)")
        return self


class McpSettings(Model):
    """``mcp``: the MCP servers whose tools join every invocation's tool snapshot (after
    the builtins, in server then tool order, minus ``tools.deny``), and how long one call
    may take before its outcome counts as unknown (``callTimeoutMs``, default 120 000; the
    run then fails with ``mcp.call_outcome_unknown``)."""

    servers: dict[str, McpServerSettings] = Field(default_factory=dict)
    call_timeout_ms: int = Field(default=120_000, ge=1)
    connect_timeout_ms: int = Field(default=30_000, ge=1)


class Instructions(Model):
    """``instructions.*``: ``agentSystemPrompt`` replaces the default agent system prompt."""

    agent_system_prompt: str | None = None


class Profile(Model):
    """A resolved agent Profile."""

    id: str = "default"
    workspace: WorkspaceSettings = Field(default_factory=WorkspaceSettings)
    tools: ToolBudgets = Field(default_factory=ToolBudgets)
    skills: SkillPolicy = Field(default_factory=SkillPolicy)
    run: RunSettings = Field(default_factory=RunSettings)
    model: ModelBinding | None = None
    instructions: Instructions = Field(default_factory=Instructions)
    description: str = ""
    delegation: DelegationSettings = Field(default_factory=DelegationSettings)
    mcp: McpSettings = Field(default_factory=McpSettings)

    @field_validator("id")
    @classmethod
    def _id_is_a_name(cls, value: str) -> str:
        return check_dir_name(value, "profile id")

    def to_json(self) -> dict[str, Any]:
        """The Profile as a run stores it (``input/resolved_profile.json``, a sub-agent's
        journal record): every field, ``null`` budgets included, since ``null`` means
        unlimited and must survive being read back (dropping it restored the defaults)."""
        # A Profile without MCP servers stores exactly what it stored before they existed.
        exclude = None if self.mcp.servers else {"mcp"}
        return self.model_dump(mode="json", by_alias=True, exclude=exclude)

    def policy(self) -> Policy:
        """The effective root policy (adds ``tool-results`` and ``skills``, read-only)."""
        return Policy.from_profile(self.workspace.visible_roots, self.workspace.writable_roots)

    @classmethod
    def session_default(cls) -> Profile:
        """The shared Session Profile's default: ``work/`` and ``tmp/`` writable."""
        return cls(id="session", workspace=WorkspaceSettings(
            visible_roots=list(SESSION_ROOTS), writable_roots=list(SESSION_ROOTS),
            message_body_path="work/main.md"))
