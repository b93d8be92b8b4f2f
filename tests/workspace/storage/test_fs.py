"""The ``WorkspaceFs`` storage contract (docs/workspace.md, "The storage port")."""

from __future__ import annotations

import errno
import fcntl
import functools
import os
import stat
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from tavernlab.errors import (
    FileIo,
    FileNotText,
    InvalidData,
    NotFound,
    PathIsDirectory,
    WriteConflict,
)
from tavernlab.paths import WorkspacePath
from tavernlab.workspace.storage import (
    UNSUPPORTED_NODE,
    WorkspaceDirectoryEntry,
    WorkspaceEntry,
    WorkspaceFs,
    refused_node,
)
from tavernlab.workspace.storage import _atomic as atomic
from tavernlab.workspace.storage._fs import (
    LOCK_FILE_NAME,
    WorkspaceRefusedEntry,
    WriteGuard,
    sha256_hex,
)

BINARY = b"\x00\xff\xfe\x80bin\x00ary\xc3(" + bytes(range(256))


def P(text: str) -> WorkspacePath:
    """Parse a workspace path."""
    return WorkspacePath.parse(text)


@pytest.fixture
def fs(tmp_path: Path) -> WorkspaceFs:
    """A workspace with the directories ``scratch`` and ``output``."""
    store = WorkspaceFs(tmp_path / "ws")
    store.create_dir(P("scratch"), recursive=False)
    store.create_dir(P("output"), recursive=False)
    return store


def tree(fs: WorkspaceFs) -> dict[str, bytes | None]:
    """Every node below the workspace (directories map to None), lock file excluded."""
    out: dict[str, bytes | None] = {}
    for path in sorted(fs.directory.rglob("*")):
        rel = path.relative_to(fs.directory).as_posix()
        if rel == LOCK_FILE_NAME:
            continue
        out[rel] = None if path.is_dir() and not path.is_symlink() else (
            path.read_bytes() if not path.is_symlink() else b"->" + os.readlink(path).encode())
    return out


# --- Acceptance --------------------------------------------------------------------------------


def test_binary_bytes_survive_write_append_and_copy(fs: WorkspaceFs) -> None:
    """Acceptance 1."""
    fs.write_file(P("scratch/a.bin"), BINARY, WriteGuard.unchecked())
    assert fs.read_file(P("scratch/a.bin"), None) == BINARY
    fs.append_file(P("scratch/b.bin"), BINARY[:7])
    fs.append_file(P("scratch/b.bin"), BINARY[7:])
    assert fs.read_file(P("scratch/b.bin"), None) == BINARY
    fs.copy_file(P("scratch/a.bin"), P("output/c.bin"))
    assert fs.read_file(P("output/c.bin"), None) == BINARY
    assert (fs.directory / "output/c.bin").read_bytes() == BINARY
    assert fs.digest(P("output/c.bin")) == sha256_hex(BINARY)


def test_text_operations_refuse_binary_files(fs: WorkspaceFs) -> None:
    """Acceptance 2: ``read_text`` and ``append_text`` fail and the file is unchanged."""
    fs.write_file(P("scratch/a.bin"), BINARY, WriteGuard.unchecked())
    with pytest.raises(FileNotText) as info:
        fs.read_text(P("scratch/a.bin"))
    assert info.value.path == "scratch/a.bin"
    with pytest.raises(FileNotText):
        fs.append_text(P("scratch/a.bin"), "more")
    assert fs.read_file(P("scratch/a.bin"), None) == BINARY


def test_read_bound_is_an_error_never_a_prefix(fs: WorkspaceFs) -> None:
    """Acceptance 3."""
    fs.write_file(P("scratch/a.txt"), b"12345", WriteGuard.unchecked())
    with pytest.raises(InvalidData) as info:
        fs.read_file(P("scratch/a.txt"), 4)
    assert info.value.message == "Workspace read exceeds 4 bytes: scratch/a.txt"
    assert fs.read_file(P("scratch/a.txt"), 5) == b"12345"
    assert fs.read_file(P("scratch/a.txt"), 0 + 5) == b"12345"
    fs.write_file(P("scratch/empty"), b"", WriteGuard.unchecked())
    assert fs.read_file(P("scratch/empty"), 0) == b""


