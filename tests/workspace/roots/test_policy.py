"""Roots and policy (docs/workspace.md) and the scoped view."""

from __future__ import annotations

from pathlib import Path

import pytest

from tavernlab.errors import AccessDenied, InvalidData, NotFound
from tavernlab.host import Lab
from tavernlab.paths import WorkspacePath
from tavernlab.workspace.roots import RESERVED_ROOT_NAMES, Access, Policy
from tavernlab.workspace.scope import MutationTracker, ScopedWorkspaceFs
from tavernlab.workspace.scope._scope import is_text_file
from tavernlab.workspace.storage import WorkspaceFs
from tavernlab.workspace.storage._fs import WriteGuard

HIDDEN = ("input/prompt_snapshot.json", "input", "invocations/x.json", "tasks/t.json",
          "agent-results/r.md", "model-responses/m.json", "tool-args/a.json", "run.json",
          "manifest.json", "events.jsonl", "output_extra/x", "checkpoints/c")


def P(text: str) -> WorkspacePath:
    """Parse a workspace path."""
    return WorkspacePath.parse(text)


@pytest.fixture
def scope(tmp_path: Path) -> ScopedWorkspaceFs:
    """A default-policy view over a run-like directory with hidden files in it."""
    fs = WorkspaceFs(tmp_path / "run")
    for root in ("output", "scratch", "plan", "summaries", "persist", "tool-results", "input",
                 "output_extra"):
        fs.create_dir(P(root), recursive=False)
    fs.write_text(P("input/prompt_snapshot.json"), "{}", WriteGuard.unchecked())
    fs.write_text(P("run.json"), "{}", WriteGuard.unchecked())
    fs.write_text(P("output_extra/x"), "x", WriteGuard.unchecked())
    fs.write_text(P("tool-results/x.json"), "{}", WriteGuard.unchecked())
    return ScopedWorkspaceFs(fs, Policy.from_profile())


# --- the effective policy -------------------------------------------------------------------


def test_default_policy() -> None:
    policy = Policy.from_profile()
    assert policy.visible_roots == ("output", "persist", "plan", "scratch", "skills",
                                    "summaries", "tool-results")
    assert policy.writable_roots == ("output", "persist", "plan", "scratch", "summaries")


def test_runtime_adds_read_only_roots_sorts_and_deduplicates() -> None:
    policy = Policy.from_profile(["scratch", "output", "scratch", "tool-results", "skills"],
                                 ["scratch", "skills", "tool-results", "scratch"])
    assert policy.visible_roots == ("output", "scratch", "skills", "tool-results")
    assert policy.writable_roots == ("scratch",)


def test_acceptance_1_hidden_run_files() -> None:
    policy = Policy.from_profile()
    path = P("input/prompt_snapshot.json")
    assert not policy.is_visible(path)
    assert not policy.is_writable(path)
    for hidden in HIDDEN:
        assert not policy.is_visible(P(hidden)), hidden
        assert not policy.is_writable(P(hidden)), hidden


def test_acceptance_2_roots_are_visible_but_only_children_writable() -> None:
    policy = Policy.from_profile()
    assert policy.is_visible(P("output"))
    assert not policy.is_writable(P("output"))
    assert policy.is_writable(P("output/a.md"))
    assert policy.is_writable(P("output/deep/er/a.md"))
    assert policy.is_visible(None)
    assert not policy.is_writable(None)


def test_acceptance_3_roots_match_by_segment() -> None:
    policy = Policy.from_profile()
    assert not policy.is_visible(P("output_extra/x"))
    assert not policy.is_visible(P("outputs"))
    assert not policy.is_writable(P("output_extra/x"))
    assert not policy.is_visible(P("Output/x"))


def test_acceptance_4_skills_and_tool_results_are_read_only_even_if_listed() -> None:
    for policy in (Policy.from_profile(),
                   Policy.from_profile(["output", "skills", "tool-results"],
                                       ["output", "skills", "tool-results"])):
        for path in ("skills/x/SKILL.md", "tool-results/x.json", "skills", "tool-results"):
            assert policy.is_visible(P(path)), path
            assert not policy.is_writable(P(path)), path


