"""A Python filesystem for bashkit, exported through bashkit's stable ``FileSystem.v1`` ABI.

bashkit's Python bindings offer no "Python filesystem" hook, but ``bashkit.FileSystem`` can
import any filesystem published as a ``PyCapsule`` named ``bashkit.FileSystem.v1``: a
``repr(C)`` handle ``{abi_version, instance, retain, release, vtable}`` whose vtable holds one
C function per operation (``read_file``, ``write_file``, ``append_file``, ``mkdir``,
``remove``, ``stat``, ``read_dir``, ``exists``, ``rename``, ``copy``, ``symlink``,
``read_link``, ``chmod`` plus the two ``free_*`` functions for buffers handed to bashkit).
This module implements that vtable with :mod:`ctypes` callbacks that call a Python
:class:`VirtualFilesystem`, so every file operation of the shell (redirections, ``cat``,
``cp``, ``mv``, ``find``, the embedded ``python3``...) goes through one Python object.

Memory rules of the ABI: strings passed *to* us are borrowed for the duration of the call;
byte buffers and directory-entry arrays we return are owned by us until bashkit calls
``free_bytes`` / ``free_dir_entries``, so they are kept alive in a table until then. The
vtable and the callbacks are module-level singletons (they must outlive every interpreter),
and each exported filesystem is an integer ``instance`` id into a registry reference-counted
through ``retain``/``release``.

A callback never lets a Python exception cross the C boundary: a :class:`VfsError` becomes
the matching ABI error kind with its message; anything else is handed to the filesystem's
:meth:`VirtualFilesystem.fault` and reported to bashkit as an ``Other`` error.
"""

from __future__ import annotations

import contextlib
import ctypes
import itertools
import threading
from collections.abc import Callable
from ctypes import (
    CFUNCTYPE,
    POINTER,
    Structure,
    c_bool,
    c_int64,
    c_size_t,
    c_uint8,
    c_uint32,
    c_uint64,
    c_void_p,
)
from typing import Any

import bashkit

from tavernlab.shell._vfs import VfsError, VfsErrorKind, VfsStat, VirtualFilesystem

#: The capsule name and ABI version bashkit 0.20 accepts in ``FileSystem.from_capsule``.
CAPSULE_NAME = b"bashkit.FileSystem.v1"
ABI_VERSION = 1

_STATUS_OK = 0
_STATUS_ERR = 1


# --- the repr(C) types --------------------------------------------------------------------


class _StrRef(Structure):
    _fields_ = (("ptr", c_void_p), ("len", c_size_t))


class _OwnedBytes(Structure):
    _fields_ = (("ptr", c_void_p), ("len", c_size_t))


class _AbiError(Structure):
    _fields_ = (("kind", c_uint32), ("message", _OwnedBytes))


class _Metadata(Structure):
    _fields_ = (
        ("file_type", c_uint8),
        ("_reserved", c_uint8 * 7),
        ("size", c_uint64),
        ("mode", c_uint32),
        ("modified_secs", c_int64),
        ("modified_nanos", c_uint32),
        ("created_secs", c_int64),
        ("created_nanos", c_uint32),
    )


class _DirEntry(Structure):
    _fields_ = (("name", _OwnedBytes), ("metadata", _Metadata))


class _OwnedDirEntries(Structure):
    _fields_ = (("ptr", c_void_p), ("len", c_size_t))


_Err = POINTER(_AbiError)
_ReadFn = CFUNCTYPE(c_uint32, c_void_p, _StrRef, POINTER(_OwnedBytes), _Err)
_WriteFn = CFUNCTYPE(c_uint32, c_void_p, _StrRef, _StrRef, _Err)
_FlagFn = CFUNCTYPE(c_uint32, c_void_p, _StrRef, c_bool, _Err)
_StatFn = CFUNCTYPE(c_uint32, c_void_p, _StrRef, POINTER(_Metadata), _Err)
_ReadDirFn = CFUNCTYPE(c_uint32, c_void_p, _StrRef, POINTER(_OwnedDirEntries), _Err)
_ExistsFn = CFUNCTYPE(c_uint32, c_void_p, _StrRef, POINTER(c_bool), _Err)
_ModeFn = CFUNCTYPE(c_uint32, c_void_p, _StrRef, c_uint32, _Err)
_FreeBytesFn = CFUNCTYPE(None, c_void_p, _OwnedBytes)
_FreeEntriesFn = CFUNCTYPE(None, c_void_p, _OwnedDirEntries)
_InstanceFn = CFUNCTYPE(None, c_void_p)


class _VTable(Structure):
    _fields_ = (
        ("read_file", _ReadFn),
        ("write_file", _WriteFn),
        ("append_file", _WriteFn),
        ("mkdir", _FlagFn),
        ("remove", _FlagFn),
        ("stat", _StatFn),
        ("read_dir", _ReadDirFn),
        ("exists", _ExistsFn),
        ("rename", _WriteFn),
        ("copy", _WriteFn),
        ("symlink", _WriteFn),
        ("read_link", _ReadFn),
        ("chmod", _ModeFn),
        ("free_bytes", _FreeBytesFn),
        ("free_dir_entries", _FreeEntriesFn),
    )


