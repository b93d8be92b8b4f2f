"""Model names: ``PREFIX:MODEL`` strings turned into providers, and the known prefixes.

:func:`from_spec` is what the ``%%agent`` magic and ``tavernlab agent run --model`` use:

* ``openai:<model>`` -- OpenAI itself (``OPENAI_API_KEY``);
* ``openrouter:<model>``, ``deepseek:<model>``, ``groq:<model>`` -- their public
  OpenAI-compatible endpoints (``OPENROUTER_API_KEY``, ``DEEPSEEK_API_KEY``,
  ``GROQ_API_KEY``);
* ``ollama:<model>`` -- a local Ollama at ``http://127.0.0.1:11434/v1`` (no key);
* ``local:<model>``, ``vllm:<model>``, ``llamacpp:<model>`` -- an OpenAI-compatible server
  of your own (vLLM, llama.cpp's ``llama-server``, LM Studio …) at ``base_url``, else
  ``$TAVERNLAB_LOCAL_BASE_URL``, else ``http://127.0.0.1:8000/v1``; a key is sent only when
  ``TAVERNLAB_LOCAL_API_KEY`` is set;
* ``anthropic:<model>`` / ``claude:<model>`` -- the Anthropic Messages API
  (``ANTHROPIC_API_KEY``);
* ``scripted:<file.json>`` -- a JSON list of answers in the fixture shape
  :class:`~tavernlab.models.Scripted` takes (for demos and tests; a relative path is read
  from the working directory).

Credentials come from the environment only. A missing one is reported by :func:`from_spec`
itself (``model.credentials_missing``, naming the variable to set), so nothing is started
with a model that cannot be called; :func:`model_prefixes` lists every prefix with whether
its variable is set (never its value).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from tavernlab.errors import ModelError
from tavernlab.models._provider import ModelProvider

#: Where ``local:``, ``vllm:`` and ``llamacpp:`` models are served when no base URL is given.
LOCAL_BASE_URL = "http://127.0.0.1:8000/v1"
#: The variable naming another default base URL for the local prefixes.
LOCAL_BASE_URL_ENV = "TAVERNLAB_LOCAL_BASE_URL"
#: The optional key sent to a local server.
LOCAL_API_KEY_ENV = "TAVERNLAB_LOCAL_API_KEY"

ProviderKind = Literal["openai_compatible", "claude_messages", "scripted"]


class ModelSpecError(ModelError):
    """A model name that cannot be used: an unknown prefix (``model.unknown_provider``), a
    malformed name or scripted file (``model.invalid_spec``) or a credential that is not set
    (``model.credentials_missing``, with ``details["env"]`` naming its variable)."""

    code = "model.invalid_spec"


@dataclass(frozen=True, slots=True)
class ModelPrefix:
    """One known prefix: the provider it builds, its default base URL and the variable its
    key is read from (``key_required`` false: the key is optional or not needed)."""

    prefix: str
    provider: ProviderKind
    description: str
    base_url: str | None = None
    api_key_env: str | None = None
    key_required: bool = True

    @property
    def credential_set(self) -> bool | None:
        """Whether the key's variable is set to a non-blank value (``None``: no key)."""
        if self.api_key_env is None:
            return None
        return bool(os.environ.get(self.api_key_env, "").strip())

    @property
    def ready(self) -> bool:
        """Whether a model of this prefix can be built now (its key, if required, is set)."""
        return not self.key_required or bool(self.credential_set)

    def to_json(self) -> dict[str, Any]:
        """``{prefix, provider, description, baseUrl, apiKeyEnv, keyRequired,
        credentialSet}`` (the variable's name and whether it is set, never its value)."""
        return {"prefix": self.prefix, "provider": self.provider,
                "description": self.description, "baseUrl": self.default_base_url(),
                "apiKeyEnv": self.api_key_env, "keyRequired": self.key_required,
                "credentialSet": self.credential_set}

    def default_base_url(self) -> str | None:
        """The base URL used when none is given (the local prefixes read
        ``$TAVERNLAB_LOCAL_BASE_URL`` first)."""
        if self.prefix in _LOCAL:
            return os.environ.get(LOCAL_BASE_URL_ENV, "").strip() or LOCAL_BASE_URL
        return self.base_url


_LOCAL = ("local", "vllm", "llamacpp")