@pytest.mark.parametrize("name", sorted(RESERVED_ROOT_NAMES))
def test_reserved_root_names_are_rejected(name: str) -> None:
    with pytest.raises(InvalidData) as info:
        Policy.from_profile([name, "output"], ["output"])
    assert info.value.message == f"Workspace root name is reserved: {name}"
    with pytest.raises(InvalidData):
        Policy.from_profile(["output", name], ["output", name])


def test_reserved_list_is_the_chosen_one() -> None:
    assert frozenset({
        "runs", "input", "invocations", "tasks", "agent-results", "model-responses",
        "tool-args", "checkpoints", "events.jsonl", "manifest.json", "run.json",
        "journal.jsonl", "js-jobs"}) == (
        RESERVED_ROOT_NAMES)


@pytest.mark.parametrize(("root", "message"), [
    ("output/sub", "Workspace root must be a single path segment: output/sub"),
    ("../output", "Workspace path cannot contain .."),
    ("/output", "Workspace path must be relative"),
    ("", "Workspace path cannot be empty"),
    (".", "Workspace path cannot be empty"),
])
def test_roots_must_be_single_segments(root: str, message: str) -> None:
    with pytest.raises(InvalidData) as info:
        Policy.from_profile([root], [])
    assert info.value.message == message


def test_root_lists_are_lists() -> None:
    """A bare string would otherwise be read as one root per character."""
    with pytest.raises(InvalidData, match="must be a list of root names"):
        Policy.from_profile("output", ["output"])
    with pytest.raises(InvalidData, match="must be a list of root names"):
        Policy.from_profile(["output"], "output")


def test_writable_roots_must_be_visible() -> None:
    """tavernlab choice: a writable root missing from the visible list is a bad Profile."""
    with pytest.raises(InvalidData, match="must also be visible: plan"):
        Policy.from_profile(["output"], ["output", "plan"])


def test_a_bad_profile_starts_no_run(lab: Lab) -> None:
    before = sorted(p.relative_to(lab.root) for p in lab.root.rglob("*"))
    for roots in (["input", "output"], ["output/x"], ["../x"]):
        with pytest.raises(InvalidData):
            lab.start_run(chat_id="alice", profile={
                "workspace": {"visibleRoots": roots, "writableRoots": []}})
    assert sorted(p.relative_to(lab.root) for p in lab.root.rglob("*")) == before


# --- the scoped view ----------------------------------------------------------------------------


def test_the_logical_root_lists_exactly_the_visible_roots(scope: ScopedWorkspaceFs) -> None:
    entries = scope.read_dir(None, None)
    assert [e.path for e in entries] == ["output", "persist", "plan", "scratch", "skills",
                                         "summaries", "tool-results"]
    assert all(e.metadata.kind == "directory" for e in entries)
    assert len(scope.read_dir(None, 7)) == 7
    with pytest.raises(InvalidData, match="exceeds 6 entries"):
        scope.read_dir(None, 6)
    assert scope.metadata(None).kind == "directory"