class _Handle(Structure):
    _fields_ = (
        ("abi_version", c_uint32),
        ("_reserved", c_uint32),
        ("instance", c_void_p),
        ("retain", _InstanceFn),
        ("release", _InstanceFn),
        ("vtable", POINTER(_VTable)),
    )


# --- registry of exported filesystems and of buffers lent to bashkit ---------------------------


class _Export:
    """One exported filesystem: the Python object, its handle and its reference count."""

    __slots__ = ("filesystem", "handle", "refs")

    def __init__(self, filesystem: VirtualFilesystem | None, handle: _Handle) -> None:
        self.filesystem = filesystem
        self.handle = handle
        self.refs = 1  # the Python side's own reference, dropped by ExportedFilesystem.close


_EXPORTS: dict[int, _Export] = {}
_EXPORTS_LOCK = threading.Lock()
_IDS = itertools.count(1)
#: Buffers handed to bashkit, by address, until it frees them.
_LENT: dict[int, Any] = {}


def _lend_bytes(data: bytes) -> _OwnedBytes:
    if not data:
        return _OwnedBytes(None, 0)
    buffer = ctypes.create_string_buffer(data, len(data))
    address = ctypes.addressof(buffer)
    _LENT[address] = buffer
    return _OwnedBytes(address, len(data))


def _text(ref: _StrRef) -> str:
    return ctypes.string_at(ref.ptr, ref.len).decode("utf-8") if ref.len else ""


def _data(ref: _StrRef) -> bytes:
    return ctypes.string_at(ref.ptr, ref.len) if ref.len else b""


def _metadata(stat: VfsStat) -> _Metadata:
    meta = _Metadata()
    meta.file_type = 1 if stat.is_dir else 0
    meta.size = stat.size
    meta.mode = stat.mode
    meta.modified_secs = int(stat.modified)
    meta.modified_nanos = int((stat.modified % 1) * 1_000_000_000)
    meta.created_secs = int(stat.created)
    meta.created_nanos = int((stat.created % 1) * 1_000_000_000)
    return meta


def _invoke(instance: int | None, err: Any, operation: Callable[[VirtualFilesystem], None]) -> int:
    """Run ``operation`` on the instance's filesystem and translate its outcome to a status."""
    export = _EXPORTS.get(instance or 0)
    filesystem = None if export is None else export.filesystem
    try:
        if filesystem is None:
            raise VfsError(VfsErrorKind.OTHER, "filesystem is closed")
        operation(filesystem)
        return _STATUS_OK
    except VfsError as error:
        kind, message = error.kind, error.message
    except BaseException as error:  # nothing may unwind into bashkit
        if filesystem is not None:
            with contextlib.suppress(BaseException):
                filesystem.fault(error)
        kind, message = VfsErrorKind.OTHER, f"internal storage fault: {error}"
    if err:
        err[0].kind = int(kind)
        err[0].message = _lend_bytes(message.encode("utf-8"))
    return _STATUS_ERR


# --- the callbacks ---------------------------------------------------------------------------


def _read_file(instance: int | None, path: _StrRef, out: Any, err: Any) -> int:
    def op(fs: VirtualFilesystem) -> None:
        out[0] = _lend_bytes(fs.read_file(_text(path)))
    return _invoke(instance, err, op)


def _write_file(instance: int | None, path: _StrRef, content: _StrRef, err: Any) -> int:
    return _invoke(instance, err, lambda fs: fs.write_file(_text(path), _data(content)))


def _append_file(instance: int | None, path: _StrRef, content: _StrRef, err: Any) -> int:
    return _invoke(instance, err, lambda fs: fs.append_file(_text(path), _data(content)))


def _mkdir(instance: int | None, path: _StrRef, recursive: bool, err: Any) -> int:
    return _invoke(instance, err, lambda fs: fs.mkdir(_text(path), bool(recursive)))


def _remove(instance: int | None, path: _StrRef, recursive: bool, err: Any) -> int:
    return _invoke(instance, err, lambda fs: fs.remove(_text(path), bool(recursive)))


def _stat(instance: int | None, path: _StrRef, out: Any, err: Any) -> int:
    def op(fs: VirtualFilesystem) -> None:
        out[0] = _metadata(fs.stat(_text(path)))
    return _invoke(instance, err, op)


def _read_dir(instance: int | None, path: _StrRef, out: Any, err: Any) -> int:
    def op(fs: VirtualFilesystem) -> None:
        children = fs.read_dir(_text(path))
        if not children:
            out[0] = _OwnedDirEntries(None, 0)
            return
        array = (_DirEntry * len(children))()
        for slot, (name, stat) in zip(array, children, strict=True):
            slot.name = _lend_bytes(name.encode("utf-8"))
            slot.metadata = _metadata(stat)
        address = ctypes.addressof(array)
        _LENT[address] = array
        out[0] = _OwnedDirEntries(address, len(children))
    return _invoke(instance, err, op)


