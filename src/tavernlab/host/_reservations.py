"""The deterministic ids a lab has handed out: ``<lab>/_tauritavern/sequential-ids.json``.

A lab opened with :class:`~tavernlab.clock.SequentialIds` would otherwise start every counter
at 1 again each time it is opened, and a new run would take the id (and the index entry,
and the files) of a run that exists. The lab therefore gives its factory these
:class:`LabIdReservations` (:meth:`~tavernlab.clock.SequentialIds.continues_in`): per seed
(by the SHA-256 of the seed) and per prefix, the highest number any factory of that seed
has reserved on this lab. A factory starts above it and reserves a block of numbers before
it mints the first of them, under the file's lock, so two processes (two kernels, or a
kernel and the command line) with the same seed never mint the same id either.

The file is written atomically and durably (a reservation is on disk before any id of it
is used). Format (tavernlab's own)::

    {"formatVersion": 1, "seeds": {"<sha256 of the seed>": {"run": 1024, "evt": 2048}}}
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tavernlab.errors import FileIo, InvalidData
from tavernlab.locks import file_lock
from tavernlab.workspace.storage import replace_durably

FILE_NAME = "sequential-ids.json"
LOCK_NAME = ".sequential-ids.lock"
FORMAT_VERSION = 1


class LabIdReservations:
    """The reservations of one seed in one lab's data directory (see the module notes)."""

    def __init__(self, data_dir: Path, prefix_seed: str) -> None:
        self.path = data_dir / FILE_NAME
        self._lock_path = data_dir / LOCK_NAME
        self.key = hashlib.sha256(prefix_seed.encode("utf-8")).hexdigest()

    def held(self) -> Mapping[str, int]:
        """The highest number reserved per prefix for this seed (empty in a new lab)."""
        try:
            with file_lock(self._lock_path, shared=True):
                return dict(self._read().get(self.key, {}))
        except OSError as exc:  # out of descriptors, an unreadable disk: one clear error
            raise FileIo("read", str(self.path), exc) from exc

    def reserve(self, prefix: str, first: int, count: int) -> int:
        """Reserve ``count`` numbers of ``prefix`` from ``first`` (or from just above the
        highest number reserved so far); returns the first one."""
        try:
            with file_lock(self._lock_path):
                seeds = self._read()
                numbers = seeds.setdefault(self.key, {})
                start = max(first, numbers.get(prefix, 0) + 1)
                numbers[prefix] = start + count - 1
                text = json.dumps({"formatVersion": FORMAT_VERSION, "seeds": seeds},
                                  indent=1, sort_keys=True)
                replace_durably(self.path, (text + "\n").encode("ascii"))
        except OSError as exc:  # a full disk, no descriptors left: nothing was reserved
            raise FileIo("write", str(self.path), exc) from exc
        return start

    def _read(self) -> dict[str, dict[str, int]]:
        try:
            text = self.path.read_bytes()
        except FileNotFoundError:
            return {}
        try:
            data: Any = json.loads(text)
        except ValueError:
            data = None
        seeds = data.get("seeds") if isinstance(data, dict) else None
        if (not isinstance(seeds, dict) or data.get("formatVersion") != FORMAT_VERSION
                or not all(isinstance(numbers, dict) and all(
                    isinstance(p, str) and type(n) is int and n >= 0
                    for p, n in numbers.items()) for numbers in seeds.values())):
            raise InvalidData(f"{self.path} is not a valid record of the lab's deterministic "
                              "ids (it says which ids were handed out): restore it, or "
                              "remove it to count from 1 again (a new id that an existing "
                              "run holds is then refused, never written over it)")
        return seeds

    def __repr__(self) -> str:
        return f"LabIdReservations({self.path}, seed sha256 {self.key[:12]})"
