"""Model names: each ``PREFIX:MODEL`` gives its provider with its endpoint and key variable,
credentials are checked before anything starts, and bad names say what is known."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tavernlab.errors import ModelError
from tavernlab.models import (
    ClaudeMessages,
    ModelSpecError,
    OpenAICompatible,
    Scripted,
    from_spec,
    model_prefixes,
)

KEYS = ("OPENAI_API_KEY", "OPENROUTER_API_KEY", "DEEPSEEK_API_KEY", "GROQ_API_KEY",
        "ANTHROPIC_API_KEY", "TAVERNLAB_LOCAL_API_KEY", "TAVERNLAB_LOCAL_BASE_URL")


@pytest.fixture(autouse=True)
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in KEYS:
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize(("spec", "env", "described"), [
    ("openai:gpt-4o-mini", "OPENAI_API_KEY",
     {"provider": "openai_compatible", "model": "gpt-4o-mini",
      "baseUrl": "https://api.openai.com/v1", "apiKeyEnv": "OPENAI_API_KEY"}),
    ("openrouter:openai/gpt-4o-mini", "OPENROUTER_API_KEY",
     {"provider": "openai_compatible", "model": "openai/gpt-4o-mini",
      "baseUrl": "https://openrouter.ai/api/v1", "apiKeyEnv": "OPENROUTER_API_KEY"}),
    ("deepseek:deepseek-chat", "DEEPSEEK_API_KEY",
     {"provider": "openai_compatible", "model": "deepseek-chat",
      "baseUrl": "https://api.deepseek.com/v1", "apiKeyEnv": "DEEPSEEK_API_KEY"}),
    ("groq:llama-3.3-70b-versatile", "GROQ_API_KEY",
     {"provider": "openai_compatible", "model": "llama-3.3-70b-versatile",
      "baseUrl": "https://api.groq.com/openai/v1", "apiKeyEnv": "GROQ_API_KEY"}),
    ("anthropic:claude-sonnet-4-5", "ANTHROPIC_API_KEY",
     {"provider": "claude_messages", "model": "claude-sonnet-4-5",
      "apiKeyEnv": "ANTHROPIC_API_KEY"}),
    ("claude:claude-haiku-4-5", "ANTHROPIC_API_KEY",
     {"provider": "claude_messages", "model": "claude-haiku-4-5",
      "apiKeyEnv": "ANTHROPIC_API_KEY"}),
])
def test_a_hosted_prefix_gives_its_provider_endpoint_and_key_variable(
        spec: str, env: str, described: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(env, "sk-never-shown")
    provider = from_spec(spec)
    assert isinstance(provider, ClaudeMessages if "claude" in described["provider"]
                      else OpenAICompatible)
    assert provider.describe() == described
    assert "sk-never-shown" not in json.dumps(provider.describe())


@pytest.mark.parametrize(("spec", "env"), [
    ("openai:gpt-4o-mini", "OPENAI_API_KEY"), ("openrouter:x/y", "OPENROUTER_API_KEY"),
    ("deepseek:deepseek-chat", "DEEPSEEK_API_KEY"), ("groq:m", "GROQ_API_KEY"),
    ("anthropic:m", "ANTHROPIC_API_KEY"), ("claude:m", "ANTHROPIC_API_KEY")])
def test_a_missing_credential_names_the_variable_to_set(spec: str, env: str,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(env, "   ")  # blank counts as not set
    with pytest.raises(ModelError) as caught:
        from_spec(spec)
    assert caught.value.code == "model.credentials_missing"
    assert f"set `{env}`" in caught.value.message
    assert caught.value.details["env"] == env


def test_local_servers_need_no_key_and_take_the_base_url(
        monkeypatch: pytest.MonkeyPatch) -> None:
    assert from_spec("ollama:qwen3").describe() == {
        "provider": "openai_compatible", "model": "qwen3",
        "baseUrl": "http://127.0.0.1:11434/v1"}
    for prefix in ("local", "vllm", "llamacpp"):
        assert from_spec(f"{prefix}:m").describe() == {
            "provider": "openai_compatible", "model": "m", "baseUrl": "http://127.0.0.1:8000/v1"}
    assert from_spec("llamacpp:m", base_url="http://127.0.0.1:8080/v1").describe()[
        "baseUrl"] == "http://127.0.0.1:8080/v1"
    monkeypatch.setenv("TAVERNLAB_LOCAL_BASE_URL", "http://127.0.0.1:9000/v1")
    monkeypatch.setenv("TAVERNLAB_LOCAL_API_KEY", "local-key")
    assert from_spec("vllm:m").describe() == {
        "provider": "openai_compatible", "model": "m", "baseUrl": "http://127.0.0.1:9000/v1",
        "apiKeyEnv": "TAVERNLAB_LOCAL_API_KEY"}


def test_a_base_url_and_params_reach_a_hosted_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    assert from_spec("openai:m", base_url="http://127.0.0.1:1/v1",
                     params={"temperature": 0}).describe() == {
        "provider": "openai_compatible", "model": "m", "baseUrl": "http://127.0.0.1:1/v1",
        "apiKeyEnv": "OPENAI_API_KEY", "params": {"temperature": 0}}


def test_an_unknown_prefix_lists_the_known_ones() -> None:
    for spec in ("gpt-4o", "mistral:large"):
        with pytest.raises(ModelSpecError) as caught:
            from_spec(spec)
        assert caught.value.code == "model.unknown_provider"
        assert caught.value.message.endswith(
            "known prefixes: openai:, openrouter:, deepseek:, groq:, ollama:, local:, vllm:, "
            "llamacpp:, anthropic:, claude:, scripted:")
        assert f"`{spec}`" in caught.value.message


def test_a_name_without_a_model_is_refused() -> None:
    with pytest.raises(ModelSpecError) as caught:
        from_spec("ollama:")
    assert (caught.value.code, caught.value.message) == (
        "model.invalid_spec", "model `ollama:` names no model: write `ollama:MODEL`")


def test_a_scripted_file_gives_a_scripted_model(tmp_path: Path) -> None:
    file = tmp_path / "answers.json"
    file.write_text(json.dumps([{"choices": [{"message": {"role": "assistant",
                                                          "content": "hi"}}]}]))
    provider = from_spec(f"scripted:{file}")
    assert isinstance(provider, Scripted)
    assert (provider.remaining, provider.model_id) == (1, "scripted:answers.json")


@pytest.mark.parametrize(("content", "says"), [
    (None, "cannot be read"), ("{not json", "is not JSON"),
    ('{"choices": []}', "must hold a JSON list"),
    ('[{"content": "x"}]', "scripted response 0 has neither `choices` nor `error`")])
def test_a_bad_scripted_file_is_refused(content: str | None, says: str, tmp_path: Path) -> None:
    file = tmp_path / "answers.json"
    if content is not None:
        file.write_text(content)
    with pytest.raises(ModelSpecError) as caught:
        from_spec(f"scripted:{file}")
    assert caught.value.code == "model.invalid_spec"
    assert says in caught.value.message


def test_the_prefix_list_says_whether_each_key_is_set_never_its_value(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GROQ_API_KEY", "gsk-secret")
    listed = {entry.prefix: entry.to_json() for entry in model_prefixes()}
    assert list(listed) == ["openai", "openrouter", "deepseek", "groq", "ollama", "local",
                            "vllm", "llamacpp", "anthropic", "claude", "scripted"]
    assert listed["groq"]["credentialSet"] is True
    assert listed["openai"]["credentialSet"] is False
    assert listed["ollama"]["credentialSet"] is None
    assert (listed["local"]["apiKeyEnv"], listed["local"]["keyRequired"]) == (
        "TAVERNLAB_LOCAL_API_KEY", False)
    assert "gsk-secret" not in json.dumps(listed)
