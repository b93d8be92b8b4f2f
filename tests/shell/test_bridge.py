"""The shell's policy and filesystem bridge (docs/shell.md) and bad input, run through
a real bashkit interpreter over a real workspace directory."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from tavernlab.errors import (
    AccessDenied,
    Cancelled,
    FileIo,
    FileNotText,
    InvalidData,
    NotFound,
    PathIsDirectory,
    WorkspaceError,
    WriteConflict,
)
from tavernlab.shell import ShellOutcome, execute_shell
from tavernlab.shell._bridge import posix_error
from tavernlab.shell._vfs import VfsErrorKind
from tavernlab.workspace.scope import ScopedWorkspaceFs
from tavernlab.workspace.scope._scope import Policy
from tavernlab.workspace.storage import WorkspaceFs

from .conftest import Workspace

VISIBLE_ROOTS = "output\npersist\nplan\nscratch\nskills\nsummaries\ntool-results"


def test_hidden_input_cannot_be_read_or_copied(ws: Workspace) -> None:
    # 12.1 and workspace.md 3 Acceptance 5
    cat = ws.shell("cat /input/prompt_snapshot.json")
    assert (cat.outcome, cat.exit_code, cat.error_code) == (
        ShellOutcome.COMPLETED, 1, "workspace.shell_exit")
    assert cat.stdout == ""
    # a hidden file does not exist for the shell: it fails as a missing file does
    assert cat.stderr == ("cat: /input/prompt_snapshot.json: workspace path "
                          "`input/prompt_snapshot.json` was not found.\n")
    cp = ws.shell("cp /input/prompt_snapshot.json /scratch/leaked.json")
    assert cp.exit_code == 1
    assert cp.error_code == "workspace.shell_exit"
    assert not ws.exists("scratch/leaked.json")
    assert cp.resource_refs == []


def test_tool_results_is_read_only(ws: Workspace) -> None:
    # 12.2
    result = ws.shell("echo x > /tool-results/x.txt")
    assert result.exit_code == 1
    assert result.stderr == ("bash: line 1: /tool-results/x.txt: `tool-results/x.txt` is not "
                             "writable for this task.\n")
    assert ws.tree("tool-results") == []


def test_symlinks_are_not_supported(ws: Workspace) -> None:
    # 12.3
    result = ws.shell("ln -s a b")
    assert result.exit_code == 1
    assert "symlink is not supported in the workspace" in result.stderr


def test_symlink_cannot_reach_host_files(ws: Workspace) -> None:
    # bad input: ln -s to a host path creates nothing and reads nothing from the host
    result = ws.shell("ln -s /etc/passwd /scratch/pw; cat /scratch/pw; cat /etc/passwd")
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        "ln: failed to create symbolic link '/scratch/pw': io error: symlink is not supported "
        "in the workspace",
        "cat: /scratch/pw: workspace path `scratch/pw` was not found.",
        "cat: /etc/passwd: workspace path `etc/passwd` was not found.",
    ]
    assert ws.tree("scratch") == []


def test_workdir_output_and_pwd(ws: Workspace) -> None:
    # 12.4
    assert ws.shell("cat main.md", "/output").content == "Exit code: 0\ndraft"
    assert ws.shell("pwd", "/output").content == "Exit code: 0\n/output"
    assert ws.shell("pwd", "output/").stdout == "/output\n"


def test_backslash_paths_fail(ws: Workspace) -> None:
    # 12.5
    result = ws.shell("cat '/output\\main.md'")
    assert result.exit_code == 1
    assert result.stderr == "cat: /output\\main.md: use / in workspace paths\n"


def test_ls_root_lists_exactly_the_visible_roots(ws: Workspace) -> None:
    # 12.6
    assert ws.shell("ls /").content == "Exit code: 0\n" + VISIBLE_ROOTS
    assert ws.shell("cd /; ls").stdout == VISIBLE_ROOTS + "\n"


def test_hidden_paths_do_not_exist_for_test(ws: Workspace) -> None:
    # 12.7
    assert ws.shell("test -e /input/prompt_snapshot.json").exit_code == 1
    assert ws.shell("test -e /output").exit_code == 0
    assert ws.shell("[ -f /output/main.md ] && [ ! -e /input ] && [ -d /skills ]").exit_code == 0


def test_root_and_roots_are_not_writable(ws: Workspace) -> None:
    # 12.8
    before = ws.tree("output")
    mkdir = ws.shell("mkdir /newroot")
    assert mkdir.exit_code == 1
    assert mkdir.stderr == ("mkdir: cannot create directory '/newroot': `newroot` is not "
                            "writable for this task.\n")
    rm = ws.shell("rm -r /output")
    assert rm.exit_code == 1
    assert "`output` is not writable for this task." in rm.stderr
    assert not ws.exists("newroot")
    assert ws.tree("output") == before
    assert ws.read("output/main.md") == "draft\n"


def test_dot_dot_cannot_walk_out_of_the_workspace(ws: Workspace) -> None:
    # bad input: `..` above `/` stays at `/`; nothing outside the workspace is reachable
    result = ws.shell("cd /output/../../..; pwd; ls; cat ../../etc/hostname; "
                      "cat /output/../../../run/input/prompt_snapshot.json")
    assert result.stdout == "/\n" + VISIBLE_ROOTS + "\n"
    assert result.stderr.splitlines() == [
        "cat: ../../etc/hostname: workspace path `etc/hostname` was not found.",
        "cat: /output/../../../run/input/prompt_snapshot.json: "
        "workspace path `run/input/prompt_snapshot.json` was not found.",
    ]


def test_python_subset_writes_through_pathlib(ws: Workspace) -> None:
    # 12.10 (and section 10: relative paths resolve against the current directory)
    result = ws.shell("python3 -c \"import pathlib; pathlib.Path('/scratch/p.txt')"
                      ".write_text('hi')\"")
    assert result.exit_code == 0
    assert ws.read("scratch/p.txt") == "hi"
    relative = ws.shell("python3 -c \"import pathlib; p = pathlib.Path('rel.md'); "
                        "p.write_text('x'); print(p.read_text(), p.exists(), "
                        "pathlib.Path('/input/prompt_snapshot.json').exists())\"", "/scratch")
    assert relative.stdout == "x True False\n"
    assert ws.read("scratch/rel.md") == "x"


def test_python_exception_is_a_non_zero_exit(ws: Workspace) -> None:
    result = ws.shell("python3 -c 'raise ValueError(\"boom\")'")
    assert result.error_code == "workspace.shell_exit"
    assert result.exit_code == 1
    assert result.stderr.endswith("ValueError: boom\n")


def test_no_host_environment(ws: Workspace) -> None:
    result = ws.shell("env | sort", "/plan")
    assert result.stdout == "HOME=/\nPWD=/plan\n"


def test_session_tmp_is_the_session_root(tmp_path: Path) -> None:
    directory = tmp_path / "workspace"
    for root in ("work", "tmp", "tool-results"):
        (directory / root).mkdir(parents=True)
    scope = ScopedWorkspaceFs(WorkspaceFs(directory),
                              Policy.from_profile(("work", "tmp"), ("work", "tmp")))
    result = execute_shell(scope, None, "echo scratch > /tmp/note.txt; ls /; cat /tmp/note.txt")
    assert result.stdout == "skills\ntmp\ntool-results\nwork\nscratch\n"
    assert (directory / "tmp" / "note.txt").read_text() == "scratch\n"


def test_chmod_changes_are_refused_but_sed_in_place_works(ws: Workspace) -> None:
    result = ws.shell("sed -i 's/draft/edited/' /output/main.md; chmod 600 /output/main.md")
    assert result.exit_code == 1
    assert result.stderr == ("chmod: changing permissions of '/output/main.md': io error: "
                             "chmod is not supported in the workspace\n")
    assert ws.read("output/main.md") == "edited\n"
    assert ws.tree("output") == ["output/main.md"]


def test_read_only_modes_are_reported(ws: Workspace) -> None:
    (ws.dir / "tool-results" / "r.json").write_text("{}")
    listing = ws.shell("ls -l /tool-results /output").stdout
    assert "-r--r--r--" in listing.splitlines()[1]
    assert listing.splitlines()[4].startswith("-rw-r--r--")


def test_touch_creates_missing_files_only(ws: Workspace) -> None:
    result = ws.shell("touch /scratch/new.txt /output/main.md; touch -c /scratch/none.txt; "
                      "touch /tool-results/t.txt")
    assert result.exit_code == 1
    assert result.stderr == ("touch: cannot touch '/tool-results/t.txt': `tool-results/t.txt` "
                             "is not writable for this task.\n")
    assert ws.read("scratch/new.txt") == ""
    assert ws.read("output/main.md") == "draft\n"
    assert not ws.exists("scratch/none.txt")
    assert result.resource_refs == ["scratch/new.txt"]


def test_the_root_is_a_directory_never_a_file(ws: Workspace) -> None:
    result = ws.shell("cat /; echo x > /")
    assert result.stderr == ("cat: /: workspace root is not a file entry\n"
                             "bash: line 1: /: Is a directory\n")


def test_python_runs_a_script_file(ws: Workspace) -> None:
    (ws.dir / "scratch" / "s.py").write_text(
        "import pathlib\nprint(pathlib.Path('/output/main.md').read_text().upper())\n")
    assert ws.shell("python3 s.py", "/scratch").stdout == "DRAFT\n\n"


@pytest.mark.parametrize(("error", "kind"), [
    (NotFound("gone"), VfsErrorKind.NOT_FOUND),
    (InvalidData("bad"), VfsErrorKind.INVALID_INPUT),
    (PathIsDirectory("output"), VfsErrorKind.IS_A_DIRECTORY),
    (AccessDenied("input", "read"), VfsErrorKind.PERMISSION_DENIED),
    (AccessDenied("output", "write"), VfsErrorKind.PERMISSION_DENIED),
    (FileIo("list", "a", OSError(errno.ENOTDIR, "Not a directory")),
     VfsErrorKind.NOT_A_DIRECTORY),
    (FileIo("create directory", "a", OSError(errno.EEXIST, "File exists")),
     VfsErrorKind.ALREADY_EXISTS),
    (FileIo("remove", "a", OSError(errno.ENOTEMPTY, "Directory not empty")),
     VfsErrorKind.DIRECTORY_NOT_EMPTY),
    (Cancelled(), VfsErrorKind.OTHER),
    (FileNotText("a"), VfsErrorKind.OTHER),
    (WriteConflict("a", "stale", expected_sha256="x"), VfsErrorKind.OTHER),
])
def test_storage_errors_map_to_posix_kinds(error: WorkspaceError, kind: VfsErrorKind) -> None:
    # 4.4: the kind follows the table, the message is the storage message
    mapped = posix_error(error)
    assert (mapped.kind, mapped.message) == (kind, error.message)
