"""Concurrent guarded writes: no update is ever lost (docs/workspace.md, "The storage port").

Every writer reads the file, appends its own token to what it read and writes the result with
``MustMatchSha256`` of what it read. A write either applies or fails with a Stale conflict; in
the end the file holds exactly the applied tokens, each once, in the order they applied.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

from tavernlab.errors import WriteConflict
from tavernlab.host import Lab
from tavernlab.paths import WorkspacePath
from tavernlab.workspace.storage import WorkspaceFs
from tavernlab.workspace.storage._fs import WriteGuard

TARGET = WorkspacePath("scratch/counter.txt")


def guarded_append(fs: WorkspaceFs, token: str) -> bool:
    """One read-modify-write round; True when it applied, False on a Stale conflict."""
    current = fs.read_text(TARGET)
    try:
        fs.write_file(TARGET, (current.text + token + "\n").encode(),
                      WriteGuard.must_match_sha256(current.sha256))
    except WriteConflict as exc:
        assert exc.kind == "stale"
        assert exc.expected_sha256 == current.sha256
        return False
    return True


def applied_tokens(text: str) -> list[str]:
    """The tokens in the file, in file order."""
    return [line for line in text.split("\n") if line]


def test_eight_threads_never_lose_an_update(tmp_path: Path) -> None:
    fs = WorkspaceFs(tmp_path / "ws")
    fs.write_text(TARGET, "", WriteGuard.must_not_exist())
    barrier = threading.Barrier(8)
    applied: dict[int, list[str]] = {}
    conflicts: dict[int, int] = {}

    def worker(n: int) -> None:
        handle = WorkspaceFs(fs.directory) if n % 2 else fs  # shared and separate handles
        barrier.wait()
        mine: list[str] = []
        lost = 0
        for i in range(40):
            token = f"t{n}-{i}"
            if guarded_append(handle, token):
                mine.append(token)
            else:
                lost += 1
        applied[n], conflicts[n] = mine, lost

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    final = applied_tokens(fs.read_text(TARGET).text)
    expected = [token for n in range(8) for token in applied[n]]
    assert sorted(final) == sorted(expected)
    assert len(final) == len(set(final))
    assert sum(conflicts.values()) + len(final) == 8 * 40
    for n in range(8):  # each writer's tokens applied in its own order
        assert [t for t in final if t.startswith(f"t{n}-")] == applied[n]
    assert sorted(p.name for p in (fs.directory / "scratch").iterdir()) == ["counter.txt"]


CHILD = textwrap.dedent("""
    import json, sys
    from tavernlab.errors import WriteConflict
    from tavernlab.paths import WorkspacePath
    from tavernlab.workspace.storage._fs import WorkspaceFs, WriteGuard

    directory, name, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
    fs = WorkspaceFs(directory)
    target = WorkspacePath("scratch/counter.txt")
    print("ready", flush=True)
    sys.stdin.readline()                     # start together
    applied, conflicts = [], 0
    for i in range(rounds):
        token = f"{name}-{i}"
        current = fs.read_text(target)
        try:
            fs.write_file(target, (current.text + token + "\\n").encode(),
                          WriteGuard.must_match_sha256(current.sha256))
            applied.append(token)
        except WriteConflict as exc:
            assert exc.kind == "stale"
            conflicts += 1
    print(json.dumps({"applied": applied, "conflicts": conflicts}), flush=True)
""")


def _start(args: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, *args], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _run_together(children: list[subprocess.Popen[str]]) -> list[dict[str, object]]:
    for child in children:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
    for child in children:
        assert child.stdin is not None
        child.stdin.write("go\n")
        child.stdin.flush()
    results = []
    for child in children:
        out, err = child.communicate(timeout=120)
        assert child.returncode == 0, err
        results.append(json.loads(out.strip().splitlines()[-1]))
    return results


def test_two_processes_never_lose_an_update(lab: Lab) -> None:
    run = lab.start_run(chat_id="alice")
    run.internals.fs.write_text(TARGET, "", WriteGuard.must_not_exist())
    children = [_start(["-c", CHILD, str(run.workspace_dir), name, "150"]) for name in "ab"]
    results = _run_together(children)
    final = applied_tokens(run.internals.fs.read_text(TARGET).text)
    expected = [t for r in results for t in r["applied"]]  # type: ignore[attr-defined]
    assert sorted(final) == sorted(expected)
    assert len(final) == len(set(final))
    assert len(final) + sum(r["conflicts"] for r in results) == 300  # type: ignore[misc]
    for name, result in zip("ab", results, strict=True):
        assert [t for t in final if t.startswith(f"{name}-")] == result["applied"]


TOOL_CHILD = textwrap.dedent("""
    import json, sys
    from tavernlab.host import Lab

    lab_dir, run_id, name, rounds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    run = Lab(lab_dir).open_run(run_id)
    print("ready", flush=True)
    sys.stdin.readline()
    applied, conflicts = [], 0
    for i in range(rounds):
        token = f"{name}-{i}"
        read = run.call_tool("workspace.read_file", {"path": "scratch/counter.md"})
        # write what was read plus the token; the tool guards with the read record's digest
        read_text = "".join(line.split(" | ", 1)[1] + "\\n"
                            for line in read.content.split("\\n")[1:] if " | " in line)
        result = run.call_tool("workspace.write_file",
                               {"path": "scratch/counter.md", "content": read_text + token})
        if result.is_error:
            assert result.error_code == "workspace.write_stale_file", result.content
            conflicts += 1
        else:
            applied.append(token)
    print(json.dumps({"applied": applied, "conflicts": conflicts}), flush=True)
""")


def test_two_processes_using_the_tools_on_one_run(lab: Lab) -> None:
    """The model-facing path: read_file, then write_file guarded by the read record."""
    run = lab.start_run(chat_id="alice")
    run.internals.fs.write_text(WorkspacePath("scratch/counter.md"), "start",
                                WriteGuard.must_not_exist())
    children = [_start(["-c", TOOL_CHILD, str(lab.root), run.id, name, "15"]) for name in "ab"]
    results = _run_together(children)
    final = run.internals.fs.read_text(WorkspacePath("scratch/counter.md")).text.split("\n")
    assert final[0] == "start"
    expected = [t for r in results for t in r["applied"]]  # type: ignore[attr-defined]
    assert sorted(final[1:]) == sorted(expected)
    assert len(final) - 1 + sum(r["conflicts"] for r in results) == 30  # type: ignore[misc]
    # both processes appended to the same event log without a gap
    seqs = [event.seq for event in run.events(journal=False)]
    assert seqs == list(range(1, len(seqs) + 1))