#: Every known prefix, in the order they are listed.
MODEL_PREFIXES: tuple[ModelPrefix, ...] = (
    ModelPrefix("openai", "openai_compatible", "OpenAI (Chat Completions)",
                "https://api.openai.com/v1", "OPENAI_API_KEY"),
    ModelPrefix("openrouter", "openai_compatible", "OpenRouter",
                "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"),
    ModelPrefix("deepseek", "openai_compatible", "DeepSeek", "https://api.deepseek.com/v1",
                "DEEPSEEK_API_KEY"),
    ModelPrefix("groq", "openai_compatible", "Groq", "https://api.groq.com/openai/v1",
                "GROQ_API_KEY"),
    ModelPrefix("ollama", "openai_compatible", "a local Ollama",
                "http://127.0.0.1:11434/v1", None, key_required=False),
    ModelPrefix("local", "openai_compatible", "an OpenAI-compatible server at --base-url",
                LOCAL_BASE_URL, LOCAL_API_KEY_ENV, key_required=False),
    ModelPrefix("vllm", "openai_compatible", "vLLM's server at --base-url", LOCAL_BASE_URL,
                LOCAL_API_KEY_ENV, key_required=False),
    ModelPrefix("llamacpp", "openai_compatible", "llama.cpp's llama-server at --base-url",
                LOCAL_BASE_URL, LOCAL_API_KEY_ENV, key_required=False),
    ModelPrefix("anthropic", "claude_messages", "Anthropic (Messages API)", None,
                "ANTHROPIC_API_KEY"),
    ModelPrefix("claude", "claude_messages", "Anthropic (Messages API)", None,
                "ANTHROPIC_API_KEY"),
    ModelPrefix("scripted", "scripted", "a JSON file of scripted answers", None, None,
                key_required=False),
)

_BY_PREFIX = {entry.prefix: entry for entry in MODEL_PREFIXES}


def model_prefixes() -> list[ModelPrefix]:
    """The known prefixes (read :attr:`ModelPrefix.credential_set` for each variable)."""
    return list(MODEL_PREFIXES)


def prefix_of(spec: str) -> ModelPrefix:
    """The known prefix ``spec`` starts with; an unknown one is ``model.unknown_provider``
    listing the known ones."""
    if not isinstance(spec, str):
        raise ModelSpecError(f"a model name is text like `openai:gpt-4o-mini`, not "
                             f"{type(spec).__name__}")
    prefix, sep, _ = spec.strip().partition(":")
    entry = _BY_PREFIX.get(prefix.strip().lower()) if sep else None
    if entry is None:
        known = ", ".join(f"{e.prefix}:" for e in MODEL_PREFIXES)
        shown = f"prefix `{prefix}:`" if sep else "no prefix"
        raise ModelSpecError(f"unknown model `{spec}` ({shown}); write PREFIX:MODEL with "
                             f"one of the known prefixes: {known}",
                             code="model.unknown_provider")
    return entry


def missing_credential(entry: ModelPrefix) -> ModelSpecError:
    """``model.credentials_missing`` for ``entry``, naming the variable to set (the code a
    provider raises when it finds no key at call time)."""
    env = entry.api_key_env
    return ModelSpecError(
        f"`{entry.prefix}:` models read their API key from the environment variable "
        f"`{env}`, which is not set; set `{env}` and run again",
        code="model.credentials_missing", env=env)


def from_spec(spec: str, *, base_url: str | None = None,
              params: Mapping[str, Any] | None = None) -> ModelProvider:
    """The provider ``spec`` names (see the module docstring). ``base_url`` replaces the
    prefix's default endpoint (a local server, a proxy, a test server); ``params`` are the
    generation parameters sent with every request. A missing credential, an unknown prefix
    or an unreadable scripted file raises before anything is started."""
    entry = prefix_of(spec)
    name = spec.strip().partition(":")[2].strip()
    if not name:
        raise ModelSpecError(f"model `{spec}` names no model: write `{entry.prefix}:"
                             f"{'FILE.json' if entry.provider == 'scripted' else 'MODEL'}`")
    if entry.provider == "scripted":
        if base_url is not None or params:
            raise ModelSpecError("a scripted model takes no base URL and no parameters")
        return _scripted(name)
    key_env = entry.api_key_env
    if entry.key_required and not entry.credential_set:
        raise missing_credential(entry)
    if not entry.key_required and not entry.credential_set:
        key_env = None
    url = base_url.strip() if base_url is not None and base_url.strip() else \
        entry.default_base_url()
    if entry.provider == "claude_messages":
        from tavernlab.models._claude import ClaudeMessages

        return ClaudeMessages(name, base_url=url, api_key_env=key_env, params=params)
    from tavernlab.models._openai import OpenAICompatible

    return OpenAICompatible(name, base_url=url, api_key_env=key_env, params=params)


def _scripted(file: str) -> ModelProvider:
    from tavernlab.models._scripted import Scripted

    path = Path(file).expanduser()
    try:
        turns = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ModelSpecError(f"scripted model file `{file}` cannot be read: "
                             f"{exc.strerror or exc}") from None
    except ValueError as exc:
        raise ModelSpecError(f"scripted model file `{file}` is not JSON: {exc}") from None
    if not isinstance(turns, list) or not all(isinstance(t, dict) for t in turns):
        raise ModelSpecError(f"scripted model file `{file}` must hold a JSON list of answers "
                             "(objects with `choices` or `error`)")
    try:
        return Scripted(turns, model=f"scripted:{path.name}")
    except ValueError as exc:
        raise ModelSpecError(f"scripted model file `{file}`: {exc}") from None
