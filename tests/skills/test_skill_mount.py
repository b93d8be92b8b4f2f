"""The effective skill set (8.8) and the projected ``skills/`` mount (section 9), read through
a real ``ScopedWorkspaceFs`` over a real ``WorkspaceFs``."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tavernlab.errors import InvalidData, NotFound, PathIsDirectory
from tavernlab.paths import WorkspacePath
from tavernlab.skills import (
    BoundSkillsMount,
    SkillBinding,
    SkillRepository,
    SkillScopeRefs,
    bind_skills,
    render_skill_prompt,
    resolve_effective_skills,
    skill_list,
)
from tavernlab.workspace.macros import FrozenMacros
from tavernlab.workspace.roots import Profile
from tavernlab.workspace.scope import ScopedWorkspaceFs
from tavernlab.workspace.scope._scope import Policy
from tavernlab.workspace.storage import WorkspaceFs

P = WorkspacePath.parse
SNAPSHOT = {"macroContext": {"names": {"char": "Frozen Alice", "user": "Bob"}}}
STYLE_MD = ("---\nname: style\ndescription: Writes as {{char}}.\n---\n"
            "Speak as {{char}} to {{user}}.\n")
RUN_JS = "console.log('{{char}}');\n"


@pytest.fixture
def installed(repo: SkillRepository, make_skill) -> SkillRepository:
    """``style`` in global and (different text) in character:alice, ``notes`` in global."""
    repo.install(make_skill("style", skill_md=STYLE_MD, files={
        "scripts/run.js": RUN_JS, "references/tone.md": "Tone of {{char}}.\n",
        "assets/raw.bin": b"{{char}}\xff\xfe"}))
    repo.install(make_skill("style", folder="style-alice", skill_md=STYLE_MD.replace(
        "Speak as", "Whisper as"), files={"scripts/run.js": RUN_JS}), scope="character:alice")
    repo.install(make_skill("notes", description="Takes notes."))
    return repo


def _view(tmp_path: Path, bindings, macros: FrozenMacros | None = None,
          fs: WorkspaceFs | None = None) -> ScopedWorkspaceFs:
    storage = fs if fs is not None else WorkspaceFs(tmp_path / "run")
    mount = BoundSkillsMount(bindings, macros or FrozenMacros.from_snapshot(SNAPSHOT))
    return ScopedWorkspaceFs(storage, Policy.from_profile(), skills=mount)


# --- 8.8 the effective set -------------------------------------------------------------------


def test_acceptance_4_later_scope_wins(installed: SkillRepository) -> None:
    plain = resolve_effective_skills(installed)
    assert list(plain) == ["notes", "style"]
    assert plain["style"].scope.key == "global"
    alice = resolve_effective_skills(installed, SkillScopeRefs(character="alice"))
    assert alice["style"].scope.key == "character:alice"
    assert alice["style"].package_dir == installed.package_dir("style", "character:alice")
    assert alice["notes"].scope.key == "global"
    other = resolve_effective_skills(installed, SkillScopeRefs(character="bob", preset="p"))
    assert other["style"].scope.key == "global"


def test_acceptance_7_deny_wins_over_star(installed: SkillRepository) -> None:
    assert list(resolve_effective_skills(installed, visible="*", deny=["style"])) == ["notes"]
    assert list(resolve_effective_skills(installed, visible=["*"], deny=["notes"])) == ["style"]
    assert list(resolve_effective_skills(installed, visible=["style"])) == ["style"]
    assert list(resolve_effective_skills(installed, visible=["style"], deny=["style"])) == []


def test_prompt_lists_each_effective_skill_once(installed: SkillRepository) -> None:
    bindings = resolve_effective_skills(installed, SkillScopeRefs(character="alice"))
    prompt = render_skill_prompt(bindings)
    for name, description in [("style", "Writes as {{char}}."), ("notes", "Takes notes.")]:
        line = f"- {name}: {description} (skills/{name}/SKILL.md)"
        assert prompt.count(line) == 1
        assert prompt.count(f"skills/{name}/SKILL.md") == 1
    assert prompt.index("- notes") < prompt.index("- style")
    assert render_skill_prompt({}) == ""
    content, structured = skill_list(bindings)
    assert content == ("notes: Takes notes. (skills/notes/SKILL.md)\n"
                       "style: Writes as {{char}}. (skills/style/SKILL.md)")
    assert structured == {"skills": [
        {"name": "notes", "description": "Takes notes.", "path": "skills/notes/SKILL.md"},
        {"name": "style", "description": "Writes as {{char}}.",
         "path": "skills/style/SKILL.md"}]}


# --- section 9 through the scoped view -------------------------------------------------------


def test_acceptance_1_parent_and_child_read_their_own_binding(installed, tmp_path) -> None:
    fs = WorkspaceFs(tmp_path / "run")
    parent = _view(tmp_path, resolve_effective_skills(installed), fs=fs)
    child = _view(tmp_path, resolve_effective_skills(installed, SkillScopeRefs(character="alice")),
                  fs=fs)
    assert parent.read_text(P("skills/style/SKILL.md")).text == (
        "---\nname: style\ndescription: Writes as Frozen Alice.\n---\n"
        "Speak as Frozen Alice to Bob.\n")
    assert child.read_text(P("skills/style/SKILL.md")).text == (
        "---\nname: style\ndescription: Writes as Frozen Alice.\n---\n"
        "Whisper as Frozen Alice to Bob.\n")
    assert parent.read_text(P("skills/style/references/tone.md")).text == "Tone of Frozen Alice.\n"


def test_acceptance_2_scripts_and_binary_files_are_raw(installed, tmp_path) -> None:
    view = _view(tmp_path, resolve_effective_skills(installed))
    assert view.read_file(P("skills/style/scripts/run.js"), None) == RUN_JS.encode()
    assert view.read_file(P("skills/style/assets/raw.bin"), None) == b"{{char}}\xff\xfe"


def test_acceptance_3_unknown_and_directories(installed, tmp_path) -> None:
    view = _view(tmp_path, resolve_effective_skills(installed))
    with pytest.raises(NotFound) as caught:
        view.read_file(P("skills/unknown/SKILL.md"), None)
    assert caught.value.message == "Skill is not available: skills/unknown"
    for path in ("skills", "skills/style", "skills/style/scripts"):
        with pytest.raises(PathIsDirectory) as is_dir:
            view.read_file(P(path), None)
        assert is_dir.value.code == "workspace.path_is_directory"
    with pytest.raises(NotFound, match=r"^workspace path `skills/style/missing.md` was not "):
        view.read_file(P("skills/style/missing.md"), None)
    assert not view.exists(P("skills/unknown"))
    assert view.exists(P("skills/style/SKILL.md"))


def test_acceptance_4_no_bindings_is_an_empty_directory(tmp_path) -> None:
    view = _view(tmp_path, [])
    assert view.read_dir(P("skills"), None) == []
    assert view.metadata(P("skills")).is_dir
    assert view.list_files(P("skills"), 5, 100).entries == []


def test_listings_and_sizes_are_projected(installed, tmp_path) -> None:
    view = _view(tmp_path, resolve_effective_skills(installed))
    top = view.read_dir(P("skills"), None)
    assert [(e.path, e.metadata.kind) for e in top] == [("skills/notes", "directory"),
                                                       ("skills/style", "directory")]
    listing = {e.path: e.metadata for e in view.read_dir(P("skills/style"), None)}
    assert sorted(listing) == ["skills/style/SKILL.md", "skills/style/assets",
                               "skills/style/references", "skills/style/scripts"]
    projected = view.read_file(P("skills/style/SKILL.md"), None)
    assert listing["skills/style/SKILL.md"].bytes == len(projected) != len(STYLE_MD)
    assert view.metadata(P("skills/style/SKILL.md")).bytes == len(projected)
    assert view.metadata(P("skills/style/scripts/run.js")).bytes == len(RUN_JS)
    with pytest.raises(InvalidData) as too_big:
        view.read_file(P("skills/style/SKILL.md"), len(STYLE_MD))  # raw fits, projected not
    assert too_big.value.message == (
        f"Workspace read exceeds {len(STYLE_MD)} bytes: skills/style/SKILL.md")
    files = view.list_files(P("skills"), 10, 100)
    assert "skills/style/scripts/run.js" in [e.path for e in files.entries]
    with pytest.raises(InvalidData, match=r"^Workspace directory exceeds 1 entries: skills$"):
        view.read_dir(P("skills"), 1)


def test_copy_out_of_skills_writes_projected_bytes(installed, tmp_path) -> None:
    view = _view(tmp_path, resolve_effective_skills(installed))
    view.create_dir(P("scratch/x"), recursive=True)
    view.copy_file(P("skills/style/SKILL.md"), P("scratch/style.md"))
    assert (tmp_path / "run" / "scratch" / "style.md").read_text() == (
        view.read_text(P("skills/style/SKILL.md")).text)
    assert "Frozen Alice" in (tmp_path / "run" / "scratch" / "style.md").read_text()
    assert view.tracker.candidate == "scratch/style.md"


def test_without_host_context_macros_stay_literal(installed, tmp_path) -> None:
    view = _view(tmp_path, resolve_effective_skills(installed), FrozenMacros.from_snapshot(None))
    assert "Speak as {{char}} to {{user}}." in view.read_text(P("skills/style/SKILL.md")).text


def test_binding_is_fixed_and_never_falls_back(installed, tmp_path) -> None:
    bindings = resolve_effective_skills(installed, SkillScopeRefs(character="alice"))
    view = _view(tmp_path, bindings)
    alice_dir = installed.package_dir("style", "character:alice")
    (alice_dir / "SKILL.md").write_text("---\nname: style\ndescription: D\n---\nNew {{char}}\n")
    assert view.read_text(P("skills/style/SKILL.md")).text.endswith("New Frozen Alice\n")
    shutil.rmtree(alice_dir)
    with pytest.raises(NotFound) as caught:
        view.read_file(P("skills/style/SKILL.md"), None)
    assert caught.value.message == ("Bound skill package character:alice/style is no longer "
                                    "installed: skills/style")
    assert (installed.package_dir("style") / "SKILL.md").is_file()  # global one still there


def test_mount_refuses_duplicate_bindings(installed) -> None:
    binding = resolve_effective_skills(installed)["style"]
    with pytest.raises(ValueError, match=r"bound twice"):
        BoundSkillsMount([binding, binding], FrozenMacros.from_snapshot(None))
    assert isinstance(binding, SkillBinding)


def test_bind_skills_for_an_invocation(installed, tmp_path) -> None:
    macros = FrozenMacros.from_snapshot(SNAPSHOT)
    profile = Profile(skills={"visible": "*", "deny": ["notes"]})
    bound, mount = bind_skills(installed, profile, scopes={"character": "alice"}, macros=macros)
    assert list(bound) == ["style"]
    assert bound["style"].scope.key == "character:alice"
    view = ScopedWorkspaceFs(WorkspaceFs(tmp_path / "run"), profile.policy(), skills=mount)
    assert view.read_text(P("skills/style/SKILL.md")).text.startswith("---\nname: style\n")
    only, _ = bind_skills(installed, Profile(), names=["notes"], macros=macros)
    assert list(only) == ["notes"]
    with pytest.raises(NotFound) as caught:
        bind_skills(installed, profile, names=["notes"], macros=macros)
    assert caught.value.message == "Skill is not available: skills/notes"