@pytest.mark.parametrize("hidden", ["input/prompt_snapshot.json", "run.json", "output_extra/x"])
def test_hidden_paths_are_denied_and_unchanged(scope: ScopedWorkspaceFs, hidden: str) -> None:
    run_dir = scope.fs.directory
    path = P(hidden)
    for read in (lambda: scope.read_file(path, None), lambda: scope.read_text(path),
                 lambda: scope.metadata(path), lambda: scope.read_dir(path, None),
                 lambda: scope.list_files(path, 2, 10), lambda: scope.digest(path),
                 lambda: scope.copy_file(path, P("scratch/leak"))):
        with pytest.raises(AccessDenied) as info:
            read()
        assert (info.value.code, info.value.operation) == ("workspace.path_not_visible",
                                                            "read")
        assert info.value.message == f"`{hidden}` is not readable for this task."
    for write in (lambda: scope.write_file(path, b"x", WriteGuard.unchecked()),
                  lambda: scope.write_text(path, "x", WriteGuard.unchecked()),
                  lambda: scope.append_file(path, b"x"),
                  lambda: scope.append_text(path, "x"),
                  lambda: scope.remove(path, recursive=True),
                  lambda: scope.create_dir(path, recursive=True),
                  lambda: scope.rename(path, P("scratch/moved")),
                  lambda: scope.rename(P("scratch"), path)):
        with pytest.raises(AccessDenied) as info:
            write()
        assert info.value.code == "workspace.path_not_writable"
    assert scope.exists(path) is False
    assert (run_dir / "input/prompt_snapshot.json").read_text() == "{}"
    assert (run_dir / "run.json").read_text() == "{}"
    assert (run_dir / "output_extra/x").read_text() == "x"
    assert not (run_dir / "scratch/leak").exists()
    assert not (run_dir / "scratch/moved").exists()


def test_acceptance_5_copying_a_hidden_file_out_leaves_nothing(scope: ScopedWorkspaceFs) -> None:
    """The storage side of section 3 Acceptance 5 (the shell's `cp` goes through this)."""
    with pytest.raises(AccessDenied):
        scope.copy_file(P("input/prompt_snapshot.json"), P("scratch/leaked.json"))
    assert not scope.exists(P("scratch/leaked.json"))


def test_roots_and_read_only_roots_refuse_writes(scope: ScopedWorkspaceFs) -> None:
    for path in ("output", "scratch", "tool-results/x.json", "tool-results/new.json", "skills",
                 "skills/x/SKILL.md"):
        with pytest.raises(AccessDenied) as info:
            scope.write_text(P(path), "x", WriteGuard.unchecked())
        assert info.value.message == f"`{path}` is not writable for this task."
    with pytest.raises(AccessDenied):
        scope.remove(P("output"), recursive=True)
    with pytest.raises(AccessDenied):
        scope.rename(P("output"), P("scratch/output"))
    assert scope.read_text(P("tool-results/x.json")).text == "{}"
    assert scope.fs.exists(P("output"))


def test_exists(scope: ScopedWorkspaceFs) -> None:
    assert scope.exists(None)
    assert scope.exists(P("output"))
    assert scope.exists(P("skills"))
    assert scope.exists(P("tool-results/x.json"))
    assert not scope.exists(P("output/none.md"))
    assert not scope.exists(P("skills/none/SKILL.md"))
    assert not scope.exists(P("run.json"))  # present on disk, hidden from the model
    assert not scope.exists(P("input"))
    assert scope.fs.exists(P("run.json"))


def test_copy_needs_a_visible_source_and_a_writable_target(scope: ScopedWorkspaceFs) -> None:
    scope.copy_file(P("tool-results/x.json"), P("scratch/x.json"))
    assert scope.read_text(P("scratch/x.json")).text == "{}"
    with pytest.raises(AccessDenied) as info:
        scope.copy_file(P("scratch/x.json"), P("tool-results/y.json"))
    assert info.value.operation == "write"
    assert not scope.fs.exists(P("tool-results/y.json"))


def test_the_empty_skills_mount(scope: ScopedWorkspaceFs) -> None:
    assert scope.metadata(P("skills")).kind == "directory"
    assert scope.read_dir(P("skills"), None) == []
    assert scope.list_files(P("skills"), 2, 10).entries == []
    with pytest.raises(NotFound, match="Skill is not available: skills/demo"):
        scope.read_file(P("skills/demo/SKILL.md"), None)
    with pytest.raises(AccessDenied):
        scope.copy_file(P("scratch/x"), P("skills/demo/x"))


