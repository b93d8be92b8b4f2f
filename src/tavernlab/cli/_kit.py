"""``tavernlab kit fetch|status``: the script kit's per-user cache from the command line.

``fetch`` downloads, verifies, builds and caches the six ``@tauritavern/kit/*`` modules (or
the named ones) so that scripts never fetch on first import; ``status`` (alias ``list``)
shows what is cached. Both print the cache directory. ``--json`` prints one JSON object on
stdout instead of the table. While a download runs, a progress line is redrawn on stderr when
stderr is a terminal. A failure (registry unreachable, integrity mismatch) prints ``error:
<code>: <message>`` and exits 1; the libraries fetched before it stay cached.

Environment: ``TAVERNLAB_KIT_CACHE`` (cache root), ``TAVERNLAB_NPM_REGISTRY`` or
``npm_config_registry`` (registry base URL).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, TextIO

from tavernlab.cli._common import print_json
from tavernlab.js.kit import (
    CachedModule,
    KitPin,
    KitProgress,
    KitSettings,
    fetch_kit,
    kit_status,
    select_pins,
)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``tavernlab kit`` with ``fetch`` and ``status`` (``list``)."""
    parser = subparsers.add_parser(
        "kit", help="fetch and inspect the script kit (@tauritavern/kit/*)",
        description="The script kit: dayjs, es-toolkit, fast-xml-parser, marked, papaparse "
        "and slugify, fetched from the npm registry at pinned versions, checked against "
        "pinned sha512 integrity and cached per user.")
    commands = parser.add_subparsers(dest="kit_command", metavar="COMMAND", required=True)

    fetch = commands.add_parser(
        "fetch", help="download, verify, build and cache the kit modules",
        description="Cache every kit module (or the NAMEs given, e.g. marked). Already "
        "cached modules are kept unless --force.")
    fetch.add_argument("names", nargs="*", metavar="NAME", help="a kit module (default: all)")
    fetch.add_argument("--force", action="store_true", help="rebuild even when cached")
    fetch.add_argument("--json", action="store_true", help="print JSON")
    fetch.set_defaults(func=_fetch)

    for name in ("status", "list"):
        status = commands.add_parser(name, help="show which kit modules are cached",
                                     description="List the kit modules and their cache state.")
        status.add_argument("--json", action="store_true", help="print JSON")
        status.set_defaults(func=_status)


def _fetch(args: argparse.Namespace) -> int:
    names = [pin.module for pin in select_pins(args.names)]
    settings = KitSettings.from_environment()
    display = _ProgressLine(sys.stderr) if sys.stderr.isatty() else None
    if not args.json:
        print(f"cache: {settings.cache.directory}")
    rows: list[dict[str, Any]] = []

    def progress(event: KitProgress) -> None:
        if display is not None:
            display.show(event)

    try:
        for result in fetch_kit(names, settings=settings, force=args.force,
                                progress=progress):
            if display is not None:
                display.clear()
            row = _row(result.module.pin, result.module, result.status)
            rows.append(row)
            if not args.json:
                print(_line(row))
    finally:
        if display is not None:
            display.clear()
    if args.json:
        print_json(_document(settings, rows))
    return 0


def _status(args: argparse.Namespace) -> int:
    settings = KitSettings.from_environment()
    rows = [_row(pin, cached, "cached" if cached else "missing")
            for pin, cached in kit_status(settings)]
    if args.json:
        print_json(_document(settings, rows))
    else:
        print(f"cache: {settings.cache.directory}")
        for row in rows:
            print(_line(row))
    return 0


def _row(pin: KitPin, cached: CachedModule | None, status: str) -> dict[str, Any]:
    row: dict[str, Any] = {"module": pin.module, "package": pin.package,
                           "version": pin.version, "status": status}
    if cached is not None:
        row["bytes"] = cached.manifest["bytes"]
        row["path"] = str(cached.path)
    return row


def _document(settings: KitSettings, rows: list[dict[str, Any]]) -> dict[str, Any]:
    return {"cacheDir": str(settings.cache.directory), "registry": settings.registry,
            "modules": rows}


def _line(row: dict[str, Any]) -> str:
    size = f"{row['bytes']} bytes" if "bytes" in row else ""
    return (f"{row['module']:<34} {row['package'] + ' ' + row['version']:<24} "
            f"{row['status']:<8} {size}").rstrip()


class _ProgressLine:
    """One status line on a terminal, redrawn in place (``\\r``)."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.width = 0

    def show(self, event: KitProgress) -> None:
        """Draw the step of ``event``."""
        pin = event.pin
        if event.phase == "download":
            amount = (f"{event.received * 100 // event.total}%" if event.total
                      else f"{event.received} bytes")
            text = f"{pin.package} {pin.version}: downloading {amount}"
        else:
            text = f"{pin.package} {pin.version}: {event.phase}"
        self.stream.write("\r" + text.ljust(self.width))
        self.stream.flush()
        self.width = len(text)

    def clear(self) -> None:
        """Erase the line."""
        if self.width:
            self.stream.write("\r" + " " * self.width + "\r")
            self.stream.flush()
            self.width = 0