def _exists(instance: int | None, path: _StrRef, out: Any, err: Any) -> int:
    def op(fs: VirtualFilesystem) -> None:
        out[0] = fs.exists(_text(path))
    return _invoke(instance, err, op)


def _rename(instance: int | None, src: _StrRef, dst: _StrRef, err: Any) -> int:
    return _invoke(instance, err, lambda fs: fs.rename(_text(src), _text(dst)))


def _copy(instance: int | None, src: _StrRef, dst: _StrRef, err: Any) -> int:
    return _invoke(instance, err, lambda fs: fs.copy(_text(src), _text(dst)))


def _symlink(instance: int | None, target: _StrRef, link: _StrRef, err: Any) -> int:
    return _invoke(instance, err, lambda fs: fs.symlink(_text(target), _text(link)))


def _read_link(instance: int | None, path: _StrRef, out: Any, err: Any) -> int:
    def op(fs: VirtualFilesystem) -> None:
        out[0] = _lend_bytes(fs.read_link(_text(path)).encode("utf-8"))
    return _invoke(instance, err, op)


def _chmod(instance: int | None, path: _StrRef, mode: int, err: Any) -> int:
    return _invoke(instance, err, lambda fs: fs.chmod(_text(path), int(mode)))


def _free_bytes(_instance: int | None, data: _OwnedBytes) -> None:
    if data.ptr:
        _LENT.pop(data.ptr, None)


def _free_dir_entries(_instance: int | None, entries: _OwnedDirEntries) -> None:
    if not entries.ptr:
        return
    array = _LENT.pop(entries.ptr, None)
    if array is not None:
        for slot in array:
            if slot.name.ptr:
                _LENT.pop(slot.name.ptr, None)


def _retain(instance: int | None) -> None:
    with _EXPORTS_LOCK:
        export = _EXPORTS.get(instance or 0)
        if export is not None:
            export.refs += 1


def _release(instance: int | None) -> None:
    _drop(instance or 0)


def _drop(instance: int) -> None:
    with _EXPORTS_LOCK:
        export = _EXPORTS.get(instance)
        if export is not None:
            export.refs -= 1
            if export.refs <= 0:
                del _EXPORTS[instance]


_VTABLE = _VTable(
    _ReadFn(_read_file), _WriteFn(_write_file), _WriteFn(_append_file), _FlagFn(_mkdir),
    _FlagFn(_remove), _StatFn(_stat), _ReadDirFn(_read_dir), _ExistsFn(_exists),
    _WriteFn(_rename), _WriteFn(_copy), _WriteFn(_symlink), _ReadFn(_read_link),
    _ModeFn(_chmod), _FreeBytesFn(_free_bytes), _FreeEntriesFn(_free_dir_entries),
)
_RETAIN = _InstanceFn(_retain)
_RELEASE = _InstanceFn(_release)

_pythonapi = ctypes.pythonapi
_pythonapi.PyCapsule_New.restype = ctypes.py_object
_pythonapi.PyCapsule_New.argtypes = (c_void_p, ctypes.c_char_p, c_void_p)


class ExportedFilesystem:
    """A :class:`VirtualFilesystem` published to bashkit as a ``bashkit.FileSystem``.

    Mount :attr:`bashkit_fs` into an interpreter; call :meth:`close` when the interpreter is
    gone (bashkit holds its own reference through ``retain``/``release``, so the registry
    entry lives exactly as long as either side needs it). :meth:`retarget` points the same
    export at another filesystem (or at none: every operation then fails with ``filesystem
    is closed``), so a kept interpreter serves each call's filesystem without a new mount.
    """

    def __init__(self, filesystem: VirtualFilesystem | None) -> None:
        instance = next(_IDS)
        handle = _Handle(ABI_VERSION, 0, instance, _RETAIN, _RELEASE, ctypes.pointer(_VTABLE))
        with _EXPORTS_LOCK:
            _EXPORTS[instance] = _Export(filesystem, handle)
        self._instance = instance
        capsule = _pythonapi.PyCapsule_New(ctypes.addressof(handle), CAPSULE_NAME, None)
        self.bashkit_fs: bashkit.FileSystem = bashkit.FileSystem.from_capsule(capsule)

    def retarget(self, filesystem: VirtualFilesystem | None) -> None:
        """Serve ``filesystem`` from now on (``None``: none). An operation already running
        finishes on the filesystem it started with."""
        export = _EXPORTS.get(self._instance)
        if export is not None:
            export.filesystem = filesystem

    def close(self) -> None:
        """Drop the Python side's reference (idempotent)."""
        if self._instance:
            _drop(self._instance)
            self._instance = 0