def test_a_narrow_profile_filters_the_view(tmp_path: Path) -> None:
    fs = WorkspaceFs(tmp_path / "run")
    for root in ("output", "scratch", "tool-results"):
        fs.create_dir(P(root), recursive=False)
    fs.write_text(P("output/main.md"), "secret", WriteGuard.unchecked())
    view = ScopedWorkspaceFs(fs, Policy.from_profile(["scratch"], ["scratch"]))
    assert [e.path for e in view.read_dir(None, None)] == ["scratch", "skills", "tool-results"]
    with pytest.raises(AccessDenied):
        view.read_text(P("output/main.md"))
    with pytest.raises(AccessDenied):
        view.write_text(P("output/x.md"), "x", WriteGuard.unchecked())
    view.write_text(P("scratch/x.md"), "x", WriteGuard.unchecked())
    assert not view.exists(P("output/main.md"))


def test_the_check_hook_runs_before_every_operation(scope: ScopedWorkspaceFs) -> None:
    calls: list[str] = []
    view = scope.derive(check=lambda: calls.append("check"))
    view.write_text(P("scratch/a.md"), "a", WriteGuard.unchecked())
    view.read_text(P("scratch/a.md"))
    view.metadata(P("scratch"))
    assert len(calls) == 3
    assert view.tracker is scope.tracker
    fresh = MutationTracker()
    assert scope.derive(tracker=fresh).tracker is fresh


# --- text-mutation tracking -------------------------------------------------------------------


@pytest.mark.parametrize(("name", "text"), [
    ("a.md", True), ("a.MD", True), ("a.Markdown", True), ("a.txt", True), ("a.TEXT", True),
    ("a.tar.md", True), ("..md", True),
    ("a.json", False), ("a.mdx", False), ("md", False), ("a.", False), ("a", False),
    ("a.md.bak", False), (".md", False), (".txt", False),
])
def test_text_files_by_extension(name: str, text: bool) -> None:
    """Extensions as Rust's ``Path::extension`` and Python's ``suffix`` see them: a dotfile
    such as ``.md`` has no extension."""
    assert is_text_file(f"scratch/{name}") is text
    assert is_text_file(P(f"scratch/{name}")) is text


@pytest.fixture
def tracked(scope: ScopedWorkspaceFs) -> ScopedWorkspaceFs:
    """A view with a fresh tracker."""
    return scope.derive(tracker=MutationTracker())


def _state(view: ScopedWorkspaceFs) -> tuple[str | None, bool]:
    return view.tracker.candidate, view.tracker.changed


def test_writes_appends_and_copies_set_the_candidate(tracked: ScopedWorkspaceFs) -> None:
    tracked.write_text(P("scratch/data.json"), "{}", WriteGuard.unchecked())
    assert _state(tracked) == (None, False)
    tracked.write_text(P("scratch/a.md"), "a", WriteGuard.unchecked())
    assert _state(tracked) == ("scratch/a.md", True)
    tracked.write_file(P("scratch/b.TXT"), b"b", WriteGuard.unchecked())
    assert _state(tracked) == ("scratch/b.TXT", True)
    tracked.write_text(P("scratch/data.json"), "[]", WriteGuard.unchecked())
    assert _state(tracked) == ("scratch/b.TXT", True)
    tracked.append_text(P("plan/p.markdown"), "p")
    assert _state(tracked) == ("plan/p.markdown", True)
    tracked.append_file(P("plan/q.text"), b"q")
    assert _state(tracked) == ("plan/q.text", True)
    tracked.copy_file(P("scratch/a.md"), P("output/c.md"))
    assert _state(tracked) == ("output/c.md", True)
    tracked.copy_file(P("scratch/a.md"), P("output/c.json"))
    assert _state(tracked) == ("output/c.md", True)
    assert tracked.tracker.touched == {"scratch/data.json", "scratch/a.md", "scratch/b.TXT",
                                       "plan/p.markdown", "plan/q.text", "output/c.md",
                                       "output/c.json"}


