"""The ``js`` / ``node`` / ``deno`` command line (docs/js-and-skills.md).

:func:`parse_command_line` scans the arguments left to right until the source is known and
option parsing stops; every problem is a :class:`~tavernlab.js._errors.JsArgumentError` with
upstream's exact message (the command prints ``js: <message>`` and exits 2). stdin is read
and checked during the scan, as soon as ``-`` is taken as the entry, so its problems (none,
over 128 KiB, not UTF-8) are argument errors too and nothing runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from tavernlab.js._errors import JsArgumentError
from tavernlab.js._limits import NO_STDIN, SOURCE_NOT_UTF8, STDIN_LIMIT, STDIN_TOO_LARGE

NO_SOURCE = "Provide a script file, -e SOURCE, or - for stdin. See js --help."
DENO_USAGE = "Use deno run FILE or deno eval SOURCE. See js --help."
EntryKind = Literal["file", "stdin", "eval"]


def requires_value(option: str) -> str:
    """``<option> requires a value. See js --help.``, naming the option as typed."""
    return f"{option} requires a value. See js --help."


@dataclass(frozen=True, slots=True)
class CommandLine:
    """The scanned arguments: help, or an entry plus script arguments.

    ``source`` is the file argument (``file``) or the eval code (``eval``); ``stdin`` is the
    module read from stdin (``stdin``), already checked for size and UTF-8.
    """

    help: bool
    kind: EntryKind | None = None
    source: str = ""
    stdin: bytes = b""
    args: tuple[str, ...] = ()


def parse_command_line(argv: list[str], command: str = "js",
                       stdin: bytes | None = None) -> CommandLine:
    """Scan ``argv`` (without the command name), left to right; ``stdin`` is the piped
    bytes (``None``: nothing piped). Raises :class:`JsArgumentError`."""
    if command == "deno":
        argv, eval_source = _deno_subcommand(argv)
        if eval_source is not None:
            argv = ["-e", eval_source, *argv]
    kind: EntryKind | None = None
    source = ""
    module = b""
    index = 0
    while index < len(argv):
        arg = argv[index]
        if arg in ("--help", "-h"):
            return CommandLine(help=True)
        if arg in ("-e", "--eval") and kind is None:
            if index + 1 >= len(argv):
                raise JsArgumentError(requires_value(arg))
            kind, source = "eval", argv[index + 1]
            index += 2
            continue
        if arg == "--":
            index += 1
            if kind is None:
                if index >= len(argv):
                    raise JsArgumentError(requires_value(arg))
                kind, source, module = _entry(argv[index], stdin)
                index += 1
            break
        if arg == "-" or not arg.startswith("-"):
            if kind is None:
                kind, source, module = _entry(arg, stdin)
                index += 1
            break
        raise JsArgumentError(f"Unsupported or repeated argument `{arg}`. See js --help.")
    if kind is None:
        raise JsArgumentError(NO_SOURCE)
    return CommandLine(help=False, kind=kind, source=source, stdin=module,
                       args=tuple(argv[index:]))


def _deno_subcommand(argv: list[str]) -> tuple[list[str], str | None]:
    """``deno``'s required subcommand: the arguments that follow it, and the eval source of
    ``deno eval SOURCE`` (``["--help"]`` stands for ``deno --help`` / ``deno -h``)."""
    if argv and argv[0] in ("--help", "-h"):
        return ["--help"], None
    if argv and argv[0] == "run":
        return argv[1:], None
    if argv and argv[0] == "eval":
        if len(argv) < 2:
            raise JsArgumentError(requires_value("deno eval"))
        return argv[2:], argv[1]
    raise JsArgumentError(DENO_USAGE)


def _entry(arg: str, stdin: bytes | None) -> tuple[EntryKind, str, bytes]:
    """The entry named by ``arg``: ``-`` reads and checks stdin now."""
    if arg != "-":
        return "file", arg, b""
    if stdin is None:
        raise JsArgumentError(NO_STDIN)
    if len(stdin) > STDIN_LIMIT:
        raise JsArgumentError(STDIN_TOO_LARGE)
    try:
        stdin.decode("utf-8")
    except UnicodeDecodeError:
        raise JsArgumentError(SOURCE_NOT_UTF8) from None
    return "stdin", "", stdin


def shell_path(cwd: str, path: str) -> str:
    """Resolve ``path`` against ``cwd`` lexically; ``..`` above ``/`` stays at ``/``."""
    segments: list[str] = []
    for segment in (path if path.startswith("/") else f"{cwd}/{path}").split("/"):
        if segment in ("", "."):
            continue
        if segment == "..":
            if segments:
                segments.pop()
        else:
            segments.append(segment)
    return "/" + "/".join(segments)
