"""``TavernMagics``: the magics ``%tavern``, ``%%js``/``%js``, ``%ws_shell``/``%%ws_shell`` and
``%worktree``, and the settings they share.

Settings are traitlets, so ``%config TavernMagics.stream = False`` (or ``c.TavernMagics…`` in
an IPython/kernel config file) changes them:

* ``lab_path`` - the lab directory (empty: ``./.tavernlab``); changing it switches the current
  lab (and forgets the current run) at the next use;
* ``chat_per_notebook`` (default on) - a run starts in the notebook's own chat
  (``notebook:<file>``) when the kernel knows the notebook's path; off: the shared chat
  ``notebook``;
* ``round_per_cell`` (default on) - each cell that uses the run is one model round;
* ``raise_on_error`` (default on) - a failed ``%%js``/``%ws_shell`` raises ``JSError`` /
  ``ShellError`` (``--no-raise``, or ``--no-raise-error`` as IPython's ``%%script`` spells it,
  turns it off for one call);
* ``stream`` (default on) - show output while a job runs (off: when it ends).

The methods only parse their line and hand over to the modules that do the work
(:mod:`.tavern`, :mod:`.js_cell`, :mod:`.shell_cell`, :mod:`.worktrees`).
"""

from __future__ import annotations

import argparse
import io
import shlex
from collections.abc import Callable
from typing import Any, Protocol, TypeVar, cast

from IPython.core import magic_arguments
from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, line_magic, magics_class, no_var_expand
from traitlets import Bool, Unicode, observe

from tavernlab.host import Run
from tavernlab.notebook._js_cell import JsRequest, run_js
from tavernlab.notebook._shell_cell import ShellRequest, run_shell
from tavernlab.notebook._state import NotebookState
from tavernlab.notebook._tavern import EXAMPLES as TAVERN_EXAMPLES
from tavernlab.notebook._tavern import SUMMARY as TAVERN_SUMMARY
from tavernlab.notebook._tavern import tavern_table
from tavernlab.notebook._worktrees import EXAMPLES as WORKTREE_EXAMPLES
from tavernlab.notebook._worktrees import SUMMARY as WORKTREE_SUMMARY
from tavernlab.notebook._worktrees import worktree_table

F = TypeVar("F", bound=Callable[..., Any])


class _Decorator(Protocol):
    def __call__(self, func: F) -> F: ...


def _magic_arguments() -> _Decorator:
    """IPython's ``magic_arguments.magic_arguments()`` (untyped upstream), typed."""
    return magic_arguments.magic_arguments()  # type: ignore[no-untyped-call]


def _line_cell_magic(func: F) -> F:
    """IPython's ``line_cell_magic`` (typed upstream as "a function or a decorator"), with
    the function's own type kept."""
    return cast(F, line_cell_magic(func))


def _argument(*names: str, **options: Any) -> _Decorator:
    """IPython's ``magic_arguments.argument(...)`` (untyped upstream), typed."""
    return magic_arguments.argument(*names, **options)  # type: ignore[no-untyped-call]


