"""Skills bound to runs: the effective set, the ``skills/`` mount through the tools, the
system prompt, and bindings that stay fixed when a run is reopened."""

from __future__ import annotations

from pathlib import Path

import pytest

from tavernlab.errors import NotFound
from tavernlab.host import Lab

CONTEXT = {"macroContext": {"names": {"user": "Mika", "char": "Frozen Alice"}}}


def make_skill(root: Path, name: str, description: str, body: str = "") -> Path:
    folder = root / f"src-{name}-{description.split()[0]}"
    (folder / "scripts").mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: {description}\n---\nWrite as {{{{char}}}}.\n{body}")
    (folder / "scripts" / "run.js").write_text("console.log('{{char}}')\n")
    return folder


@pytest.fixture
def lab(tmp_path: Path) -> Lab:
    lab = Lab(tmp_path / "lab")
    lab.skills.install(make_skill(tmp_path, "style", "Global style."), scope="global")
    lab.skills.install(make_skill(tmp_path, "notes", "Note taking."), scope="global")
    return lab


def test_bound_skills_are_projected_listed_and_in_the_system_prompt(lab: Lab) -> None:
    run = lab.start_run(chat_id="alice", context=CONTEXT)
    listing = run.call_tool("workspace.list_files", {"path": "skills", "depth": 1})
    assert listing.content == "skills/notes/\nskills/style/"
    read = run.call_tool("workspace.read_file", {"path": "skills/style/SKILL.md"})
    assert "Write as Frozen Alice." in read.content
    raw = run.call_tool("workspace.read_file", {"path": "skills/style/scripts/run.js"})
    assert "console.log('{{char}}')" in raw.content
    assert run.call_tool("workspace.read_file", {"path": "skills/style"}).error_code == \
        "workspace.path_is_directory"
    missing = run.call_tool("workspace.read_file", {"path": "skills/unknown/SKILL.md"})
    assert missing.error_code == "workspace.file_not_found"
    denied = run.call_tool("workspace.write_file", {"path": "skills/style/x.md",
                                                    "content": "x"})
    assert denied.error_code == "workspace.path_not_writable"
    prompt = run.system_prompt
    for name, description in (("notes", "Note taking."), ("style", "Global style.")):
        line = f"- {name}: {description} (skills/{name}/SKILL.md)"
        assert prompt.count(line) == 1
    assert prompt.count("skills/style/SKILL.md") == 1


def test_skill_names_narrow_the_set_and_the_policy_denies(lab: Lab) -> None:
    only = lab.start_run(chat_id="alice", skills=["style"])
    assert only.files("skills") == ["skills/style/SKILL.md", "skills/style/scripts/run.js"]
    denied = lab.start_run(chat_id="alice", profile={"skills": {"deny": ["style"]}})
    assert [p.split("/")[1] for p in denied.files("skills")] == ["notes", "notes"]
    with pytest.raises(NotFound, match="Skill is not available: skills/style"):
        lab.start_run(chat_id="alice", skills=["style"],
                      profile={"skills": {"visible": ["notes"]}})


def test_reopened_runs_keep_their_bindings(lab: Lab, tmp_path: Path) -> None:
    run = lab.start_run(chat_id="alice", context=CONTEXT,
                        skill_scopes={"character": "alice"})
    lab.skills.install(make_skill(tmp_path, "style", "Character style."),
                       scope="character:alice")
    fresh = lab.start_run(chat_id="alice", skill_scopes={"character": "alice"})
    assert "Character style." in fresh.system_prompt
    again = lab.open_run(run.id)
    assert "Global style." in again.system_prompt
    assert again.skills["style"].scope.kind == "global"
    assert "Write as Frozen Alice." in again.read("skills/style/SKILL.md")


def test_skill_list_and_read_exist_only_in_compatibility_mode(lab: Lab) -> None:
    plain = lab.start_run(chat_id="alice")
    assert plain.call_tool("skill.list", {}).error_code == "tool.unknown"
    run = lab.start_run(chat_id="alice", context=CONTEXT, legacy_run_script=True)
    listed = run.call_tool("skill.list", {})
    assert listed.content == ("notes: Note taking. (skills/notes/SKILL.md)\n"
                              "style: Global style. (skills/style/SKILL.md)")
    assert listed.structured["skills"][1] == {"name": "style", "description": "Global style.",
                                              "path": "skills/style/SKILL.md"}
    read = run.call_tool("skill.read", {"name": "style"})
    direct = run.call_tool("workspace.read_file", {"path": "skills/style/SKILL.md"})
    assert read.content == direct.content and "Frozen Alice" in read.content
    window = run.call_tool("skill.read", {"name": "style", "path": "scripts/run.js",
                                          "start_line": 1, "line_count": 1})
    assert window.structured["path"] == "skills/style/scripts/run.js"
    assert run.call_tool("skill.read", {"name": "style", "offset": 1}).error_code == \
        "tool.invalid_arguments"
    empty = lab.start_run(chat_id="alice", legacy_run_script=True,
                          profile={"skills": {"visible": []}})
    assert empty.call_tool("skill.list", {}).content == "No skills are available for this task."
