"""The legacy script's file API: an in-memory overlay of the workspace snapshot.

:class:`ScriptOverlay` is the :class:`~tavernlab.js._job.CapabilityServer` of a legacy
``skill.run_script`` job. Nothing touches storage during execution: reads see the overlay over
the snapshot, writes land in the overlay (final state per path), and the engine returns the
delta sorted by path plus the last write path for the tool to write back. Log calls are
collected, budgeted and forwarded as they happen to the Python logger
``tavernlab.skill_script`` with the prefix ``[skill-script]`` at their level.

tavernlab choices where upstream is unknown: path cleaning reports NUL as ``path contains
NUL``, a leading ``/`` (also after ``\\`` -> ``/``) as ``absolute paths are not allowed`` and
``..`` above the top as ``path escapes the workspace``; messages name the cleaned path; the
output-budget message is ``total skill script output is <N> bytes (writes + logs + result),
exceeding the 1048576-byte limit``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tavernlab.errors import TavernlabError
from tavernlab.js._errors import CapabilityError
from tavernlab.js._limits import LEGACY_ENTRY_COST, LEGACY_OUTPUT_LIMIT
from tavernlab.workspace.macros import FrozenMacros

logger = logging.getLogger("tavernlab.skill_script")
LOG_PREFIX = "[skill-script]"
_LOG_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warn": logging.WARNING,
               "error": logging.ERROR}


@dataclass(frozen=True, slots=True)
class SnapshotFile:
    """One UTF-8 workspace file as the script sees it, with the digest of its bytes."""

    text: str
    sha256: str


@dataclass(frozen=True, slots=True)
class ScriptWrite:
    """The final content of one written path."""

    path: str
    text: str


@dataclass(frozen=True, slots=True)
class ScriptLog:
    """One ``log.<level>(message)`` call."""

    level: str
    message: str


def utf8_size(text: str) -> int:
    """The UTF-8 length of ``text`` (every legacy budget counts bytes)."""
    return len(text.encode("utf-8"))


def output_exceeded(total: int) -> str:
    """The output-budget message (tavernlab's wording)."""
    return (f"total skill script output is {total} bytes (writes + logs + result), exceeding "
            f"the {LEGACY_OUTPUT_LIMIT}-byte limit")


class ScriptOverlay:
    """The script's file API over the snapshot, plus log collection and the output
    budget; a :class:`~tavernlab.js._job.CapabilityServer` served in the parent."""

    def __init__(self, visible_roots: tuple[str, ...], writable_roots: tuple[str, ...],
                 files: Mapping[str, SnapshotFile], macros: FrozenMacros) -> None:
        self.visible = frozenset(visible_roots)
        self.writable = frozenset(writable_roots)
        self.files = files
        self.macros = macros
        self.writes: dict[str, str] = {}
        self.write_costs: dict[str, int] = {}
        self.last_write: str | None = None
        self.logs: list[ScriptLog] = []
        self.log_cost = 0

    @property
    def output_used(self) -> int:
        """Bytes charged to the output budget so far (writes at their final state + logs)."""
        return sum(self.write_costs.values()) + self.log_cost

    def output(self, stream: int, text: str) -> None:
        """Legacy scripts have no console; nothing is ever emitted."""

    def serve(self, op: str, a: Any, b: Any) -> Any:
        """Dispatch one runtime call."""
        if op == "readText":
            return self.read_text(a)
        if op == "writeText":
            self.write_text(a, b)
            return None
        if op == "exists":
            return self.exists(a)
        if op == "listFiles":
            return self.list_files(a)
        if op == "render":
            try:
                return self.macros.render(a)
            except TavernlabError as exc:
                raise CapabilityError(exc.message) from None
        if op == "log":
            self.log(a, b)
            return None
        raise CapabilityError(f"unknown runtime call {op}")

    # -- paths ----------------------------------------------------------------------------------

    @staticmethod
    def clean(path: str) -> str:
        """Upstream's path cleaning: ``""`` is the workspace root."""
        if "\0" in path:
            raise CapabilityError("path contains NUL")
        text = path.replace("\\", "/")
        if text.startswith("/"):
            raise CapabilityError("absolute paths are not allowed")
        segments: list[str] = []
        for segment in text.split("/"):
            if segment in ("", "."):
                continue
            if segment == "..":
                if not segments:
                    raise CapabilityError("path escapes the workspace")
                segments.pop()
            else:
                segments.append(segment)
        return "/".join(segments)

    def _visible(self, path: str) -> bool:
        return bool(path) and path.split("/", 1)[0] in self.visible

    def _require_visible(self, raw: str) -> str:
        path = self.clean(raw)
        if not self._visible(path):
            raise CapabilityError(f"path is outside the visible workspace roots: {path or raw}")
        return path

    def _known(self) -> set[str]:
        return set(self.files) | set(self.writes)

    # -- operations -----------------------------------------------------------------------------

    def read_text(self, raw: str) -> str:
        """Overlay over snapshot; ``file not found: <path>`` otherwise."""
        path = self._require_visible(raw)
        if path in self.writes:
            return self.writes[path]
        snapshot = self.files.get(path)
        if snapshot is None:
            raise CapabilityError(f"file not found: {path}")
        return snapshot.text

    def write_text(self, raw: str, text: str) -> None:
        """A strict child of a writable root; final state per path, budgeted once."""
        path = self.clean(raw)
        parts = path.split("/")
        if len(parts) < 2 or parts[0] not in self.writable:
            raise CapabilityError(
                f"path is outside the writable workspace roots: {path or raw}")
        cost = utf8_size(path) + utf8_size(text) + LEGACY_ENTRY_COST
        total = self.output_used - self.write_costs.get(path, 0) + cost
        if total > LEGACY_OUTPUT_LIMIT:
            raise CapabilityError(output_exceeded(total))
        self.writes[path] = text
        self.write_costs[path] = cost
        self.last_write = path

    def exists(self, raw: str) -> bool:
        """True for a known file or an implied directory; never throws for a path."""
        try:
            path = self.clean(raw)
        except CapabilityError:
            return False
        if not self._visible(path):
            return False
        known = self._known()
        prefix = path + "/"
        return path in known or any(name.startswith(prefix) for name in known)

    def list_files(self, raw: str | None) -> list[str]:
        """Top-level names of known files, or the files under a visible directory."""
        known = self._known()
        if raw is None:
            return sorted({name.split("/", 1)[0] for name in known})
        path = self._require_visible(raw)
        prefix = path + "/"
        return sorted(name[len(prefix):] for name in known if name.startswith(prefix))

    def log(self, level: str, message: str) -> None:
        """Budget, collect and forward one log call."""
        cost = utf8_size(message) + LEGACY_ENTRY_COST
        total = self.output_used + cost
        if total > LEGACY_OUTPUT_LIMIT:
            raise CapabilityError(output_exceeded(total))
        self.log_cost += cost
        self.logs.append(ScriptLog(level, message))
        logger.log(_LOG_LEVELS.get(level, logging.INFO), "%s %s", LOG_PREFIX, message)

    def delta(self) -> tuple[ScriptWrite, ...]:
        """The final-state writes, sorted by path."""
        return tuple(ScriptWrite(path, self.writes[path]) for path in sorted(self.writes))
