"""Identifiers (docs/layout.md): workspace ids, directory-safe names and the
tool-record names; new ids are minted by the lab's :class:`~tavernlab.clock.IdFactory`."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Literal

from tavernlab.errors import InvalidData

ChatKind = Literal["character", "group"]

_DIR_NAME = re.compile(r"[A-Za-z0-9_-]{1,128}")
#: The shape of a call id (and of an agent id): what the host mints (``call_1``), what
#: providers send (``call_abc123``, ``toolu_01…``) and upstream's fixtures use
#: (``call_write``, ``duplicate_call``, ``call_mcp``).
_CALL_ID = re.compile(r"[A-Za-z0-9_.:-]{1,256}")
#: How much of a refused value an error message shows.
_SHOWN = 40
MAX_STABLE_CHAT_ID = 512


def workspace_id(kind: ChatKind, stable_chat_id: str) -> str:
    """``chat_`` + the first 16 hex characters of SHA-256 of the compact JSON
    ``{"kind":…,"stableChatId":…}``. The id is trimmed, non-empty, at most 512 characters."""
    stable = check_stable_chat_id(stable_chat_id)
    if kind not in ("character", "group"):
        raise InvalidData(f"chat kind must be `character` or `group`, got `{kind}`")
    payload = json.dumps({"kind": kind, "stableChatId": stable}, separators=(",", ":"),
                         ensure_ascii=False)
    return "chat_" + hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]


def check_stable_chat_id(stable_chat_id: str) -> str:
    """Trim and validate a stable chat id."""
    if not isinstance(stable_chat_id, str):
        raise InvalidData("stableChatId must be a string")
    stable = stable_chat_id.strip()
    if not stable:
        raise InvalidData("stableChatId cannot be empty")
    if len(stable) > MAX_STABLE_CHAT_ID:
        raise InvalidData(f"stableChatId exceeds {MAX_STABLE_CHAT_ID} characters")
    return stable


def check_dir_name(value: str, what: str = "id") -> str:
    """An id used as a directory name must match ``[A-Za-z0-9_-]{1,128}``."""
    if not isinstance(value, str) or not _DIR_NAME.fullmatch(value):
        raise InvalidData(f"{what} must match [A-Za-z0-9_-]{{1,128}}: {value!r}")
    return value


def check_call_id(value: object, what: str = "call_id") -> str:
    """A call id (or an agent id, named by ``what``) must match ``[A-Za-z0-9_.:-]{1,256}``:
    ASCII letters, digits, ``_ . : -``, 1 to 256 characters. Anything else (an empty string,
    whitespace, a newline, quotes, ``!`` or ``%``, a non-ASCII character) is refused with
    :class:`InvalidData` naming ``what``, before anything is written: ids are copied into
    records, file names and generated notebooks, where only this shape is known to be
    inert."""
    if isinstance(value, str) and _CALL_ID.fullmatch(value):
        return value
    if not isinstance(value, str):
        raise InvalidData(f"{what} must be a string matching [A-Za-z0-9_.:-]{{1,256}}, got "
                          f"{type(value).__name__}")
    shown = repr(value[:_SHOWN]) + (f"... ({len(value)} characters)"
                                   if len(value) > _SHOWN else "")
    raise InvalidData(f"{what} must match [A-Za-z0-9_.:-]{{1,256}}: {shown}")
