"""What each provider format shows the model of its tools, and the lazy SDK names."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import tavernlab.models as models
from tavernlab.models import ModelTool

TOOL = ModelTool(tool_id="builtin:workspace.read_file", model_alias="workspace_read_file",
                 description="Read a file.",
                 input_schema={"$schema": "https://json-schema.org/draft/2020-12/schema",
                               "$id": "read", "type": "object",
                               "properties": {"path": {"type": "string", "$id": "p"}},
                               "required": ["path"]})
BARE = ModelTool(tool_id="mcp:srv/x", model_alias="mcp__srv__x")


def test_openai_function_form() -> None:
    assert models.tool_definitions([TOOL, BARE], "openai_compatible") == [
        {"type": "function", "function": {"name": "workspace_read_file",
                                          "description": "Read a file.",
                                          "parameters": TOOL.input_schema}},
        {"type": "function", "function": {"name": "mcp__srv__x", "parameters": {}}}]
    for fmt in ("scripted", "recorded"):
        assert models.tool_definitions([TOOL], fmt) == \
            models.tool_definitions([TOOL], "openai_compatible")


def test_claude_form_strips_schema_ids() -> None:
    assert models.tool_definitions([TOOL, BARE], "claude_messages") == [
        {"name": "workspace_read_file", "description": "Read a file.",
         "input_schema": {"type": "object", "properties": {"path": {"type": "string"}},
                          "required": ["path"]}},
        {"name": "mcp__srv__x", "input_schema": {}}]
    assert "$schema" in TOOL.input_schema  # the tool itself is untouched


def test_canonical_form_and_unknown_format() -> None:
    assert models.tool_definitions([TOOL], "canonical") == [{
        "toolId": "builtin:workspace.read_file", "modelAlias": "workspace_read_file",
        "description": "Read a file.", "inputSchema": TOOL.input_schema}]
    with pytest.raises(ValueError, match="unknown provider format 'gemini'"):
        models.tool_definitions([TOOL], "gemini")


def test_importing_models_imports_no_sdk() -> None:
    code = ("import sys, tavernlab.models as m\n"
            "assert 'openai' not in sys.modules and 'anthropic' not in sys.modules\n"
            "assert m.Recorded.provider_format == 'recorded'\n"
            "assert 'openai' not in sys.modules\n"
            "p = m.OpenAICompatible('gpt-x')\n"
            "assert 'openai' not in sys.modules  # not even on construction\n"
            "assert m.ClaudeMessages('c').provider_format == 'claude_messages'\n"
            "assert 'anthropic' not in sys.modules\n"
            "print('ok')\n")
    src = Path(models.__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={"PYTHONPATH": str(src), "PATH": "/usr/bin:/bin"}, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_unknown_attribute() -> None:
    with pytest.raises(AttributeError, match="has no attribute 'Nope'"):
        models.Nope  # noqa: B018
    assert {"OpenAICompatible", "ClaudeMessages", "Recorded", "tool_definitions"} <= \
        set(dir(models))
