"""Integrity before extraction, and a tar reader that refuses what could escape or alias."""

from __future__ import annotations

import dataclasses
import io
import tarfile

import pytest

from tavernlab.js._errors import KitBuildFailed, KitIntegrityMismatch
from tavernlab.js.kit import KitPin
from tavernlab.js.kit._pins import PINS_BY_MODULE
from tavernlab.js.kit._tarball import (
    MAX_UNPACKED_BYTES,
    integrity_of,
    read_package,
    verify_integrity,
)

SLUGIFY = PINS_BY_MODULE["@tauritavern/kit/slugify"]


def tarball(*members: tuple[str, bytes | None, bytes]) -> bytes:
    """A .tgz of ``(name, type, data)`` members (``type`` is a ``tarfile`` type byte)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, kind, data in members:
            info = tarfile.TarInfo(name)
            info.type = kind or tarfile.REGTYPE
            if info.type == tarfile.REGTYPE:
                info.size = len(data)
                archive.addfile(info, io.BytesIO(data))
            else:
                info.linkname = data.decode()
                archive.addfile(info)
    return buffer.getvalue()


def pin_for(data: bytes) -> KitPin:
    """A slugify pin whose integrity is that of ``data``."""
    return dataclasses.replace(SLUGIFY, integrity=integrity_of(data))


def test_integrity_matches_the_registry_format() -> None:
    assert integrity_of(b"") == ("sha512-z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XYXy"
                                 "sP+DGNKHfuwvY7kxvUdBeoGlODJ6+SfaPg==")


def test_one_changed_byte_fails_the_check_and_names_the_package() -> None:
    data = tarball(("package/slugify.js", None, b"module.exports = 1;\n"))
    pin = pin_for(data)
    verify_integrity(pin, data)
    altered = bytearray(data)
    altered[len(altered) // 2] ^= 0x01
    with pytest.raises(KitIntegrityMismatch) as caught:
        verify_integrity(pin, bytes(altered))
    assert caught.value.code == "js.kit_integrity_mismatch"
    assert caught.value.message == (
        f"The slugify 1.6.9 tarball failed its integrity check: expected {pin.integrity}, got "
        f"{integrity_of(bytes(altered))}. Nothing was cached; the download was altered or the "
        "registry serves a different file.")


def test_regular_files_are_read_below_the_top_directory() -> None:
    data = tarball(("package", tarfile.DIRTYPE, b""), ("package/a.js", None, b"a"),
                   ("package/./lib//b.js", None, b"b"))
    assert read_package(pin_for(data), data) == {"a.js": b"a", "lib/b.js": b"b"}


@pytest.mark.parametrize(("member", "why"), [
    (("package/link.js", tarfile.SYMTYPE, b"/etc/passwd"),
     "the member `package/link.js` is not a regular file or directory"),
    (("package/hard.js", tarfile.LNKTYPE, b"package/a.js"),
     "the member `package/hard.js` is not a regular file or directory"),
    (("package/fifo", tarfile.FIFOTYPE, b""),
     "the member `package/fifo` is not a regular file or directory"),
    (("package/../../evil.js", None, b"x"), "the member `package/../../evil.js` escapes the "
                                            "package with .."),
    (("/package/abs.js", None, b"x"), "the member `/package/abs.js` has an absolute or "
                                      "backslash path"),
    (("package\\win.js", None, b"x"), "the member `package\\win.js` has an absolute or "
                                      "backslash path"),
    (("package/a.js\n/../x.js", None, b"x"),
     "the member name 'package/a.js\\n/../x.js' contains a control character"),
    (("other/b.js", None, b"x"), "the member `other/b.js` is outside the top directory "
                                 "`package/`"),
    (("package/a.js", None, b"again"), "the member `package/a.js` appears twice"),
])
def test_unsafe_members_refuse_the_whole_tarball(member: tuple[str, bytes | None, bytes],
                                                 why: str) -> None:
    data = tarball(("package/a.js", None, b"a"), member)
    with pytest.raises(KitBuildFailed) as caught:
        read_package(pin_for(data), data)
    assert caught.value.message == f"The slugify 1.6.9 tarball was refused: {why}."


def test_a_file_at_the_top_level_is_refused() -> None:
    data = tarball(("loose.js", None, b"x"))
    with pytest.raises(KitBuildFailed) as caught:
        read_package(pin_for(data), data)
    assert caught.value.message == ("The slugify 1.6.9 tarball was refused: the member "
                                    "`loose.js` is outside the package's top directory.")


def test_bytes_that_are_not_a_tgz_are_refused() -> None:
    with pytest.raises(KitBuildFailed) as caught:
        read_package(pin_for(b"not gzip"), b"not gzip")
    assert caught.value.message.startswith(
        "The slugify 1.6.9 tarball was refused: it is not a readable .tgz (")


def test_more_unpacked_bytes_than_the_bound_are_refused() -> None:
    data = tarball(("package/huge.bin", None, bytes(MAX_UNPACKED_BYTES + 1)))
    with pytest.raises(KitBuildFailed) as caught:
        read_package(pin_for(data), data)
    assert caught.value.message == ("The slugify 1.6.9 tarball was refused: more than "
                                    f"{MAX_UNPACKED_BYTES} unpacked bytes.")