def test_failed_operations_do_not_track(tracked: ScopedWorkspaceFs) -> None:
    tracked.write_text(P("scratch/a.md"), "a", WriteGuard.unchecked())
    tracked.tracker.reset()
    for failing in (
        lambda: tracked.write_text(P("scratch/a.md"), "b", WriteGuard.must_not_exist()),
        lambda: tracked.write_text(P("output_extra/b.md"), "b", WriteGuard.unchecked()),
        lambda: tracked.copy_file(P("scratch/none.md"), P("scratch/c.md")),
        lambda: tracked.rename(P("scratch/none.md"), P("scratch/d.md")),
        lambda: tracked.remove(P("scratch/none.md"), recursive=False),
    ):
        with pytest.raises(Exception):  # noqa: B017 - each raises its own storage error
            failing()
    assert _state(tracked) == (None, False)
    assert tracked.tracker.touched == set()


def test_removing_the_candidate_or_its_directory_clears_it(tracked: ScopedWorkspaceFs) -> None:
    tracked.write_text(P("scratch/d/a.md"), "a", WriteGuard.unchecked())
    tracked.write_text(P("scratch/other.json"), "{}", WriteGuard.unchecked())
    tracked.remove(P("scratch/other.json"), recursive=False)
    assert _state(tracked) == ("scratch/d/a.md", True)
    tracked.tracker.changed = False
    tracked.remove(P("scratch/d/a.md"), recursive=False)
    assert _state(tracked) == (None, True)
    tracked.write_text(P("scratch/d/b.md"), "b", WriteGuard.unchecked())
    tracked.tracker.changed = False
    tracked.remove(P("scratch/d"), recursive=True)
    assert _state(tracked) == (None, True)
    # a directory whose name merely starts with the candidate's is not its parent
    tracked.write_text(P("scratch/e/c.md"), "c", WriteGuard.unchecked())
    tracked.create_dir(P("scratch/e2"), recursive=False)
    tracked.remove(P("scratch/e2"), recursive=False)
    assert _state(tracked) == ("scratch/e/c.md", True)


def test_rename_rules(tracked: ScopedWorkspaceFs) -> None:
    # Section 10 Acceptance 1: write main.md, rename it to Moved.MD, write a JSON file
    tracked.write_text(P("output/main.md"), "m", WriteGuard.unchecked())
    tracked.rename(P("output/main.md"), P("output/Moved.MD"))
    tracked.write_text(P("output/data.json"), "{}", WriteGuard.unchecked())
    assert _state(tracked) == ("output/Moved.MD", True)
    # a text target becomes the candidate even when the source was not the candidate
    tracked.write_text(P("scratch/notes.json"), "n", WriteGuard.unchecked())
    tracked.rename(P("scratch/notes.json"), P("scratch/notes.txt"))
    assert _state(tracked) == ("scratch/notes.txt", True)
    # an unrelated non-text rename leaves it alone
    tracked.rename(P("output/data.json"), P("output/data2.json"))
    assert _state(tracked) == ("scratch/notes.txt", True)
    # the candidate renamed to a non-text name is dropped
    tracked.tracker.changed = False
    tracked.rename(P("scratch/notes.txt"), P("scratch/notes.bak"))
    assert _state(tracked) == (None, True)
    # Section 10 Acceptance 2: a directory with the candidate moves, carrying it along
    tracked.tracker.reset()
    tracked.write_text(P("scratch/draft/final.md"), "f", WriteGuard.unchecked())
    tracked.rename(P("scratch/draft"), P("scratch/finalized"))
    assert _state(tracked) == ("scratch/finalized/final.md", True)
    assert tracked.read_text(P("scratch/finalized/final.md")).text == "f"
    # moving a directory that does not hold the candidate changes nothing
    tracked.create_dir(P("plan/empty"), recursive=False)
    tracked.tracker.changed = False
    tracked.rename(P("plan/empty"), P("plan/moved"))
    assert _state(tracked) == ("scratch/finalized/final.md", False)
    assert tracked.tracker.touched >= {"plan/empty", "plan/moved"}


