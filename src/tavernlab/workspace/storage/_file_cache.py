"""Parsed copies of files that are never written after they are made (a persist state's
``manifest.json``), kept per process.

A chat's runs start from the state the previous run published, and every regenerate or swipe
starts from the same one: parsing and validating a 50,000-file manifest each time cost more
than linking the files (bench/persist.py). An entry is served only while the file is the same file:
same device, inode, size, modification and change time (``st_ctime_ns`` cannot be set from
user space, so a file rewritten in place, even with its old size and mtime restored, is
parsed again). The cache holds a few entries, the most recently used.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")

Identity = tuple[int, int, int, int, int]


def identity(path: str) -> Identity | None:
    """What makes ``path`` the same file (``None`` when it cannot be looked at)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


class ParsedFiles(Generic[T]):
    """Up to ``size`` parsed files, by path and :func:`identity` (thread-safe)."""

    def __init__(self, size: int = 8) -> None:
        self.size = size
        self._entries: OrderedDict[str, tuple[Identity, T]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, path: str, parse: Callable[[], T | None]) -> T | None:
        """The parsed file: the cached value while the file is unchanged, else ``parse()``
        (kept unless it is ``None``: a file that does not parse is never cached)."""
        before = identity(path)
        if before is not None:
            with self._lock:
                entry = self._entries.get(path)
                if entry is not None and entry[0] == before:
                    self._entries.move_to_end(path)
                    return entry[1]
        value = parse()
        if value is not None and before is not None and identity(path) == before:
            self.put(path, before, value)
        return value

    def put(self, path: str, ident: Identity | None, value: T) -> None:
        """Remember ``value`` as the parse of ``path`` while it is ``ident``."""
        if ident is None:
            return
        with self._lock:
            self._entries[path] = (ident, value)
            self._entries.move_to_end(path)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)
