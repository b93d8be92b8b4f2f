"""The faster call path against the old one: a call of a workspace tool holds the workspace
lock once for its own operations and its stored result, and the call counter keeps its
descriptor; every record a run leaves (the logs, ``run.json``, the arguments files, the
stored results, the counter) and every workspace file stays the same, byte for byte, as
when each hold took its own lock and each count opened the file."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

import tavernlab.host._dispatch as dispatch
import tavernlab.locks as locks
import tavernlab.workspace.storage._atomic as atomic
from tavernlab.clock import FixedClock, SequentialIds
from tavernlab.host import Lab
from tavernlab.host._call_ids import CallCounter


def play(root: Path) -> dict[str, bytes]:
    """Calls of every workspace tool, refused and failing ones among them, a call id chosen
    by the caller, the shell between them, and a run that ends and is resumed; then every
    file below the lab."""
    lab = Lab(root, clock=FixedClock(), ids=SequentialIds("oracle"))
    run = lab.start_run(session=lab.sessions.create("work").id)
    calls: list[tuple[str, dict[str, object]]] = [
        ("workspace.write_file", {"path": "work/a.md", "content": "one\ntwo\n"}),
        ("workspace.read_file", {"path": "work/a.md"}),
        ("workspace.read_file", {"path": "work/a.md", "start_line": 2, "line_count": 1}),
        ("workspace.write_file", {"path": "work/a.md", "content": "three"}),
        ("workspace.write_file", {"path": "work/a.md", "content": "+", "mode": "append"}),
        ("workspace.apply_patch", {"path": "work/a.md", "old_string": "three",
                                   "new_string": "four"}),
        ("workspace.write_file", {"path": "work/deep/er/b.md", "content": "é" * 300}),
        ("workspace.read_file", {"path": "work/missing.md"}),
        ("workspace.read_file", {"path": "work"}),
        ("workspace.write_file", {"path": "work/a.md", "content": "x", "mode": "nope"}),
        ("workspace.list_files", {"depth": 3}),
        ("workspace.search_files", {"query": "four"}),
        ("workspace.write_file", {"path": "../out.md", "content": "x"}),
    ]
    for tool, arguments in calls:
        run.call_tool(tool, arguments)
    run.call_tool("workspace.write_file", {"path": "work/s.md", "content": "\ud800"})
    run.call_tool("workspace.list_files", {"depth": 10**30})
    run.call_tool("workspace.read_file", {"path": "work/a.md", "start_line": 1.0})
    run.call_tool("workspace.read_file", {"path": "work/a.md"}, call_id="call_40")
    shell = run.shell("echo y > /work/c.md && rm /work/deep/er/b.md")
    assert shell.exit_code == 0, shell.stderr
    run.call_tool("workspace.write_file", {"path": "work/c.md", "content": "z"})
    run.call_tool("workspace.read_file", {"path": "work/c.md"})
    run.call_tool("workspace.write_file", {"path": "work/c.md", "content": "zz"})
    assert not run.finish().is_error
    run.resume()
    run.call_tool("workspace.read_file", {"path": "work/c.md"})
    lab.close()
    return {str(path.relative_to(root)): path.read_bytes()
            for path in sorted(root.rglob("*")) if path.is_file()
            and not path.name.startswith(".workspace.lock")}


_KEPT = CallCounter._update


def reopening(self: CallCounter, floor: int, *, step: int) -> int:
    """The counter as it was: the file opened for each update and closed after it."""
    try:
        return _KEPT(self, floor, step=step)
    finally:
        self.close()


def test_every_record_and_file_is_that_of_the_old_path(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fast = play(tmp_path / "fast")
    with monkeypatch.context() as patch:
        patch.setattr(dispatch, "PORT_HANDLERS", frozenset())
        patch.setattr(CallCounter, "_update", reopening)
        patch.setattr(dispatch, "_flat_storable", lambda arguments: False)
        old = play(tmp_path / "old")
    assert fast.keys() == old.keys()
    assert any("tool-results" in name for name in fast)
    assert any(name.endswith(".tavernlab-calls") for name in fast)
    for name in fast:
        assert fast[name] == old[name], name


@pytest.mark.parametrize(("tool", "arguments", "holds"), [
    ("workspace.write_file", {"path": "output/a.md", "content": "two"}, [False]),
    ("workspace.read_file", {"path": "output/a.md"}, [True]),  # made exclusive for the result
    ("workspace.apply_patch", {"path": "output/a.md", "old_string": "one",
                               "new_string": "three"}, [True]),
])
def test_a_workspace_tool_call_takes_the_workspace_lock_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tool: str,
        arguments: dict[str, object], holds: list[bool]) -> None:
    lab = Lab(tmp_path / "lab")
    run = lab.start_run(chat_id="alice")
    run.call_tool("workspace.write_file", {"path": "output/a.md", "content": "one"})
    run.call_tool("workspace.read_file", {"path": "output/a.md"})
    taken: list[bool] = []
    real = locks._lock_fd

    def counted(path: Path, *, shared: bool) -> int:
        if path.name == ".workspace.lock":
            taken.append(shared)
        return real(path, shared=shared)

    monkeypatch.setattr(locks, "_lock_fd", counted)
    result = run.call_tool(tool, arguments)
    assert not result.is_error, result.content
    assert taken == holds
    lab.close()


def test_a_tool_outside_the_port_takes_its_own_holds(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``workspace.commit`` works with the chat too: its holds are not joined to a lease."""
    lab = Lab(tmp_path / "lab")
    run = lab.start_run(chat_id="alice")
    run.call_tool("workspace.write_file", {"path": "output/main.md", "content": "hello"})
    leases: list[int] = []
    real = run._core.fs.lease

    def counted() -> object:
        leases.append(1)
        return real()

    monkeypatch.setattr(run._core.fs, "lease", counted)
    run.call_tool("workspace.commit", {"path": "output/main.md"})
    run.call_tool("workspace.read_file", {"path": "output/main.md"})
    assert leases == [1]
    lab.close()