@magics_class
class TavernMagics(Magics):
    """tavernlab's magics (see the module docstring for the settings)."""

    lab_path = Unicode("", help="The lab directory the magics use; empty means ./.tavernlab "
                       "in the kernel's working directory (JupyterLab starts a kernel in the "
                       "notebook's folder). Changing it switches the current lab at the next "
                       "use.").tag(config=True)
    chat_per_notebook = Bool(True, help="A run starts in the notebook's own chat, "
                             "notebook:<file>, when the kernel knows the notebook's path "
                             "(__session__ / JPY_SESSION_NAME); off, or when the path is "
                             "unknown: the shared chat `notebook`.").tag(config=True)
    round_per_cell = Bool(True, help="Each cell that uses the run is one model round: the "
                          "next cell that uses it ends the round the previous one left open, "
                          "so an interrupted cell never leaves the next one answering "
                          "tool.round_cancelled.").tag(config=True)
    raise_on_error = Bool(True, help="A %%js script that exits non-zero raises JSError and a "
                          "%ws_shell error result raises ShellError (--no-raise, or "
                          "--no-raise-error, turns it off for one call).").tag(config=True)
    stream = Bool(True, help="Show the output of %%js and %ws_shell while the job runs (off: "
                  "all of it when the job ends).").tag(config=True)

    def __init__(self, shell: Any = None, **kwargs: Any) -> None:
        super().__init__(shell, **kwargs)
        self.state = NotebookState(shell, self)
        self.tavern_commands = tavern_table(self._refresh_help)
        self.worktree_commands = worktree_table(self._refresh_help)
        self._refresh_help()

    @observe("lab_path")
    def _lab_path_changed(self, change: dict[str, Any]) -> None:
        self.state.forget_lab()

    def _refresh_help(self) -> None:
        """Keep ``%tavern?`` and ``%worktree?`` listing every registered command."""
        if hasattr(self, "tavern_commands"):
            type(self).tavern.__doc__ = self.tavern_commands.help_text(TAVERN_SUMMARY,
                                                                       TAVERN_EXAMPLES)
        if hasattr(self, "worktree_commands"):
            type(self).worktree.__doc__ = self.worktree_commands.help_text(WORKTREE_SUMMARY,
                                                                           WORKTREE_EXAMPLES)

    @property
    def _namespace(self) -> dict[str, Any]:
        """The user's namespace."""
        assert self.shell is not None
        return self.shell.user_ns  # type: ignore[no-any-return]

    def _run_from(self, magic: str, name: str | None) -> Run:
        """``--run VAR``: a Run from the user's namespace; else the current run."""
        if name is None:
            return self.state.run
        value = self._lookup(magic, "--run", name)
        if not isinstance(value, Run):
            raise UsageError(f"{magic}: --run {name}: expected a Run, got "
                             f"{type(value).__name__}")
        return value

    def _namespace_input(self, magic: str, name: str | None) -> str | bytes | None:
        """``--stdin VAR``: a ``str`` or ``bytes`` from the user's namespace."""
        if name is None:
            return None
        value = self._lookup(magic, "--stdin", name)
        if not isinstance(value, str | bytes):
            raise UsageError(f"{magic}: --stdin {name}: expected str or bytes, got "
                             f"{type(value).__name__}")
        return value

    def _lookup(self, magic: str, option: str, name: str) -> Any:
        if name not in self._namespace:
            raise UsageError(f"{magic}: {option} {name}: no variable {name!r} in the namespace")
        return self._namespace[name]

    def _keeper(self, magic: str, name: str | None) -> Callable[[Any], None] | None:
        """``--out VAR``: a function storing the result under ``VAR``."""
        if name is None:
            return None
        if not name.isidentifier():
            raise UsageError(f"{magic}: --out {name}: not a Python identifier")
        namespace = self._namespace
        return lambda result: namespace.__setitem__(name, result)

    @line_magic
    def tavern(self, line: str) -> Any:
        """(replaced by the command table's help; see :mod:`tavernlab.notebook._tavern`)"""
        return self.tavern_commands.dispatch(line, self.state)

    @no_var_expand
    @_magic_arguments()
    @_argument("--run", metavar="VAR", help="a Run from the namespace (default: the current run)")
    @_argument("--cwd", default="/", metavar="DIR", help="the shell directory (default /)")
    @_argument("--stdin", metavar="VAR", help="a str or bytes from the namespace piped to stdin")
    @_argument("--out", metavar="VAR", help="store the CommandResult in VAR")
    @_argument("--save", metavar="PATH",
              help="write the cell to this workspace file first, then run that file")
    @_argument("--command", choices=("js", "node", "deno"), default="js",
              help="the command name the script sees in process.argv[0]")
    @_argument("--no-raise", "--no-raise-error", dest="no_raise", action="store_true",
              help="do not raise JSError on a non-zero exit")
    @_argument("--quiet", action="store_true", help="show no output (use --out to keep it)")
    @_argument("args", nargs=argparse.REMAINDER, metavar="ARG",
              help="process.argv arguments, unchanged ($x is not expanded; put -- before an "
                   "ARG that starts with -)")
    @_line_cell_magic
    def js(self, line: str, cell: str | None = None) -> None:
        """Run the cell as an ES module in the current run's JavaScript sandbox (like
        ``js -e CELL -- ARG...``, named ``<cell N>`` so stack traces point at the cell's
        lines); the line form ``%js FILE ARG...`` runs a workspace script. Output streams
        into the cell; a kernel interrupt cancels the job; a non-zero exit raises JSError.

        Examples
        --------
        ::

          %%js Mika
          import { workspace } from '@tauritavern/runtime';
          workspace.writeText('output/main.md', `Hello, ${process.argv[1]}!`);

          %%js --save /output/hello.js Mika
          console.log(`Hello, ${process.argv.at(-1)}!`)

          %js /output/hello.js Mika

          %%js --no-raise-error --out r
          process.exitCode = 3
        """
        magic = "%%js" if cell is not None else "%js"
        args, _ = _parse(self.js, magic, line)
        if cell is None and args.save is not None:
            raise UsageError("%js: --save needs the cell form %%js")
        if cell is None and not args.args:
            raise UsageError("%js: give a script to run (%js FILE ARG...), or use %%js")
        request = JsRequest(
            run=self._run_from(magic, args.run), args=_arguments(args.args), body=cell,
            magic_line=line, cwd=args.cwd, stdin=self._namespace_input(magic, args.stdin),
            command=args.command, save=args.save,
            raise_on_error=self.raise_on_error and not args.no_raise, show=not args.quiet,
            stream=self.stream)
        run_js(self.state, request, self._keeper(magic, args.out))

    @no_var_expand
    @_magic_arguments()
    @_argument("--workdir", default="/", metavar="DIR", help="the shell's directory (default /)")
    @_argument("--out", metavar="VAR", help="store the ShellResult in VAR")
    @_argument("--no-raise", "--no-raise-error", dest="no_raise", action="store_true",
              help="do not raise ShellError on an error")
    @_argument("--run", metavar="VAR", help="a Run from the namespace (default: the current run)")
    @_argument("command", nargs=argparse.REMAINDER, metavar="CMD",
              help="the command (line form; the cell form takes the cell)")
    @_line_cell_magic
    def ws_shell(self, line: str, cell: str | None = None) -> None:
        """One ``workspace.shell`` tool call in the current run, as the model makes it (it
        appears in the run's events): ``%ws_shell CMD`` or the cell's text with
        ``%%ws_shell``. Output streams into the cell; a kernel interrupt cancels the call;
        an error result raises ShellError.

        Examples
        --------
        ::

          %ws_shell ls -l /output

          %%ws_shell --workdir /output
          echo draft > notes.md
          wc -l notes.md

          %ws_shell --no-raise-error --out r grep -r TODO /output
        """
        magic = "%%ws_shell" if cell is not None else "%ws_shell"
        args, words = _parse(self.ws_shell, magic, line)
        if cell is not None and args.command:
            raise UsageError(f"%%ws_shell: the command is the cell; unexpected "
                             f"{args.command[0]!r}")
        separator = int(args.command[:1] == ["--"])
        # IPython ends a cell body with exactly one added newline; the command is what the
        # user typed, so ``%%ws_shell`` above ``echo hi`` calls the tool with ``echo hi``.
        command = cell.removesuffix("\n") if cell is not None else _raw_rest(
            line, len(words) - len(args.command) + separator)
        if not command.strip():
            raise UsageError("%ws_shell: give a command (%ws_shell CMD) or use %%ws_shell")
        request = ShellRequest(run=self._run_from(magic, args.run), command=command,
                               workdir=args.workdir,
                               raise_on_error=self.raise_on_error and not args.no_raise,
                               stream=self.stream)
        run_shell(self.state, request, self._keeper(magic, args.out))

    @no_var_expand
    @line_magic
    def worktree(self, line: str) -> Any:
        """(replaced by the command table's help; see :mod:`tavernlab.notebook._worktrees`)"""
        return self.worktree_commands.dispatch(line, self.state)


