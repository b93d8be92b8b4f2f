"""The byte operations of the storage port on host paths it has already checked: atomic
publication (temporary file + rename; the port stages its temporary files in a folder of the
workspace that is never a visible root, so a killed writer's leftover is never listed, read
or published), appends that never change a file another name
shares, and bounded reads (docs/workspace.md).

A file the lab hard-linked from a persist state (:class:`~tavernlab.workspace.containment.
LabLinks`) shares its bytes with that published state, which must never change. Replacing it
is safe (the rename gives the path a new inode); an append is the one in-place write the port
makes, so an append to a file with more than one link first copies it: the old bytes and the
new ones go to a temporary sibling that is renamed over the path (the append is then atomic
too). Every other append is a native ``O_APPEND`` write.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import secrets
import stat

#: Prefix of the staged temporary file of an atomic write (in the target's directory).
TEMP_PREFIX = ".tavernlab-tmp-"

_STEM = secrets.token_hex(8)
_COUNTER = itertools.count()


def _new_stem() -> None:
    global _STEM, _COUNTER
    _STEM, _COUNTER = secrets.token_hex(8), itertools.count()


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


def publish(target: str, data: bytes, *, staging: str | None = None) -> None:
    """Write ``data`` to a temporary file, flush it (never fsync: upstream "flushes") and
    rename it over ``target``; readers see the old bytes or the new ones. The temporary file
    is made in the folder ``staging`` when given (one the model never sees, on the same file
    system: a workspace's own), else beside ``target``."""
    _replace(target, data, 0o644, durable=False, staging=staging)


def replace_durably(target: str | os.PathLike[str], data: bytes, mode: int = 0o644) -> None:
    """Write a whole file the way a user's artefact should be written (a replay bundle, a
    notebook, a cached kit module, a migrated script): to a temporary sibling with ``mode``,
    fsynced, then renamed over ``target``; a failure removes the temporary file and leaves
    ``target`` as it was. Unlike :func:`publish` (the workspace port, which flushes as
    upstream does) this survives a crash right after it returns."""
    path = os.fspath(target)
    _replace(path if "/" in path else f"./{path}", data, mode, durable=True)


def _replace(target: str, data: bytes, mode: int, *, durable: bool,
             staging: str | None = None) -> None:
    temp = temp_sibling(target) if staging is None else staged(staging)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(temp, flags, mode)
    except FileNotFoundError:
        if staging is None:
            raise
        os.makedirs(staging, exist_ok=True)  # the first write of the workspace
        fd = os.open(temp, flags, mode)
    try:
        try:
            if durable:
                os.fchmod(fd, mode)  # not narrowed by the umask
            _write_all(fd, data)
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, target)
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


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
