"""The floors of ``bench/floor.py`` write exactly what the calls they stand for write.

A floor times a tool call's records in plain Python; it must never be lighter than the
requirement. For each floor, one run of it writes the same files (the same relative paths),
by the same operations, in the same order and with the same number of lines as the real
call it was captured from.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))

import floor  # noqa: E402


@pytest.mark.parametrize("kind", sorted(floor.SETUPS))
def test_a_floor_writes_what_its_call_writes(tmp_path: Path, kind: str) -> None:
    setup = floor.SETUPS[kind](tmp_path)
    try:
        real = setup.captured.summary()
        written = floor.traced_floor(setup.captured, tmp_path / "floor", setup.work)
    finally:
        setup.lab.close()
    assert written == real
    operations = [operation for operation, _, _ in real]
    paths = [path for _, path, _ in real]
    # what every call keeps: its arguments, its stored result, both logs, run.json
    assert operations.count("create") == 1 and paths[0].startswith("tool-args/")
    assert any(path.startswith("tool-results/") for path in paths)
    assert ("append", "events.jsonl") in [(op, path) for op, path, _ in real]
    assert ("append", "journal.jsonl") in [(op, path) for op, path, _ in real]
    assert ("replace", "run.json") in [(op, path) for op, path, _ in real]
    assert all(lines > 0 for _, _, lines in real)


def test_the_trace_sees_a_second_run_json_replace(tmp_path: Path) -> None:
    # the pin counts writes, not files: writing run.json twice is two records
    root = tmp_path / "root"
    root.mkdir()
    trace = floor.WriteTrace(root)
    with trace:
        for text in ("{}\n", "[]\n"):
            floor.atomic_write(root / "run.json", text.encode())
        floor.create(root / "args.json", "{}\n")
        floor.append_lines(root / "events.jsonl", [{"a": 1}, {"b": 2}])
    assert trace.order == [("replace", "run.json"), ("replace", "run.json"),
                           ("create", "args.json"), ("append", "events.jsonl")]
    assert floor.summary(root, trace.order, {"events.jsonl": 2}) == [
        ("replace", "run.json", 1), ("replace", "run.json", 1), ("create", "args.json", 1),
        ("append", "events.jsonl", 2)]
