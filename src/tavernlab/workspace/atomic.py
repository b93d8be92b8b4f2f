"""The byte operations of the storage port on host paths it has already checked: atomic
publication (temporary sibling + rename), appends that never change a file another name
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
import itertools
import os
import secrets

#: Prefix of the staged temporary file of an atomic write (in the target's directory).
TEMP_PREFIX = ".tavernlab-tmp-"

_STEM = secrets.token_hex(8)
_COUNTER = itertools.count()


def _new_stem() -> None:
    global _STEM, _COUNTER
    _STEM, _COUNTER = secrets.token_hex(8), itertools.count()


os.register_at_fork(after_in_child=_new_stem)


def temp_sibling(target: str) -> str:
    """A fresh temporary name in ``target``'s directory: :data:`TEMP_PREFIX` and 32 hex
    digits (a fixed length, so any target name the OS accepts can be published; random per
    process, counted within it)."""
    return f"{target.rpartition('/')[0]}/{TEMP_PREFIX}{_STEM}{next(_COUNTER):016x}"


def publish(target: str, data: bytes) -> None:
    """Write ``data`` to a temporary sibling, flush it (never fsync: upstream "flushes") and
    rename it over ``target``; readers see the old bytes or the new ones."""
    _replace(target, data, 0o644, durable=False)


def replace_durably(target: str | os.PathLike[str], data: bytes, mode: int = 0o644) -> None:
    """Write a whole file the way a user's artefact should be written (a replay bundle, a
    notebook, a cached kit module, a migrated script): to a temporary sibling with ``mode``,
    fsynced, then renamed over ``target``; a failure removes the temporary file and leaves
    ``target`` as it was. Unlike :func:`publish` (the workspace port, which flushes as
    upstream does) this survives a crash right after it returns."""
    path = os.fspath(target)
    _replace(path if "/" in path else f"./{path}", data, mode, durable=True)


def _replace(target: str, data: bytes, mode: int, *, durable: bool) -> None:
    temp = temp_sibling(target)
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, mode)
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


def append(target: str, data: bytes, *, shared: bool, old: bytes | None = None) -> None:
    """Append ``data`` to ``target`` (created if missing, never through a final symlink).
    ``shared`` says the file has other links: then its bytes are copied first (``old``, when
    the caller already read them) and the result is published under the path."""
    if shared:
        if old is None:
            old = read_all(target)
        publish(target, old + data)
        return
    fd = os.open(target, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
                 0o644)
    try:
        _write_all(fd, data)
    finally:
        os.close(fd)


def read_all(target: str, size_hint: int = 0, limit: int | None = None) -> bytes:
    """The bytes of the regular file ``target`` (never through a final symlink). ``size_hint``
    is its size when it was checked: the read is sized by it (plus one byte, which detects a
    file that grew since); ``limit`` bounds what is read (the caller refuses more)."""
    fd = os.open(target, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        want = size_hint + 1 if limit is None else min(size_hint, limit) + 1
        parts = [os.read(fd, want)]
        if len(parts[0]) == want:  # it grew: read on (up to the bound)
            while limit is None or sum(map(len, parts)) <= limit:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    break
                parts.append(chunk)
        return b"".join(parts) if len(parts) > 1 else parts[0]
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
