"""The plain floor of ``bench/imports.py`` writes exactly what the first call writes.

The row "first tool call of a fresh process" is measured against a fresh process that writes
the same files in plain Python. That floor is built from a trace of a real first call; it
must never be lighter than the call: one run of it leaves the same files (the same relative
paths) with the same number of lines, and it makes each record by the operation the call used.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))

import imports  # noqa: E402


def tree_of(root: Path) -> dict[str, int]:
    """Each file below ``root`` and its number of lines."""
    tree = {}
    for where, _, files in os.walk(root):
        for name in files:
            path = Path(where) / name
            tree[path.relative_to(root).as_posix()] = len(path.read_bytes().splitlines())
    return tree


def test_the_floor_leaves_the_files_the_first_call_leaves(tmp_path: Path) -> None:
    env = imports.environment(str(tmp_path / "pyc"))
    traced = imports.trace_first_call(env)
    floor_dir = tmp_path / "floor"
    floor_dir.mkdir()
    subprocess.run([sys.executable, "-c", imports.floor_code(traced), str(floor_dir)],
                   env=env, check=True, timeout=120)
    assert tree_of(floor_dir) == traced["tree"]
    names = {Path(rel).name for rel in traced["tree"]}
    assert {"run.json", "manifest.json", "events.jsonl", "journal.jsonl", "a.md"} <= names
    # every record of the call, by the call's own operation
    operations = [(operation, Path(rel).name) for operation, rel, _ in traced["records"]]
    assert operations.count(("replace", "run.json")) >= 2
    assert ("replace", "a.md") in operations
    assert [op for op, name in operations if name == "events.jsonl"] == ["append", "append"]
    assert [op for op, name in operations if name == "journal.jsonl"] == ["append"]
    assert sum(1 for op, name in operations if op == "create") == 1
    # the logs' lines are re-encoded one by one: as many as the call appended
    events = [lines for op, rel, lines in traced["records"] if rel.endswith("events.jsonl")]
    assert sum(len(lines) for lines in events) == traced["tree"][
        next(rel for rel in traced["tree"] if rel.endswith("events.jsonl"))]


def test_the_floor_run_without_a_directory_removes_its_own(tmp_path: Path) -> None:
    env = imports.environment(str(tmp_path / "pyc"))
    traced = {"dirs": ["a/b"], "records": [
        ["replace", "a/b/run.json", ["json", {"id": "r", "n": [1, 2]}]],
        ["create", "a/args.json", ["json", {"x": "é"}]],
        ["append", "a/events.jsonl", [{"seq": 1}, {"seq": 2}]],
        ["write", "a/.lock", ["text", ""]]], "tree": {}}
    kept = tmp_path / "kept"
    kept.mkdir()
    code = imports.floor_code(traced)
    subprocess.run([sys.executable, "-c", code, str(kept)], env=env, check=True, timeout=60)
    assert (kept / "a/b/run.json").read_text() == (
        '{\n  "id": "r",\n  "n": [\n    1,\n    2\n  ]\n}\n')
    assert (kept / "a/args.json").read_text(encoding="utf-8") == '{\n  "x": "é"\n}\n'
    assert (kept / "a/events.jsonl").read_text() == '{"seq": 1}\n{"seq": 2}\n'
    assert tree_of(kept) == {"a/b/run.json": 7, "a/args.json": 3, "a/events.jsonl": 2,
                             "a/.lock": 0}
    temp = tmp_path / "tmp"
    temp.mkdir()
    subprocess.run([sys.executable, "-c", code], env={**env, "TMPDIR": str(temp)},
                   check=True, timeout=60)
    assert list(temp.iterdir()) == []