def _parse(magic: Any, name: str, line: str) -> tuple[argparse.Namespace, list[str]]:
    """The magic's options parsed from ``line`` (split like a shell) and the words; every
    usage error names the magic."""
    try:
        words = shlex.split(line)
        return magic.parser.parse_args(words), words
    except UsageError as exc:
        text = str(exc)
        if text.startswith("unrecognized arguments: ") and name.lstrip("%") == "js":
            first = text.removeprefix("unrecognized arguments: ").split(" ")[0]
            rest = words[words.index(first):] if first in words else [first]
            text += (f" (arguments for the script go after --: {name} -- "
                     f"{shlex.join(rest)}; or --help for the options)")
        raise UsageError(f"{name}: {text}") from None
    except ValueError as exc:  # unbalanced quotes
        raise UsageError(f"{name}: {exc}") from None


def _arguments(words: list[str]) -> list[str]:
    """The ARGs after the options, a leading ``--`` separator dropped."""
    return words[1:] if words[:1] == ["--"] else list(words)


def _raw_rest(line: str, consumed: int) -> str:
    """``line`` after its first ``consumed`` shell words, exactly as typed (so quotes, ``$x``
    and globs of a shell command reach the shell unchanged)."""
    stream = io.StringIO(line)
    lexer = shlex.shlex(stream, posix=True)
    lexer.whitespace_split = True
    for _ in range(consumed):
        lexer.get_token()
    return line[stream.tell():].strip() if consumed else line.strip()


__all__ = ["TavernMagics"]