FLAT_ARGUMENTS = [
    {}, {"path": "a.md"}, {"path": "a.md", "content": "é" * 10, "mode": "append"},
    {"n": 1, "b": True, "z": None, "neg": -5}, {"big": 10**17}, {"big": -(10**17)},
    {"é": "ü"},
]
OTHER_ARGUMENTS = [
    {"big": 10**18}, {"huge": 10**5000}, {"f": 1.5}, {"nan": float("nan")},
    {"bad": "\ud800"}, {"\udc00": "key"}, {1: "int key"}, {None: 1},
    {"list": ["a"]}, {"nested": {"a": 1}}, {"obj": object()}, {"bytes": b"x"},
    {"tuple": ("a",)}, {"sub": type("S", (str,), {})("x")}, {"i": type("I", (int,), {})(3)},
]


@pytest.mark.parametrize("arguments", FLAT_ARGUMENTS)
def test_flat_arguments_are_known_storable_and_the_full_checks_agree(
        arguments: dict[object, object]) -> None:
    assert dispatch._flat_storable(arguments) is True
    assert dispatch.unstorable(arguments) is None


@pytest.mark.parametrize("arguments", OTHER_ARGUMENTS)
def test_other_arguments_are_left_to_the_full_checks(arguments: dict[object, object]) -> None:
    assert dispatch._flat_storable(arguments) is False


def publish_cases(root: Path, publish: Callable[..., None]) -> list[object]:
    """What each kind of publication leaves (or raises), and every file below ``root``."""
    root.mkdir()
    (root / "dir").mkdir()
    (root / "taken").mkdir()
    (root / "taken" / "x").write_text("in the way")
    (root / "old.md").write_text("old")
    (root / "stale.tmp").write_text("a killed writer's leftover")
    cases: list[dict[str, object]] = [
        {"target": "dir/a.md"},
        {"target": "old.md"},
        {"target": "missing/a.md"},
        {"target": "missing/a.md", "parents": True},
        {"target": "dir/b.md", "staging": "staging"},
        {"target": "dir/c.md", "staging": "nested/staging"},
        {"target": "gone/c.md", "staging": "staging"},
        {"target": "dir/d.md", "temp": "stale.tmp"},
        {"target": "dir/e.md", "temp": "no/such/e.tmp"},
        {"target": "dir/e.md", "temp": "no/such/e.tmp", "parents": True},
        {"target": "taken"},
        {"target": "taken", "staging": "staging"},
        {"target": "dir", "temp": "t.tmp"},
    ]
    outcomes: list[object] = []
    for number, case in enumerate(cases):
        kwargs = {key: str(root / value) for key, value in case.items()
                  if key in ("staging", "temp")}
        if "parents" in case:
            kwargs["parents"] = case["parents"]  # type: ignore[assignment]
        try:
            publish(str(root / str(case["target"])), b"new %d" % number, **kwargs)
            outcomes.append("ok")
        except OSError as exc:
            outcomes.append(type(exc).__name__)
    files = sorted((str(p.relative_to(root)), p.read_bytes() if p.is_file() else None)
                   for p in root.rglob("*") if not p.name.startswith(atomic.TEMP_PREFIX))
    leftovers = [p.parent.name for p in root.rglob(f"{atomic.TEMP_PREFIX}*")]
    return [outcomes, files, leftovers]


def test_publish_places_each_file_or_fails_leaving_nothing_behind(tmp_path: Path) -> None:
    outcomes, files, leftovers = publish_cases(tmp_path / "root", atomic.publish)
    assert outcomes == ["ok", "ok", "FileNotFoundError", "ok", "ok", "ok", "FileNotFoundError",
                        "ok", "FileNotFoundError", "ok", "IsADirectoryError",
                        "IsADirectoryError", "IsADirectoryError"]
    assert files == [
        ("dir", None), ("dir/a.md", b"new 0"), ("dir/b.md", b"new 4"), ("dir/c.md", b"new 5"),
        ("dir/d.md", b"new 7"), ("dir/e.md", b"new 9"), ("missing", None),
        ("missing/a.md", b"new 3"), ("nested", None), ("nested/staging", None), ("no", None),
        ("no/such", None), ("old.md", b"new 1"), ("staging", None), ("taken", None),
        ("taken/x", b"in the way")]  # a failed publication changed nothing
    assert leftovers == []  # no temporary file left behind, whatever failed
