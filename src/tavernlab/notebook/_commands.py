"""Line magics with subcommands (``%tavern run new …``, ``%worktree gate …``): a table of
commands, each with its own argument parser, found by its leading words.

A :class:`Subcommand` has a name of one or more words (``"tree"``, ``"run new"``,
``"skill dev"``), a help line, a function that adds its arguments to an ``argparse`` parser and
a handler ``handler(state, args) -> object`` whose return value the magic returns (so it is
displayed). :class:`CommandTable` splits the magic's line like a shell (``shlex``), takes the
longest registered name that the line starts with, parses the rest with that command's parser
and calls it. Bad input — an unknown command, a bad option, unbalanced quotes — raises IPython's
``UsageError`` with one line that names the command; ``-h``/``--help`` prints the command's
help. Registering a name again with ``replace=True`` swaps the handler (how the widgets turn
``%tavern tree`` into a live widget); :meth:`CommandTable.help_text` is what ``%tavern?``
shows, rebuilt whenever a command is added.
"""

from __future__ import annotations

import argparse
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NoReturn

from IPython.core.error import UsageError

Handler = Callable[[Any, argparse.Namespace], Any]
Configure = Callable[[argparse.ArgumentParser], object]


def _no_arguments(parser: argparse.ArgumentParser) -> None:
    """A command without arguments."""


@dataclass(frozen=True)
class Subcommand:
    """One subcommand: its words, help line, arguments and handler."""

    name: str
    help: str
    handler: Handler
    arguments: Configure = field(default=_no_arguments)

    @property
    def words(self) -> tuple[str, ...]:
        """The name split into words (``("run", "new")``)."""
        return tuple(self.name.split())


def positive(text: str) -> int:
    """An ``argparse`` type: an integer of at least 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def natural(text: str) -> int:
    """An ``argparse`` type: an integer of at least 0."""
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be at least 0, got {value}")
    return value


class HelpShown(Exception):
    """``-h`` printed a command's help; the magic returns nothing."""


class MagicArgumentParser(argparse.ArgumentParser):
    """An ``argparse`` parser whose errors are one-line ``UsageError``s, never an exit."""

    def error(self, message: str) -> NoReturn:
        """Raise ``UsageError("<prog>: <message>")``."""
        raise UsageError(f"{self.prog}: {message}")

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        """After ``--help``: stop quietly; anything else is a usage error."""
        if status == 0:
            raise HelpShown
        raise UsageError(f"{self.prog}: {message or 'error'}")


class CommandTable:
    """The subcommands of one magic (``prog`` is ``%tavern`` or ``%worktree``)."""

    def __init__(self, prog: str, on_change: Callable[[], None] | None = None) -> None:
        self.prog = prog
        self._commands: dict[str, Subcommand] = {}
        self._on_change = on_change

    def register(self, command: Subcommand, *, replace: bool = False) -> None:
        """Add ``command``; a name already taken needs ``replace=True``."""
        if command.name in self._commands and not replace:
            raise ValueError(f"{self.prog} {command.name} is already registered "
                             "(pass replace=True to replace it)")
        self._commands[command.name] = command
        if self._on_change is not None:
            self._on_change()

    def unregister(self, name: str) -> None:
        """Remove the command ``name`` (if registered)."""
        if self._commands.pop(name, None) is not None and self._on_change is not None:
            self._on_change()

    def get(self, name: str) -> Subcommand | None:
        """The command registered under ``name``."""
        return self._commands.get(name)

    @property
    def names(self) -> list[str]:
        """Every command name, in registration order."""
        return list(self._commands)

    def parser(self, command: Subcommand) -> MagicArgumentParser:
        """The argument parser of ``command``."""
        parser = MagicArgumentParser(prog=f"{self.prog} {command.name}",
                                     description=command.help)
        command.arguments(parser)
        return parser

    def find(self, words: list[str]) -> tuple[Subcommand, list[str]]:
        """The command the words start with (the longest name wins) and the rest."""
        for size in range(len(words), 0, -1):
            command = self._commands.get(" ".join(words[:size]))
            if command is not None:
                return command, words[size:]
        known = ", ".join(self.names)
        what = " ".join(words[:2]) if words else ""
        raise UsageError(f"{self.prog}: unknown command {what!r} (commands: {known}; "
                         f"`{self.prog}?` shows their options)" if what else
                         f"{self.prog}: give a command ({known}); `{self.prog}?` shows "
                         "their options")

    def dispatch(self, line: str, state: Any) -> Any:
        """Parse ``line`` and run the command it names; returns the handler's result."""
        try:
            words = shlex.split(line)
        except ValueError as exc:
            raise UsageError(f"{self.prog}: {exc}") from None
        command, rest = self.find(words)
        try:
            args = self.parser(command).parse_args(rest)
        except HelpShown:
            return None
        return command.handler(state, args)

    def help_text(self, summary: str, examples: str = "") -> str:
        """``summary``, then every command's usage line and help, then ``examples`` (lines of
        magic calls) under ``Examples`` when given (what ``%tavern?`` shows)."""
        lines = [summary, "", "Commands:"]
        for command in self._commands.values():
            usage = self.parser(command).format_usage().strip().removeprefix("usage: ")
            lines += [f"  {usage}", f"      {command.help}"]
        if examples:
            lines += ["", "Examples", "--------", "::", "",
                      *(f"  {line}" if line else "" for line in examples.splitlines())]
        return "\n".join(lines)