def test_guards(fs: WorkspaceFs) -> None:
    """Acceptance 4 and the guard table of 5.3."""
    path = P("scratch/a.md")
    fs.write_file(path, b"one", WriteGuard.must_not_exist())
    old = sha256_hex(b"one")
    fs.write_file(path, b"two", WriteGuard.must_match_sha256(old))
    two = sha256_hex(b"two")
    with pytest.raises(WriteConflict) as stale:
        fs.write_file(path, b"three", WriteGuard.must_match_sha256(old))
    assert (stale.value.kind, stale.value.expected_sha256, stale.value.actual_sha256) == (
        "stale", old, two)
    assert stale.value.path == "scratch/a.md"
    assert fs.read_file(path, None) == b"two"
    with pytest.raises(WriteConflict) as exists:
        fs.write_file(path, b"three", WriteGuard.must_not_exist())
    assert (exists.value.kind, exists.value.actual_sha256) == ("already_exists", two)
    assert fs.read_file(path, None) == b"two"
    with pytest.raises(WriteConflict) as gone:
        fs.write_file(P("scratch/missing.md"), b"x", WriteGuard.must_match_sha256(old))
    assert (gone.value.kind, gone.value.expected_sha256, gone.value.actual_sha256) == (
        "stale", old, None)
    assert not fs.exists(P("scratch/missing.md"))
    fs.write_file(path, b"four", WriteGuard.unchecked())
    assert fs.read_file(path, None) == b"four"


def test_append_creates_missing_files(fs: WorkspaceFs) -> None:
    """Acceptance 5, and ``append_text``'s result."""
    fs.append_file(P("scratch/new.log"), b"a")
    assert fs.read_file(P("scratch/new.log"), None) == b"a"
    first = fs.append_text(P("scratch/new.md"), "hé")
    assert first.previous_sha256 is None
    assert (first.file.path, first.file.text, first.file.bytes) == ("scratch/new.md", "hé", 3)
    assert first.file.sha256 == sha256_hex("hé".encode())
    second = fs.append_text(P("scratch/new.md"), "llo")
    assert second.previous_sha256 == sha256_hex("hé".encode())
    assert second.file.text == "héllo"
    assert second.file.sha256 == sha256_hex("héllo".encode())
    assert fs.read_text(P("scratch/new.md")).text == "héllo"
    with pytest.raises(NotFound):
        fs.append_file(P("scratch/nodir/x.log"), b"a")
    assert not (fs.directory / "scratch/nodir").exists()


def test_directories_where_files_are_needed(fs: WorkspaceFs) -> None:
    """Acceptance 6."""
    fs.create_dir(P("scratch/d"), recursive=False)
    with pytest.raises(PathIsDirectory) as info:
        fs.read_file(P("scratch/d"), None)
    assert info.value.path == "scratch/d"
    for write in (
        lambda: fs.write_file(P("scratch/d"), b"x", WriteGuard.unchecked()),
        lambda: fs.write_text(P("scratch/d"), "x", WriteGuard.unchecked()),
        lambda: fs.append_file(P("scratch/d"), b"x"),
        lambda: fs.append_text(P("scratch/d"), "x"),
        lambda: fs.copy_file(P("scratch/d"), P("scratch/e")),
    ):
        with pytest.raises(PathIsDirectory):
            write()
    assert (fs.directory / "scratch/d").is_dir()
    assert not (fs.directory / "scratch/e").exists()
    assert list((fs.directory / "scratch/d").iterdir()) == []


def test_read_dir_bound_fails_while_list_files_truncates(fs: WorkspaceFs) -> None:
    """Acceptance 7."""
    for name in "abcd":
        fs.write_file(P(f"scratch/{name}.txt"), b"x", WriteGuard.unchecked())
    with pytest.raises(InvalidData) as info:
        fs.read_dir(P("scratch"), 3)
    assert info.value.message == "Workspace directory exceeds 3 entries: scratch"
    listing = fs.list_files(P("scratch"), 1, 3)
    assert listing.truncated is True
    assert [e.path for e in listing.entries] == ["scratch/a.txt", "scratch/b.txt", "scratch/c.txt"]
    exact = fs.list_files(P("scratch"), 1, 4)
    assert exact.truncated is False
    assert len(exact.entries) == 4


# --- operations ------------------------------------------------------------------------------


