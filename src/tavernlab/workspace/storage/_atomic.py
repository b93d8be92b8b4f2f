"""The byte operations of the storage port on host paths it has already checked: atomic
publication (temporary file + rename; the port stages its temporary files in a folder of the
workspace that is never a visible root, so a killed writer's leftover is never listed, read
or published), appends that never change a file another name
shares, and bounded reads (docs/workspace.md).

This module is also the one place where any file of tavernlab is written whole: the run
records (:func:`publish`, :func:`create_new`, :func:`create_in_place` with a
:func:`writer_temp` name), the skill repository's index and plans, and the user's artefacts
and salvaged work (:func:`replace_durably`, :func:`sync`). Two fsync policies, no more: what
the workspace and the run records write is flushed (as upstream does), what is handed to the
user is fsynced.

A file the lab hard-linked from a persist state (:class:`~tavernlab.workspace.storage._containment.
LabLinks`) shares its bytes with that published state, which must never change. Replacing it
is safe (the rename gives the path a new inode); an append is the one in-place write the port
makes, so an append to a file with more than one link first copies it: the old bytes and the
new ones go to a temporary sibling that is renamed over the path (the append is then atomic
too). Every other append is a native ``O_APPEND`` write.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import itertools
import os
import secrets
import stat
from collections.abc import Callable

#: Prefix of the staged temporary file of an atomic write (in the target's directory).
TEMP_PREFIX = ".tavernlab-tmp-"

_STEM = secrets.token_hex(8)
_COUNTER = itertools.count()
#: This process's id, as :func:`writer_temp` names it (kept: ``getpid`` is a system call).
_PID = os.getpid()


def _new_stem() -> None:
    global _STEM, _COUNTER, _PID
    _STEM, _COUNTER, _PID = secrets.token_hex(8), itertools.count(), os.getpid()


os.register_at_fork(after_in_child=_new_stem)


def unique_hex() -> str:
    """32 hex digits no other call of this process (or of any other, but by chance) gets: a
    random stem per process and a counter (cheaper than a UUID per temporary file)."""
    return f"{_STEM}{next(_COUNTER):016x}"


def temp_sibling(target: str) -> str:
    """A fresh temporary name in ``target``'s directory: :data:`TEMP_PREFIX` and 32 hex
    digits (a fixed length, so any target name the OS accepts can be published; random per
    process, counted within it)."""
    return f"{target.rpartition('/')[0]}/{TEMP_PREFIX}{_STEM}{next(_COUNTER):016x}"


def staged(staging: str) -> str:
    """A fresh temporary name in the folder ``staging``: :data:`TEMP_PREFIX` and 32 hex
    digits, as :func:`temp_sibling` gives."""
    return f"{staging}/{TEMP_PREFIX}{_STEM}{next(_COUNTER):016x}"


def writer_temp(target: str | os.PathLike[str], staging: str | os.PathLike[str] | None = None
                ) -> str:
    """A temporary name for a record's new bytes, written without the workspace lock:
    ``.<name>.tmp-<pid>-<32 hex>`` in the folder ``staging`` when given, else beside
    ``target`` (the writer's process id lets a cleaner tell a dead writer's leftover from a
    live write)."""
    path = os.fspath(target)
    folder, _, name = path.rpartition("/")
    place = os.fspath(staging) if staging is not None else folder or "."
    return f"{place}/.{name}.tmp-{_PID}-{_STEM}{next(_COUNTER):016x}"


def publish(target: str | os.PathLike[str], data: bytes, *,
            staging: str | os.PathLike[str] | None = None, temp: str | None = None,
            parents: bool = False) -> None:
    """Write ``data`` to a temporary file, flush it (never fsync: upstream "flushes") and
    rename it over ``target``; readers see the old bytes or the new ones. The temporary file
    is made in the folder ``staging`` when given (one the model never sees, on the same file
    system: a workspace's own; made on the first write), else beside ``target``. ``temp``
    names it instead: a name the caller owns (a fresh :func:`writer_temp`, or a fixed name
    under the caller's lock, where a killed writer's leftover file is overwritten and a
    folder in its way fails the write and stays). ``parents`` creates the missing folders of
    ``target`` and of the temporary file. A failure removes the temporary file and leaves
    ``target`` as it was."""
    path = _dotted(target)
    _replace(path, data, 0o644, durable=False, temp=_temp(path, staging, temp),
             make_dirs=parents or staging is not None, parents=parents,
             owned=temp is not None)


def replace_durably(target: str | os.PathLike[str], data: bytes, mode: int = 0o644, *,
                    parents: bool = False) -> None:
    """Write a whole file the way a user's artefact should be written (a replay bundle, a
    notebook, a cached kit module, a migrated script, a salvaged patch): to a temporary
    sibling with ``mode``, fsynced, then renamed over ``target``; a failure removes the
    temporary file and leaves ``target`` as it was. Unlike :func:`publish` (the workspace
    port, which flushes as upstream does) this survives a crash right after it returns (with
    :func:`sync` of the folder for the name itself). ``parents`` creates the missing
    folders of ``target``."""
    path = _dotted(target)
    _replace(path, data, mode, durable=True, temp=temp_sibling(path), make_dirs=parents,
             parents=parents, owned=False)


def create_new(target: str | os.PathLike[str], data: bytes, *,
               staging: str | os.PathLike[str] | None = None, temp: str | None = None,
               parents: bool = False) -> None:
    """Create ``target`` holding ``data``, whole, or raise ``FileExistsError`` when it exists
    (left as it is): the must-not-exist write. The bytes go to a temporary file (placed as
    :func:`publish` places it, flushed, never fsynced) that is hard-linked at ``target``, so
    a reader never sees part of the new file; the temporary file is then removed.
    ``parents`` creates the missing folders of ``target`` and of the temporary file."""
    path = _dotted(target)
    temp_path = _temp(path, staging, temp)
    _write_temp(temp_path, data, 0o644, durable=False, make_dirs=parents or staging is not None,
                owned=False)
    try:
        _place(os.link, temp_path, path, parents=parents)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(temp_path)


def create_in_place(target: str | os.PathLike[str], data: bytes, *,
                    parents: bool = False) -> None:
    """Create ``target`` exclusively and write ``data`` into it (no temporary file: for a
    file that is normally new, where a reader may briefly see it short), or raise
    ``FileExistsError`` when it exists. ``parents`` creates its missing folders."""
    fd = _open_new(_dotted(target), 0o644, make_dirs=parents)
    try:
        _write_all(fd, data)
    finally:
        os.close(fd)


def sync(target: str | os.PathLike[str]) -> None:
    """fsync the file or folder ``target`` (a folder: so the names written in it survive a
    crash); a folder that cannot be opened is passed over."""
    try:
        fd = os.open(target, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        if os.path.isdir(target):
            return
        raise
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _dotted(target: str | os.PathLike[str]) -> str:
    path = os.fspath(target)
    return path if "/" in path else f"./{path}"


def _temp(target: str, staging: str | os.PathLike[str] | None, temp: str | None) -> str:
    if temp is not None:
        return temp
    return temp_sibling(target) if staging is None else staged(os.fspath(staging))


_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_OWNED = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC


def _open_new(path: str, mode: int, *, make_dirs: bool, owned: bool = False) -> int:
    """A descriptor of the new file ``path`` (``O_EXCL``; truncated instead when the caller
    ``owned`` the name); ``make_dirs`` creates its folder when it is missing."""
    flags = _OWNED if owned else _NEW
    try:
        return os.open(path, flags, mode)
    except FileNotFoundError:
        if not make_dirs:
            raise
        os.makedirs(os.path.dirname(path), exist_ok=True)
        return os.open(path, flags, mode)


def _write_temp(temp: str, data: bytes, mode: int, *, durable: bool, make_dirs: bool,
                owned: bool) -> None:
    """Write ``data`` to the new temporary file ``temp`` (fsynced when ``durable``, with
    ``mode`` exactly); a failure after it was made removes it."""
    fd = _open_new(temp, mode, make_dirs=make_dirs, owned=owned)
    try:
        try:
            if durable:
                os.fchmod(fd, mode)  # not narrowed by the umask
            _write_all(fd, data)
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def _place(move: Callable[[str, str], None], temp: str, target: str, *, parents: bool) -> None:
    """``move(temp, target)`` (a rename or a hard link), creating ``target``'s missing
    folders first when ``parents`` and the first try found none."""
    try:
        move(temp, target)
    except FileNotFoundError:
        if not parents:
            raise
        os.makedirs(os.path.dirname(target), exist_ok=True)
        move(temp, target)


def _replace(target: str, data: bytes, mode: int, *, durable: bool, temp: str,
             make_dirs: bool, parents: bool, owned: bool) -> None:
    _write_temp(temp, data, mode, durable=durable, make_dirs=make_dirs, owned=owned)
    try:
        _place(os.replace, temp, target, parents=parents)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def append(target: str, data: bytes, *, shared: bool, old: bytes | None = None,
           staging: str | None = None) -> None:
    """Append ``data`` to ``target`` (created if missing, never through a final symlink).
    ``shared`` says the file has other links: then its bytes are copied first (``old``, when
    the caller already read them) and the result is published under the path (staged in
    ``staging``, see :func:`publish`)."""
    if shared:
        if old is None:
            old = read_all(target)
        publish(target, old + data, staging=staging)
        return
    fd = os.open(target, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
                 0o644)
    try:
        _write_all(fd, data)
    finally:
        os.close(fd)


class NotRegularFile(OSError):
    """A path meant to be read is not a regular file (a FIFO, socket, device or directory):
    it is refused before anything waits on it."""

    def __init__(self, target: str | os.PathLike[str]) -> None:
        super().__init__(errno.EINVAL, "Not a regular file", os.fspath(target))


def open_regular(target: str | os.PathLike[str], *, follow: bool = False) -> int:
    """A read-only descriptor of the regular file ``target``, or :class:`NotRegularFile`.

    Opening never waits: the open is ``O_NONBLOCK`` (a FIFO opens at once instead of waiting
    for a writer) and the opened node is checked with ``fstat`` before anything is read, so
    a node swapped for a FIFO or a device after an earlier ``lstat`` is refused too. A final
    symlink is refused unless ``follow`` (``ELOOP``)."""
    flags = os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK | (0 if follow else os.O_NOFOLLOW)
    fd = os.open(target, flags)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotRegularFile(target)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_regular(target: str | os.PathLike[str], limit: int | None = None, *,
                 follow: bool = False) -> bytes:
    """The bytes of the regular file ``target`` (see :func:`open_regular`); more than
    ``limit`` bytes raises ``OSError(EFBIG)`` (nothing beyond ``limit + 1`` is read)."""
    data = read_all(target, 0, limit, follow=follow)
    if limit is not None and len(data) > limit:
        raise OSError(errno.EFBIG, f"File is larger than {limit} bytes", os.fspath(target))
    return data


def read_all(target: str | os.PathLike[str], size_hint: int = 0, limit: int | None = None,
             *, follow: bool = False) -> bytes:
    """The bytes of the regular file ``target`` (never through a final symlink unless
    ``follow``; anything but a regular file is :class:`NotRegularFile`, refused without
    waiting). ``size_hint`` is its size when it was checked: the read is sized by it (plus
    one byte, which detects a file that grew since); ``limit`` bounds what is read (the
    caller refuses more)."""
    fd = open_regular(target, follow=follow)
    try:
        want = size_hint + 1 if limit is None else min(size_hint, limit) + 1
        parts = [os.read(fd, want)]
        if len(parts[0]) == want:  # it grew: read on (up to the bound)
            total = want
            while limit is None or total <= limit:
                chunk = os.read(fd, 1 << 20 if limit is None else min(1 << 20, limit + 1 - total))
                if not chunk:
                    break
                parts.append(chunk)
                total += len(chunk)
        return b"".join(parts) if len(parts) > 1 else parts[0]
    finally:
        os.close(fd)


def digest_regular(target: str | os.PathLike[str], size_hint: int = 0) -> str:
    """The SHA-256 (lowercase hex) of the regular file ``target`` (opened as
    :func:`read_all` opens it), read to its end whatever its size. ``size_hint`` is its size
    when it was checked: a file of at most :data:`DIGEST_CHUNK` bytes is read in one
    ``read`` (plus one byte, which detects a file that grew since), a larger one is streamed
    in chunks of that size, never held whole."""
    fd = open_regular(target)
    try:
        want = min(size_hint, DIGEST_CHUNK) + 1
        chunk = os.read(fd, want)
        digest = hashlib.sha256(chunk)
        if len(chunk) == want:  # more to come (or it grew): stream the rest
            while chunk := os.read(fd, DIGEST_CHUNK):
                digest.update(chunk)
        return digest.hexdigest()
    finally:
        os.close(fd)


#: The largest read :func:`digest_regular` makes at once (1 MiB).
DIGEST_CHUNK = 1 << 20


def _write_all(fd: int, data: bytes) -> None:
    written = os.write(fd, data) if data else 0
    if written < len(data):  # a short write is continued, which raises what cut it short
        view = memoryview(data)[written:]
        while view:
            view = view[os.write(fd, view):]
