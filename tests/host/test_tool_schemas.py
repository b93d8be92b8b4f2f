"""What a model is shown of a lab's default tools stays byte for byte what it was: every
provider format, the default Profile and every tool allowed (the legacy mode on), and each
spec of a run's tool list, against ``data/tool_definitions.json`` (written by this module run
as a script, ``python tests/host/test_tool_schemas.py OUT``, from a tree whose tools are
known good)."""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from tavernlab import Lab

EXPECTED = Path(__file__).parent / "data" / "tool_definitions.json"
#: Every tool id a Profile may allow (those the lab lacks are skipped).
EVERY_TOOL = ["agent.delegate", "agent.await", "agent.handoff", "chat.search",
              "chat.read_messages", "worldinfo.read_activated", "workspace.list_files",
              "workspace.search_files", "workspace.read_file", "workspace.write_file",
              "workspace.apply_patch", "workspace.shell", "workspace.commit",
              "workspace.finish", "task.return", "skill.run_script", "skill.list",
              "skill.read"]


def shown(where: str) -> dict[str, Any]:
    """The definitions of every format and the specs of a run, of a fresh lab at ``where``."""
    with Lab(where) as lab:
        out: dict[str, Any] = {}
        for fmt in ("openai_compatible", "claude_messages", "canonical"):
            out[fmt] = lab.tool_definitions(provider_format=fmt)
            out[fmt + " all"] = lab.tool_definitions(
                {"tools": {"allow": EVERY_TOOL}, "skills": {"legacyRunScript": True}},
                provider_format=fmt)
        run = lab.start_run(chat_id="c", legacy_run_script=True)
        out["run.tools"] = [[s.id, s.title, s.description, s.schema, dict(s.annotations),
                             s.mutating, list(s.arguments), s.compat] for s in run.tools]
        out["registry"] = [s.id for s in lab.tools]
    return out


def test_the_tools_a_model_is_shown_are_unchanged(tmp_path: Path) -> None:
    got = json.dumps(shown(str(tmp_path / "lab")), indent=1)
    assert got == EXPECTED.read_text(encoding="utf-8")


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as lab_dir:
        Path(sys.argv[1]).write_text(json.dumps(shown(lab_dir), indent=1), encoding="utf-8")