def test_metadata_and_read_dir(fs: WorkspaceFs) -> None:
    root = fs.metadata(None)
    assert root.kind == "directory"
    fs.write_file(P("scratch/b.txt"), b"12345", WriteGuard.unchecked())
    fs.create_dir(P("scratch/a"), recursive=False)
    meta = fs.metadata(P("scratch/b.txt"))
    assert (meta.kind, meta.bytes, meta.is_dir) == ("file", 5, False)
    assert meta.modified is not None
    assert fs.metadata(P("scratch/a")).kind == "directory"
    with pytest.raises(NotFound) as info:
        fs.metadata(P("scratch/zzz"))
    assert info.value.message == "workspace path `scratch/zzz` was not found."
    entries = fs.read_dir(P("scratch"), None)
    assert [(e.path, e.metadata.kind) for e in entries] == [
        ("scratch/a", "directory"), ("scratch/b.txt", "file")]
    assert all(isinstance(e, WorkspaceDirectoryEntry) for e in entries)
    # the logical root lists real top-level entries but never the lock file
    assert [e.path for e in fs.read_dir(None, None)] == ["output", "scratch"]
    assert (fs.directory / LOCK_FILE_NAME).exists()
    with pytest.raises(FileIo) as not_dir:
        fs.read_dir(P("scratch/b.txt"), None)
    assert not_dir.value.errno == errno.ENOTDIR


def test_read_dir_rejects_non_utf8_names(fs: WorkspaceFs) -> None:
    raw = os.fsencode(str(fs.directory / "scratch")) + b"/bad-\xff.txt"
    os.close(os.open(raw, os.O_WRONLY | os.O_CREAT, 0o644))
    with pytest.raises(InvalidData, match="not UTF-8"):
        fs.read_dir(P("scratch"), None)


def test_list_files_order_depth_and_single_file(fs: WorkspaceFs) -> None:
    for path in ("scratch/z.md", "scratch/b/c/d/e.md", "scratch/b/x.md", "scratch/a/y.md"):
        fs.write_text(P(path), "x", WriteGuard.unchecked())
    listing = fs.list_files(P("scratch"), 2, 100)
    assert listing.entries == [
        WorkspaceEntry("scratch/a", "directory"),
        WorkspaceEntry("scratch/b", "directory"),
        WorkspaceEntry("scratch/b/c", "directory"),
        WorkspaceEntry("scratch/a/y.md", "file"),
        WorkspaceEntry("scratch/b/x.md", "file"),
        WorkspaceEntry("scratch/z.md", "file"),
    ]
    assert not listing.truncated
    deep = fs.list_files(P("scratch"), 4, 100)
    assert WorkspaceEntry("scratch/b/c/d/e.md", "file") in deep.entries
    single = fs.list_files(P("scratch/z.md"), 2, 100)
    assert single.entries == [WorkspaceEntry("scratch/z.md", "file")]
    with pytest.raises(NotFound):
        fs.list_files(P("scratch/none"), 2, 100)


def test_write_text_creates_parents_but_not_through_files(fs: WorkspaceFs) -> None:
    fs.write_text(P("scratch/a/b/c.md"), "deep", WriteGuard.must_not_exist())
    assert (fs.directory / "scratch/a/b/c.md").read_text() == "deep"
    fs.write_text(P("scratch/file"), "f", WriteGuard.unchecked())
    before = tree(fs)
    with pytest.raises(FileIo) as info:
        fs.write_text(P("scratch/file/x/y.md"), "no", WriteGuard.unchecked())
    assert info.value.errno == errno.ENOTDIR
    assert tree(fs) == before


def test_a_refused_guard_creates_no_parents(fs: WorkspaceFs) -> None:
    with pytest.raises(WriteConflict) as info:
        fs.write_text(P("scratch/new/dir/a.md"), "x", WriteGuard.must_match_sha256("0" * 64))
    assert (info.value.kind, info.value.actual_sha256) == ("stale", None)
    assert not (fs.directory / "scratch/new").exists()
    fs.append_text(P("scratch/made/for/log.md"), "x", parents=True)
    assert fs.read_text(P("scratch/made/for/log.md")).text == "x"
    with pytest.raises(NotFound):
        fs.append_text(P("scratch/not/made/log.md"), "x")
    assert not (fs.directory / "scratch/not").exists()


