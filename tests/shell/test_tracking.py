"""Auto-commit candidate and resourceRefs bookkeeping of shell calls (docs/shell.md,
docs/workspace.md, "Mutation tracking and auto-commit")."""

from __future__ import annotations

from .conftest import Workspace


def test_a_successful_write_sets_the_round_candidate(ws: Workspace) -> None:
    result = ws.shell("printf 'a\\n' > /output/a.md; printf '{}' > /output/data.json")
    assert ws.scope.tracker.candidate == "output/a.md"
    assert ws.scope.tracker.changed
    assert result.resource_refs == ["output/a.md", "output/data.json"]
    assert ws.scope.tracker.touched == {"output/a.md", "output/data.json"}


def test_rename_to_a_text_file_and_non_text_writes(ws: Workspace) -> None:
    # workspace.md 10 Acceptance 1, at adapter level
    result = ws.shell("printf 'x\\n' > /output/main.md && mv /output/main.md /output/Moved.MD "
                      "&& printf '{}' > /output/data.json")
    assert result.exit_code == 0
    assert ws.scope.tracker.candidate == "output/Moved.MD"
    assert result.resource_refs == ["output/Moved.MD", "output/data.json", "output/main.md"]


def test_moving_a_directory_carries_the_candidate(ws: Workspace) -> None:
    # workspace.md 10 Acceptance 2, at adapter level
    ws.shell("mkdir -p /scratch/draft && printf 'v\\n' > /scratch/draft/final.md")
    assert ws.scope.tracker.candidate == "scratch/draft/final.md"
    result = ws.shell("mv /scratch/draft /scratch/finalized")
    assert ws.scope.tracker.candidate == "scratch/finalized/final.md"
    assert result.resource_refs == ["scratch/draft", "scratch/finalized"]


def test_a_move_of_a_candidate_made_by_another_tool_carries_it(ws: Workspace) -> None:
    ws.scope.tracker.candidate = "output/main.md"
    ws.scope.tracker.changed = True
    ws.shell("mv /output/main.md /scratch/kept.txt")
    assert ws.scope.tracker.candidate == "scratch/kept.txt"


def test_removing_the_candidate_clears_it(ws: Workspace) -> None:
    ws.shell("mkdir -p /scratch/d && printf 'v' > /scratch/d/x.md")
    result = ws.shell("rm -r /scratch/d")
    assert ws.scope.tracker.candidate is None
    assert ws.scope.tracker.changed
    assert result.resource_refs == ["scratch/d"]


def test_copy_out_of_a_read_only_root_is_a_write(ws: Workspace) -> None:
    (ws.dir / "tool-results" / "r.txt").write_text("stored\n")
    result = ws.shell("cp /tool-results/r.txt /scratch/r.txt")
    assert result.exit_code == 0
    assert ws.read("scratch/r.txt") == "stored\n"
    assert ws.scope.tracker.candidate == "scratch/r.txt"


def test_an_error_result_clears_the_candidate_but_keeps_the_files(ws: Workspace) -> None:
    ws.shell("printf 'one\\n' > /output/one.md")
    assert ws.scope.tracker.candidate == "output/one.md"
    result = ws.shell("printf 'two\\n' > /output/two.md; false")
    assert result.error_code == "workspace.shell_exit"
    assert ws.scope.tracker.candidate is None
    assert not ws.scope.tracker.changed
    assert ws.read("output/two.md") == "two\n"
    assert result.resource_refs == ["output/two.md"]
    assert ws.scope.tracker.touched == {"output/one.md", "output/two.md"}


def test_a_timeout_clears_the_candidate(ws: Workspace) -> None:
    ws.shell("printf 'one\\n' > /output/one.md")
    result = ws.shell("printf 'two\\n' > /output/two.md; while :; do :; done", deadline_s=0.4)
    assert result.error_code == "workspace.shell_timeout"
    assert result.resource_refs == ["output/two.md"]
    assert ws.scope.tracker.candidate is None


def test_a_read_only_call_keeps_the_candidate(ws: Workspace) -> None:
    ws.shell("printf 'one\\n' > /output/one.md")
    ws.shell("cat /output/one.md | wc -l")
    assert ws.scope.tracker.candidate == "output/one.md"


def test_mkdir_p_reports_every_directory_it_created(ws: Workspace) -> None:
    result = ws.shell("mkdir -p /output/a/b/c && mkdir -p /output/a")
    assert result.resource_refs == ["output/a", "output/a/b", "output/a/b/c"]
    assert ws.scope.tracker.candidate is None


def test_shell_writes_are_unchecked_and_append_natively(ws: Workspace) -> None:
    (ws.dir / "scratch" / "bin.dat").write_bytes(b"\x00\xff")
    result = ws.shell("printf 'tail' >> /scratch/bin.dat; cat > /scratch/h.md <<'EOF'\n"
                      "$HOME stays literal\nEOF\n")
    assert result.exit_code == 0
    assert (ws.dir / "scratch" / "bin.dat").read_bytes() == b"\x00\xfftail"
    assert ws.read("scratch/h.md") == "$HOME stays literal\n"
