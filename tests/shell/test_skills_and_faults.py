"""The read-only ``skills/`` mount through the shell (12.9) and internal storage faults
(docs/shell.md: a fault that is not an ordinary file error aborts the tool call)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tavernlab.paths import WorkspacePath
from tavernlab.skills import BoundSkillsMount, SkillRepository, resolve_effective_skills
from tavernlab.workspace.macros import FrozenMacros
from tavernlab.workspace.scope import ScopedWorkspaceFs
from tavernlab.workspace.storage import WorkspaceDirectoryEntry, WorkspaceMetadata

from .conftest import Workspace

STYLE_MD = "---\nname: style\ndescription: Writes as {{char}}.\n---\nWrite like {{char}}.\n"
COUNT_JS = """const [path] = process.argv.slice(2);
import { workspace } from '@tauritavern/runtime';
const data = JSON.parse(workspace.readText(path));
console.log(JSON.stringify({ count: data.length, by: '{{char}}' }));
"""


def skills_view(ws: Workspace, tmp_path: Path) -> ScopedWorkspaceFs:
    """The main view with the ``style`` skill installed in a real repository and bound, its
    macros frozen with ``char = Alice``."""
    repo = SkillRepository(tmp_path / "lab")
    repo.install_files({"SKILL.md": STYLE_MD, "scripts/count.js": COUNT_JS})
    mount = BoundSkillsMount(resolve_effective_skills(repo), FrozenMacros.from_snapshot(
        {"macroContext": {"names": {"char": "Alice"}}}))
    return ScopedWorkspaceFs(ws.fs, ws.scope.policy, skills=mount, tracker=ws.scope.tracker)


class BrokenRepository:
    """A skills mount over a broken repository: every read is an internal fault, not a file
    error."""

    def metadata(self, path: WorkspacePath) -> WorkspaceMetadata:
        """Everything looks like a directory until it is read."""
        return WorkspaceMetadata("directory", 0)

    def read_dir(self, path: WorkspacePath, max_entries: int | None
                 ) -> list[WorkspaceDirectoryEntry]:
        """Empty."""
        return []

    def read_file(self, path: WorkspacePath, max_bytes: int | None) -> bytes:
        """Fail the way a corrupted repository does."""
        raise RuntimeError("skill repository index is corrupted")


def test_copy_out_of_skills_writes_the_projected_text(ws: Workspace, tmp_path: Path) -> None:
    # 12.9
    scope = skills_view(ws, tmp_path)
    result = ws.shell("cp /skills/style/SKILL.md /scratch/style.md; ls /skills /skills/style; "
                      "echo x > /skills/style/new.md", scope=scope)
    assert ws.read("scratch/style.md") == STYLE_MD.replace("{{char}}", "Alice")
    assert result.stdout == "/skills:\nstyle\n\n/skills/style:\nSKILL.md\nscripts\n"
    assert result.stderr == ("bash: line 1: /skills/style/new.md: `skills/style/new.md` is not "
                             "writable for this task.\n")
    assert (result.exit_code, ws.scope.tracker.candidate) == (1, None)


def test_a_skill_script_runs_from_the_read_only_mount(ws: Workspace, tmp_path: Path) -> None:
    # js-and-skills.md 6: scripts are served raw and run with `js /skills/<skill>/scripts/...`
    scope = skills_view(ws, tmp_path)
    (ws.dir / "scratch" / "items.json").write_text("[1, 2, 3]")
    result = ws.shell("js /skills/style/scripts/count.js scratch/items.json | jq -r .count; "
                      "cd /skills/style/scripts && node count.js scratch/items.json", scope=scope)
    assert result.content == 'Exit code: 0\n3\n{"count":3,"by":"{{char}}"}'


def test_a_storage_fault_aborts_the_call_and_stops_the_interpreter(ws: Workspace) -> None:
    scope = ScopedWorkspaceFs(ws.fs, ws.scope.policy, skills=BrokenRepository(),
                              tracker=ws.scope.tracker)
    with pytest.raises(RuntimeError, match="skill repository index is corrupted"):
        ws.shell("cat /skills/style/SKILL.md; echo after > /scratch/after.txt", scope=scope)
    assert not ws.exists("scratch/after.txt")
    assert ws.shell("echo fine").stdout == "fine\n"