def test_write_file_needs_the_parent(fs: WorkspaceFs) -> None:
    with pytest.raises(NotFound) as info:
        fs.write_file(P("scratch/nodir/a.md"), b"x", WriteGuard.unchecked())
    assert info.value.message == "workspace path `scratch/nodir` was not found."
    assert not (fs.directory / "scratch/nodir").exists()
    with pytest.raises(NotFound):
        fs.copy_file(P("scratch/none"), P("scratch/x"))
    fs.write_file(P("scratch/a"), b"a", WriteGuard.unchecked())
    with pytest.raises(NotFound):
        fs.copy_file(P("scratch/a"), P("scratch/nodir/x"))
    assert not (fs.directory / "scratch/nodir").exists()


def test_create_dir_and_remove(fs: WorkspaceFs) -> None:
    fs.create_dir(P("scratch/a"), recursive=False)
    with pytest.raises(FileIo) as exists:
        fs.create_dir(P("scratch/a"), recursive=False)
    assert exists.value.errno == errno.EEXIST
    with pytest.raises(NotFound):
        fs.create_dir(P("scratch/x/y"), recursive=False)
    fs.create_dir(P("scratch/a/b/c"), recursive=True)
    fs.create_dir(P("scratch/a/b/c"), recursive=True)  # mkdir -p is idempotent
    fs.write_file(P("scratch/a/b/c/f.md"), b"f", WriteGuard.unchecked())
    with pytest.raises(FileIo) as not_empty:
        fs.remove(P("scratch/a"), recursive=False)
    assert not_empty.value.errno == errno.ENOTEMPTY
    assert (fs.directory / "scratch/a/b/c/f.md").exists()
    fs.remove(P("scratch/a/b/c/f.md"), recursive=False)
    fs.remove(P("scratch/a/b/c"), recursive=False)
    fs.remove(P("scratch/a"), recursive=True)
    assert not (fs.directory / "scratch/a").exists()
    with pytest.raises(NotFound):
        fs.remove(P("scratch/a"), recursive=True)


def test_rename_and_copy(fs: WorkspaceFs) -> None:
    fs.write_text(P("scratch/d/a.md"), "A", WriteGuard.unchecked())
    fs.write_text(P("output/b.md"), "B", WriteGuard.unchecked())
    fs.rename(P("scratch/d"), P("scratch/e"))
    assert fs.read_text(P("scratch/e/a.md")).text == "A"
    assert not fs.exists(P("scratch/d"))
    fs.rename(P("scratch/e/a.md"), P("output/b.md"))  # replaces the exact target
    assert fs.read_text(P("output/b.md")).text == "A"
    with pytest.raises(NotFound):
        fs.rename(P("scratch/e/a.md"), P("scratch/x.md"))
    with pytest.raises(InvalidData, match="into itself"):
        fs.rename(P("scratch/e"), P("scratch/e/inner"))
    assert fs.exists(P("scratch/e"))
    fs.copy_file(P("output/b.md"), P("scratch/c.md"))
    fs.copy_file(P("output/b.md"), P("scratch/c.md"))
    assert fs.read_text(P("scratch/c.md")).text == "A"
    assert fs.read_text(P("output/b.md")).text == "A"


def test_atomic_writes_leave_no_temporary_files(fs: WorkspaceFs) -> None:
    for i in range(5):
        fs.write_file(P("scratch/a.md"), f"v{i}".encode(), WriteGuard.unchecked())
    fs.copy_file(P("scratch/a.md"), P("scratch/b.md"))
    longest = "n" * 255  # NAME_MAX: the staged temporary name must not be longer
    fs.write_file(P(f"scratch/{longest}"), b"x", WriteGuard.unchecked())
    fs.write_file(P(f"scratch/{longest}"), b"y", WriteGuard.must_match_sha256(sha256_hex(b"x")))
    assert fs.read_file(P(f"scratch/{longest}"), None) == b"y"
    assert sorted(os.listdir(fs.directory / "scratch")) == ["a.md", "b.md", longest]


