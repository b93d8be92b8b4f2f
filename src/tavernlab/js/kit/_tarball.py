"""Verify a package tarball against its pinned integrity, then read it safely in memory.

Order matters: :func:`verify_integrity` runs on the downloaded bytes *before* anything is
decompressed, so a tampered tarball never reaches the tar reader. :func:`read_package` then
extracts regular files into a dict (nothing touches the disk) and refuses any member that
could escape or alias: an absolute name, a ``..`` segment, a control character, a symlink, a
hard link, a device, or a duplicate name. Sizes are bounded (member count, total bytes).
npm tarballs put every file under one top directory (usually ``package/``); it is stripped.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import io
import tarfile

from tavernlab.js._errors import KitBuildFailed, KitIntegrityMismatch
from tavernlab.js.kit._pins import KitPin

#: Most members a kit tarball may hold (es-toolkit 1.50.0 has about 4000).
MAX_MEMBERS = 20_000
#: Most bytes all extracted files may add up to.
MAX_UNPACKED_BYTES = 64 * 1024 * 1024


def integrity_of(data: bytes) -> str:
    """The npm ``sha512-<base64>`` integrity string of ``data``."""
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode("ascii")


def verify_integrity(pin: KitPin, data: bytes) -> None:
    """Raise :class:`KitIntegrityMismatch` unless ``data`` has the pin's SHA-512."""
    actual = integrity_of(data)
    if not hmac.compare_digest(actual, pin.integrity):
        raise KitIntegrityMismatch(
            f"The {pin.package} {pin.version} tarball failed its integrity check: expected "
            f"{pin.integrity}, got {actual}. Nothing was cached; the download was altered or "
            "the registry serves a different file.", package=pin.package)


def read_package(pin: KitPin, data: bytes) -> dict[str, bytes]:
    """The regular files of a verified tarball, keyed by path below its top directory."""
    files: dict[str, bytes] = {}
    total = 0
    top: str | None = None
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
            for count, member in enumerate(archive, start=1):
                if count > MAX_MEMBERS:
                    raise _refused(pin, f"more than {MAX_MEMBERS} members")
                segments = _member_segments(pin, member)
                if top is None:
                    top = segments[0] if segments else None
                elif segments and segments[0] != top:
                    raise _refused(pin, f"the member `{member.name}` is outside the top "
                                   f"directory `{top}/`")
                if member.isdir():
                    continue
                path = "/".join(segments[1:])
                total += member.size
                if total > MAX_UNPACKED_BYTES:
                    raise _refused(pin, f"more than {MAX_UNPACKED_BYTES} unpacked bytes")
                if path in files:
                    raise _refused(pin, f"the member `{member.name}` appears twice")
                handle = archive.extractfile(member)
                if handle is None:
                    raise _refused(pin, f"the member `{member.name}` cannot be read")
                files[path] = handle.read()
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise _refused(pin, f"it is not a readable .tgz ({exc})") from None
    return files


def _member_segments(pin: KitPin, member: tarfile.TarInfo) -> list[str]:
    """The member's path segments (top directory first); refuses unsafe names and kinds."""
    name = member.name
    if not (member.isreg() or member.isdir()):
        raise _refused(pin, f"the member `{name}` is not a regular file or directory")
    if any(ord(char) < 0x20 or ord(char) == 0x7F for char in name):
        raise _refused(pin, f"the member name {name!r} contains a control character")
    if name.startswith("/") or "\\" in name:
        raise _refused(pin, f"the member `{name}` has an absolute or backslash path")
    segments = [segment for segment in name.split("/") if segment not in ("", ".")]
    if ".." in segments:
        raise _refused(pin, f"the member `{name}` escapes the package with ..")
    if len(segments) < 2 and not member.isdir():
        raise _refused(pin, f"the member `{name}` is outside the package's top directory")
    return segments


def _refused(pin: KitPin, why: str) -> KitBuildFailed:
    return KitBuildFailed(f"The {pin.package} {pin.version} tarball was refused: {why}.",
                          package=pin.package)