def test_a_directory_with_a_text_name_is_not_a_text_file(tracked: ScopedWorkspaceFs) -> None:
    tracked.write_text(P("scratch/a.md"), "a", WriteGuard.unchecked())
    tracked.create_dir(P("scratch/d"), recursive=False)
    tracked.rename(P("scratch/d"), P("scratch/notes.md"))
    assert _state(tracked) == ("scratch/a.md", True)
    tracked.write_text(P("scratch/notes.md/x.txt"), "x", WriteGuard.unchecked())
    tracked.rename(P("scratch/notes.md"), P("scratch/final.txt"))
    assert _state(tracked) == ("scratch/final.txt/x.txt", True)


def test_the_candidate_can_move_across_roots(tracked: ScopedWorkspaceFs) -> None:
    tracked.write_text(P("scratch/d/x.txt"), "x", WriteGuard.unchecked())
    tracked.rename(P("scratch/d"), P("output/d"))
    assert _state(tracked) == ("output/d/x.txt", True)


def test_clear_and_reset() -> None:
    tracker = MutationTracker()
    tracker.wrote(P("scratch/a.md"))
    tracker.clear_candidate()
    assert (tracker.candidate, tracker.changed, tracker.touched) == (None, False, {"scratch/a.md"})
    tracker.reset()
    assert tracker.touched == set()


@pytest.mark.parametrize(("path", "directory", "expected"), [
    (None, True, Access("read_only", False)),
    ("output", True, Access("read_only", True)),
    ("output/a.md", False, Access("writable", False)),
    ("output/sub", True, Access("writable", True)),
    ("tool-results", True, Access("read_only", False)),
    ("tool-results/inv/x.json", False, Access("read_only", False)),
    ("skills/demo", True, Access("read_only", False)),
    ("input/prompt_snapshot.json", False, Access("hidden", False)),
    ("run.json", False, Access("hidden", False)),
    ("plan", True, Access("hidden", False)),
])
def test_access_is_one_answer_per_path(path: str | None, directory: bool,
                                       expected: Access) -> None:
    policy = Policy.from_profile(["output", "scratch"], ["output"])
    parsed = None if path is None else WorkspacePath.parse(path)
    access = policy.access(parsed, directory=directory)
    assert access == expected
    assert access.visible == policy.is_visible(parsed)
    assert access.writable == policy.is_writable(parsed)


def test_who_set_the_candidate(tracked: ScopedWorkspaceFs) -> None:
    """The tracker records the acting call on every change that sets or moves the candidate
    (the auto-commit's callId); other changes leave it alone."""
    tracker = tracked.tracker
    assert (tracker.call_id, tracker.candidate_call_id) == ("host", "host")
    with tracker.acting("w1"):
        tracked.write_text(P("scratch/d/a.md"), "a", WriteGuard.unchecked())
    with tracker.acting("j1"):
        tracked.write_text(P("scratch/b.json"), "{}", WriteGuard.unchecked())
        tracked.read_text(P("scratch/d/a.md"))
        tracked.remove(P("scratch/b.json"), False)
    assert (tracker.candidate, tracker.candidate_call_id, tracker.call_id) == (
        "scratch/d/a.md", "w1", "host")
    with tracker.acting("mv"):
        tracked.rename(P("scratch/d"), P("output/moved"))  # a directory move carries it
    assert (tracker.candidate, tracker.candidate_call_id) == ("output/moved/a.md", "mv")
    call = MutationTracker(candidate=tracker.candidate)
    call.wrote(P("output/c.txt"))
    with tracker.acting("s1"):
        tracker.take_candidate(call)
    assert (tracker.candidate, tracker.changed, tracker.candidate_call_id) == (
        "output/c.txt", True, "s1")
    with pytest.raises(RuntimeError), tracker.acting("boom"):
        raise RuntimeError
    assert tracker.call_id == "host"
    tracker.reset()
    assert (tracker.candidate, tracker.changed, tracker.call_id) == (None, False, "host")