def test_os_errors_are_storage_errors(fs: WorkspaceFs) -> None:
    """A name over NAME_MAX is refused by the OS: a ``FileIo`` error, never a raw OSError."""
    too_long = P("scratch/" + "n" * 256)
    for attempt in (
        lambda: fs.read_file(too_long, None),
        lambda: fs.write_file(too_long, b"x", WriteGuard.unchecked()),
        lambda: fs.write_text(P(f"scratch/{'d' * 256}/x.md"), "x", WriteGuard.unchecked()),
        lambda: fs.append_file(too_long, b"x"),
        lambda: fs.metadata(too_long),
        lambda: fs.create_dir(too_long, recursive=True),
        lambda: fs.remove(too_long, recursive=True),
        lambda: fs.rename(P("scratch"), too_long),
    ):
        with pytest.raises(FileIo) as info:
            attempt()
        assert info.value.errno == errno.ENAMETOOLONG
    assert os.listdir(fs.directory / "scratch") == []


def test_readers_see_old_or_new_never_a_mix(fs: WorkspaceFs) -> None:
    old, new = b"o" * (1 << 20), b"n" * (1 << 20)
    fs.write_file(P("scratch/big"), old, WriteGuard.unchecked())
    seen: set[bytes] = set()
    done = threading.Event()

    def reader() -> None:
        while not done.is_set():
            seen.add(fs.read_file(P("scratch/big"), None))

    threads = [threading.Thread(target=reader) for _ in range(2)]
    for t in threads:
        t.start()
    for i in range(20):
        fs.write_file(P("scratch/big"), new if i % 2 == 0 else old, WriteGuard.unchecked())
    done.set()
    for t in threads:
        t.join()
    assert seen <= {old, new}
    assert seen


# --- locking ---------------------------------------------------------------------------------


