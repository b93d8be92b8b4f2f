"""The read-only ``skills/`` mount through the shell (12.9) and internal storage faults
(spec/shell.md 4.4: a fault that is not an ordinary file error aborts the tool call)."""

from __future__ import annotations

import pytest

from tavernlab.errors import NotFound, PathIsDirectory
from tavernlab.paths import WorkspacePath
from tavernlab.workspace.fs import WorkspaceDirectoryEntry, WorkspaceMetadata
from tavernlab.workspace.scope import ScopedWorkspaceFs

from .conftest import Workspace

RAW = b"# Style\nWrite like {{char}}.\n"


class ProjectingSkills:
    """A one-skill mount that serves ``skills/style/SKILL.md`` with ``{{char}}`` expanded, the
    way the skill repository projects macros (its raw bytes are never visible)."""

    def metadata(self, path: WorkspacePath) -> WorkspaceMetadata:
        """``skills`` and ``skills/style`` are directories, the SKILL.md a file."""
        if path.text in ("skills", "skills/style"):
            return WorkspaceMetadata("directory", 0)
        if path.text == "skills/style/SKILL.md":
            return WorkspaceMetadata("file", len(self.read_file(path, None)))
        raise NotFound(f"workspace path `{path.text}` was not found.", path=path.text)

    def read_dir(self, path: WorkspacePath, max_entries: int | None
                 ) -> list[WorkspaceDirectoryEntry]:
        """One level of the mount."""
        child = {"skills": "skills/style", "skills/style": "skills/style/SKILL.md"}[path.text]
        return [WorkspaceDirectoryEntry(child, self.metadata(WorkspacePath(child)))]

    def read_file(self, path: WorkspacePath, max_bytes: int | None) -> bytes:
        """The projected SKILL.md."""
        if path.text != "skills/style/SKILL.md":
            raise PathIsDirectory(path.text)
        return RAW.replace(b"{{char}}", b"Alice")


class BrokenRepository(ProjectingSkills):
    """A skill repository whose storage is broken: reading a file is not a file error."""

    def read_file(self, path: WorkspacePath, max_bytes: int | None) -> bytes:
        """Fail the way a corrupted repository does."""
        raise RuntimeError("skill repository index is corrupted")


def test_copy_out_of_skills_writes_the_projected_text(ws: Workspace) -> None:
    # 12.9
    scope = ScopedWorkspaceFs(ws.fs, ws.scope.policy, skills=ProjectingSkills(),
                              tracker=ws.scope.tracker)
    result = ws.shell("cp /skills/style/SKILL.md /scratch/style.md; ls -R /skills; "
                      "echo x > /skills/style/new.md", scope=scope)
    assert ws.read("scratch/style.md") == "# Style\nWrite like Alice.\n"
    assert result.stdout == "/skills:\nstyle\n\n/skills/style:\nSKILL.md\n"
    assert "`skills/style/new.md` is not writable for this task." in result.stderr


def test_a_storage_fault_aborts_the_call_and_stops_the_interpreter(ws: Workspace) -> None:
    scope = ScopedWorkspaceFs(ws.fs, ws.scope.policy, skills=BrokenRepository(),
                              tracker=ws.scope.tracker)
    with pytest.raises(RuntimeError, match="skill repository index is corrupted"):
        ws.shell("cat /skills/style/SKILL.md; echo after > /scratch/after.txt", scope=scope)
    assert not ws.exists("scratch/after.txt")
    assert ws.shell("echo fine").stdout == "fine\n"