def _try_flock(path: Path, mode: int) -> bool:
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(fd, mode | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


def test_lock_is_shared_for_reads_and_exclusive_for_writes(fs: WorkspaceFs) -> None:
    lock_path = fs.directory / LOCK_FILE_NAME
    with fs.lock.shared():
        assert _try_flock(lock_path, fcntl.LOCK_SH)
        assert not _try_flock(lock_path, fcntl.LOCK_EX)
        # a reader of another handle (another thread, another process) is not blocked
        other = WorkspaceFs(fs.directory)
        assert other.read_dir(None, None)
    with fs.lock.exclusive():
        assert not _try_flock(lock_path, fcntl.LOCK_SH)
    assert _try_flock(lock_path, fcntl.LOCK_EX)


def test_a_write_waits_for_readers_holding_the_lock(fs: WorkspaceFs) -> None:
    written = threading.Event()

    def write() -> None:
        fs.write_file(P("scratch/w.md"), b"w", WriteGuard.unchecked())
        written.set()

    with fs.lock.shared():
        writer = threading.Thread(target=write)
        writer.start()
        assert not written.wait(0.3)
        assert not (fs.directory / "scratch/w.md").exists()
    writer.join()
    assert written.is_set()
    assert fs.read_file(P("scratch/w.md"), None) == b"w"


def _replace_in_two_holds(fs: WorkspaceFs, path: WorkspacePath, text: str,
                          sha256: str | None) -> str:
    """What ``workspace.write_file`` did before ``replace_text``: a look, then a guarded
    write in a second hold of the lock."""
    try:
        existing = fs.metadata(path)
    except NotFound:
        return fs.write_text(path, text, WriteGuard.must_not_exist())
    if existing.is_dir:
        raise PathIsDirectory(path.text)
    if sha256 is None:
        raise WriteConflict(path.text, "already_exists")
    return fs.write_text(path, text, WriteGuard.must_match_sha256(sha256))


def _outcome(action: Callable[[], str], fs: WorkspaceFs
             ) -> tuple[object, dict[str, bytes | None]]:
    try:
        result: object = action()
    except (WriteConflict, PathIsDirectory, InvalidData, FileIo) as exc:
        result = (type(exc).__name__, str(exc), getattr(exc, "kind", None))
    fifo = fs.directory / "scratch/fifo"
    os.unlink(fifo)  # never read by the snapshot (it would wait for a writer)
    return result, tree(fs)


@pytest.mark.parametrize("case", [
    "missing", "missing-parents", "missing-with-record", "match", "stale", "no-record",
    "directory", "file-as-parent", "symlink", "symlinked-parent", "fifo",
])
def test_replace_text_matches_a_look_then_a_guarded_write(tmp_path: Path, outside: Path,
                                                          case: str) -> None:
    """``replace_text`` (one hold) gives the same digest or error, and leaves the same tree,
    as a look followed by a guarded write, in every case of the replace."""
    outcomes = []
    for name, replace in (("one", WorkspaceFs.replace_text), ("two", _replace_in_two_holds)):
        fs = WorkspaceFs(tmp_path / name)
        fs.write_text(P("scratch/a.md"), "old", WriteGuard.unchecked())
        fs.create_dir(P("scratch/dir"), recursive=False)
        os.symlink(outside / "secret.md", fs.directory / "scratch/link.md")
        os.symlink(outside, fs.directory / "scratch/out")
        os.mkfifo(fs.directory / "scratch/fifo")
        path, sha = {
            "missing": ("scratch/new.md", None),
            "missing-parents": ("scratch/x/y/new.md", None),
            "missing-with-record": ("scratch/new.md", sha256_hex(b"gone")),
            "match": ("scratch/a.md", sha256_hex(b"old")),
            "stale": ("scratch/a.md", sha256_hex(b"other")),
            "no-record": ("scratch/a.md", None),
            "directory": ("scratch/dir", sha256_hex(b"old")),
            "file-as-parent": ("scratch/a.md/b.md", None),
            "symlink": ("scratch/link.md", sha256_hex(b"alpha secret")),
            "symlinked-parent": ("scratch/out/secret.md", sha256_hex(b"alpha secret")),
            "fifo": ("scratch/fifo", None),
        }[case]
        outcomes.append(_outcome(functools.partial(replace, fs, P(path), "new", sha), fs))
    assert outcomes[0] == outcomes[1]
    assert (outside / "secret.md").read_text() == "alpha secret"


def test_replace_text_without_a_read_refuses_before_reading(
        fs: WorkspaceFs, monkeypatch: pytest.MonkeyPatch) -> None:
    """With no digest to compare, an existing file is refused without being read (as the
    tool's look refused it before): a file the port could not read is refused the same way."""
    fs.write_text(P("scratch/a.md"), "old", WriteGuard.unchecked())

    def unreadable(*args: object, **kwargs: object) -> str:
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(atomic, "digest_regular", unreadable)
    with pytest.raises(WriteConflict) as info:
        fs.replace_text(P("scratch/a.md"), "new", None)
    assert (info.value.kind, info.value.actual_sha256) == ("already_exists", None)
    with pytest.raises(FileIo):  # a digest to compare needs the read
        fs.replace_text(P("scratch/a.md"), "new", sha256_hex(b"old"))
    assert (fs.directory / "scratch/a.md").read_bytes() == b"old"


# --- containment and node types -----------------------------------------------------------------



def _outside_state(outside: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(outside.iterdir())}


def test_symlinked_files_are_refused(fs: WorkspaceFs, outside: Path) -> None:
    os.symlink(outside / "secret.md", fs.directory / "scratch/link.md")
    fs.write_file(P("output/real.md"), b"real", WriteGuard.unchecked())
    before = _outside_state(outside)
    link = P("scratch/link.md")
    attempts = [
        lambda: fs.read_file(link, None),
        lambda: fs.read_text(link),
        lambda: fs.metadata(link),
        lambda: fs.digest(link),
        lambda: fs.write_file(link, b"pwned", WriteGuard.unchecked()),
        lambda: fs.write_text(link, "pwned", WriteGuard.unchecked()),
        lambda: fs.replace_text(link, "pwned", None),
        lambda: fs.replace_text(link, "pwned", sha256_hex(b"alpha secret")),
        lambda: fs.append_file(link, b"pwned"),
        lambda: fs.append_text(link, "pwned"),
        lambda: fs.copy_file(link, P("scratch/copy.md")),
        lambda: fs.copy_file(P("output/real.md"), link),
        lambda: fs.rename(P("output/real.md"), link),
        lambda: fs.rename(link, P("scratch/moved.md")),
        lambda: fs.remove(link, recursive=False),
        lambda: fs.read_dir(P("scratch"), None),
        lambda: fs.list_files(link, 2, 100),
    ]
    for attempt in attempts:
        with pytest.raises(InvalidData) as info:
            attempt()
        assert info.value.message == UNSUPPORTED_NODE
    assert _outside_state(outside) == before
    assert fs.read_file(P("output/real.md"), None) == b"real"
    # a listing from above it skips the link and reports it (see the refused-entry tests)
    assert fs.list_files(P("scratch"), 2, 100).refused == [
        WorkspaceRefusedEntry("scratch/link.md", "symlink")]
    assert os.path.islink(fs.directory / "scratch/link.md")
    assert sorted(os.listdir(fs.directory / "scratch")) == ["link.md"]


def test_symlinked_directories_are_refused(fs: WorkspaceFs, outside: Path) -> None:
    os.symlink(outside, fs.directory / "scratch/out")
    before = _outside_state(outside)
    attempts = [
        lambda: fs.read_file(P("scratch/out/secret.md"), None),
        lambda: fs.write_file(P("scratch/out/secret.md"), b"x", WriteGuard.unchecked()),
        lambda: fs.write_file(P("scratch/out/new.md"), b"x", WriteGuard.unchecked()),
        lambda: fs.write_text(P("scratch/out/a/b.md"), "x", WriteGuard.unchecked()),
        lambda: fs.replace_text(P("scratch/out/a/b.md"), "x", None),
        lambda: fs.replace_text(P("scratch/out/secret.md"), "x",
                                sha256_hex(b"alpha secret")),
        lambda: fs.append_file(P("scratch/out/new.md"), b"x"),
        lambda: fs.create_dir(P("scratch/out/d"), recursive=False),
        lambda: fs.create_dir(P("scratch/out/d/e"), recursive=True),
        lambda: fs.remove(P("scratch/out/secret.md"), recursive=False),
        lambda: fs.remove(P("scratch/out"), recursive=True),
        lambda: fs.remove(P("scratch"), recursive=True),
        lambda: fs.rename(P("scratch/out/secret.md"), P("scratch/s.md")),
        lambda: fs.read_dir(P("scratch/out"), None),
        lambda: fs.copy_file(P("scratch/out/secret.md"), P("output/s.md")),
    ]
    for attempt in attempts:
        with pytest.raises(InvalidData) as info:
            attempt()
        assert info.value.message == UNSUPPORTED_NODE
    assert _outside_state(outside) == before
    assert (fs.directory / "scratch").is_dir()
    assert not (fs.directory / "output/s.md").exists()


def test_a_symlinked_root_is_refused(fs: WorkspaceFs, outside: Path) -> None:
    os.rmdir(fs.directory / "output")
    os.symlink(outside, fs.directory / "output")
    with pytest.raises(InvalidData, match=UNSUPPORTED_NODE):
        fs.write_file(P("output/secret.md"), b"x", WriteGuard.unchecked())
    with pytest.raises(InvalidData, match=UNSUPPORTED_NODE):
        fs.read_file(P("output/secret.md"), None)
    assert (outside / "secret.md").read_text() == "alpha secret"


def test_special_files_are_refused(fs: WorkspaceFs) -> None:
    os.mkfifo(fs.directory / "scratch/fifo")
    for attempt in (
        lambda: fs.read_file(P("scratch/fifo"), None),
        lambda: fs.write_file(P("scratch/fifo"), b"x", WriteGuard.unchecked()),
        lambda: fs.replace_text(P("scratch/fifo"), "x", None),
        lambda: fs.append_file(P("scratch/fifo"), b"x"),
        lambda: fs.read_dir(P("scratch"), None),
    ):
        with pytest.raises(InvalidData, match=UNSUPPORTED_NODE):
            attempt()


def test_scans_and_listings_report_planted_nodes_as_refused(fs: WorkspaceFs,
                                                            outside: Path) -> None:
    """A planted FIFO or symlink is skipped by scans and listings and reported as a
    refused entry; reading it or starting a listing at it still fails."""
    scratch = fs.directory / "scratch"
    os.mkfifo(scratch / "pipe")
    os.symlink(outside / "secret.md", scratch / "link.md")
    os.symlink(outside, scratch / "out")
    fs.write_text(P("scratch/a.md"), "a", WriteGuard.unchecked())
    fs.write_text(P("scratch/d/b.md"), "b", WriteGuard.unchecked())
    os.mkfifo(scratch / "d" / "deep.fifo")
    scan = fs.scan_dir(P("scratch"), None)
    assert [(e.path, e.metadata.kind) for e in scan.entries] == [
        ("scratch/a.md", "file"), ("scratch/d", "directory")]
    assert scan.refused == [WorkspaceRefusedEntry("scratch/link.md", "symlink"),
                            WorkspaceRefusedEntry("scratch/out", "symlink"),
                            WorkspaceRefusedEntry("scratch/pipe", "fifo")]
    assert [e.to_json() for e in scan.refused][2] == {"path": "scratch/pipe", "node": "fifo"}
    with pytest.raises(InvalidData, match=UNSUPPORTED_NODE):
        fs.read_dir(P("scratch"), None)
    with pytest.raises(InvalidData, match="Workspace directory exceeds 4 entries: scratch"):
        fs.scan_dir(P("scratch"), 4)  # refused children count towards the bound
    listing = fs.list_files(None, 3, 100)
    assert [e.path for e in listing.entries] == [
        "output", "scratch", "scratch/d", "scratch/a.md", "scratch/d/b.md"]
    assert listing.truncated is False
    assert listing.refused == [WorkspaceRefusedEntry("scratch/d/deep.fifo", "fifo"),
                               WorkspaceRefusedEntry("scratch/link.md", "symlink"),
                               WorkspaceRefusedEntry("scratch/out", "symlink"),
                               WorkspaceRefusedEntry("scratch/pipe", "fifo")]
    bounded = fs.list_files(P("scratch"), 1, 3)  # a.md, d, link.md fill the bound
    assert ([e.path for e in bounded.entries], bounded.refused, bounded.truncated) == (
        ["scratch/d", "scratch/a.md"], [WorkspaceRefusedEntry("scratch/link.md", "symlink")],
        True)
    for start in ("scratch/pipe", "scratch/out", "scratch/out/secret.md"):
        with pytest.raises(InvalidData, match=UNSUPPORTED_NODE):
            fs.list_files(P(start), 2, 100)
    assert _outside_state(outside) == {"secret.md": b"alpha secret"}


def _stat(mode: int, links: int = 1) -> os.stat_result:
    return os.stat_result((mode, 0, 0, links, 0, 0, 0, 0, 0, 0))


def test_refused_node_kinds() -> None:
    assert [refused_node(_stat(mode)) for mode in (
        stat.S_IFREG, stat.S_IFDIR, stat.S_IFLNK, stat.S_IFIFO, stat.S_IFSOCK, stat.S_IFBLK,
        stat.S_IFCHR, 0)] == [None, None, "symlink", "fifo", "socket", "block_device",
                              "char_device", "unknown"]
    assert refused_node(_stat(stat.S_IFREG, links=2)) == "hard_link"
    assert refused_node(_stat(stat.S_IFDIR, links=5)) is None


def test_a_symlinked_workspace_directory_is_resolved(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    os.symlink(real, tmp_path / "alias")
    fs = WorkspaceFs(tmp_path / "alias")
    fs.create_dir(P("scratch"), recursive=False)
    fs.write_file(P("scratch/a.md"), b"a", WriteGuard.unchecked())
    assert (real / "scratch/a.md").read_bytes() == b"a"


def test_mkdir_reports_the_directories_it_made(fs: WorkspaceFs) -> None:
    from tavernlab.workspace.roots import Policy
    from tavernlab.workspace.scope import ScopedWorkspaceFs
    from tavernlab.workspace.storage._changes import FsChange

    seen: list[FsChange] = []
    fs.observer = seen.append
    assert fs.create_dir(P("scratch/a/b/c"), recursive=True) == [
        "scratch/a", "scratch/a/b", "scratch/a/b/c"]
    assert fs.create_dir(P("scratch/a/b"), recursive=True) == []
    assert fs.create_dir(P("scratch/n"), recursive=False) == ["scratch/n"]
    assert [c.path for c in seen] == ["scratch/a", "scratch/a/b", "scratch/a/b/c", "scratch/n"]
    view = ScopedWorkspaceFs(fs, Policy.from_profile(["scratch"], ["scratch"]))
    view.create_dir(P("scratch/x/y"), recursive=True)
    view.create_dir(P("scratch/x"), recursive=True)
    assert view.tracker.touched == {"scratch/x", "scratch/x/y"}
    assert view.tracker.candidate is None and not view.tracker.changed
