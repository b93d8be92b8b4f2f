"""The V5 ``js`` / ``node`` / ``deno`` command (spec/js-and-skills.md sections 3 and 5).

:func:`run_js_command` is the one entry point; the shell registers it as a bashkit builtin and
``run.js(...)`` / ``%%js`` call it directly::

    result = run_js_command(["-e", "console.log(1)"], scope=scope, context=context)
    result.exit_code, result.stdout, result.stderr, result.timed_out, result.cancelled

Steps: scan the arguments (help, ``-e``, ``--``, entry, script arguments; errors exit 2), load
the entry (a workspace ``.js``/``.mjs`` file resolved against ``cwd``, stdin, or the ``-e``
source; failures exit 1 with ``js: <message>``), load the module graph through the
Invocation's ``ScopedWorkspaceFs`` (:mod:`tavernlab.js.modules`), run the job in the worker
pool (:mod:`tavernlab.js.pool`) with the runtime served by
:class:`~tavernlab.js.runtime_api.RuntimeCapabilities`, and build the result: the exit status is
``process.exitCode``, or 1 with the failure report ``js: <module>: <message>\\n<stack>\\n``
appended to stderr (earlier stderr is cut, keeping its beginning, so the report always fits the
128 KiB cap).

tavernlab choices where upstream is unknown:

* No stdin at all (``stdin=None``) with ``-`` gives ``No JavaScript source on stdin; pipe a
  module or use a workspace script file.`` (an empty ``b""`` stdin is an empty module).
* Messages name the path as the user typed it (``js task.txt`` ->
  `` `task.txt` must be an explicit .js or .mjs module path.``).
* A static import that cannot be loaded is a failure report (exit 1) naming the entry module,
  with a one-frame stack at the import site, like an exception thrown while linking.
* ``deadline=None`` means 30 s from the call (the shell's default).
* A cancel noticed before the job starts (the token, or the scope's own check raising
  ``Cancelled`` while modules load) gives ``cancelled=True`` and exit status 1 with
  ``js: JavaScript execution was cancelled.`` (``js: <module>: ...`` once the entry is known).
* Input budget: module sources (file, stdin and ``-e``) and ``workspace.readText`` bytes are
  charged to ``budget``; the shell passes its call-wide :class:`~tavernlab.js.budget.InputBudget`,
  a direct call gets a fresh 8 MiB one.
"""

from __future__ import annotations

import textwrap
import time
from dataclasses import dataclass
from typing import Literal

from tavernlab.cancel import CancelToken
from tavernlab.errors import Cancelled
from tavernlab.js.budget import InputBudget, InputBudgetExceeded
from tavernlab.js.builtins import COMMAND_BUILTINS
from tavernlab.js.errors import JsArgumentError, JsLoadError, ModuleLoadError
from tavernlab.js.job import Job, JobOutcome
from tavernlab.js.limits import (
    DEFAULT_DEADLINE_S,
    INTERRUPT_REASONS,
    OUTPUT_CAP,
    SOURCE_NOT_UTF8,
    STDIN_LIMIT,
)
from tavernlab.js.loaders import (
    WorkspaceModuleLoader,
    has_invalid_path_chars,
    has_module_extension,
    invalid_path,
    join_relative,
    not_a_module_path,
)
from tavernlab.js.modules import build_module_graph
from tavernlab.js.pool import WorkerPool, default_pool
from tavernlab.js.runtime_api import RuntimeCapabilities, runtime_context_json
from tavernlab.workspace.context import FrozenContext
from tavernlab.workspace.scope import ScopedWorkspaceFs

HELP_TEXT = """\
js, node, deno: run a JavaScript ES module in the workspace sandbox (QuickJS).

Usage:
  js FILE [ARG...]          run a .js/.mjs workspace file
  js -- FILE [ARG...]       same; use when FILE starts with "-"
  js - [ARG...] < FILE      read the module from stdin
  js -e SOURCE [ARG...]     run SOURCE; put -- before args that look like options
  deno run FILE [ARG...] | deno eval SOURCE [ARG...]
Examples:
  js /scratch/task.js arg1 --option 'arg with spaces'
  js -e 'console.log(process.argv)' -- --help
Arguments: everything after the entry (or after the eval source) is passed
  as strings in process.argv: [command, entry, ...args]; eval has no entry.
Files: import { workspace, context, macros, log } from '@tauritavern/runtime'
  workspace.readText/writeText/exists/listFiles use workspace-root paths
  (output/main.md); writes are immediate and are not rolled back.
  Relative imports resolve from the importing file; FILE resolves from cwd.
Context: context.worldInfo, context.variables, context.macro are frozen at
  run start; macros.render(text) expands {{macros}} once.
Output: console.log/info/debug -> stdout, console.warn/error and log.* ->
  stderr; 128 KiB per stream. Print results with JSON.stringify.
Exit: process.exitCode (integer 0-255, default 0); an uncaught error exits 1.
""" + textwrap.fill(
    f"Built-in modules: {COMMAND_BUILTINS.summary()}. Bundle other libraries into the skill "
    "(scripts/vendor/). No Node/Deno APIs, npm, TypeScript, network, timers or processes.",
    width=78, subsequent_indent="  ") + "\n"

NO_SOURCE = "Provide a script file, -e SOURCE, or - for stdin. See js --help."
EVAL_NEEDS_VALUE = "-e requires a value. See js --help."
DENO_USAGE = "Use deno run FILE or deno eval SOURCE. See js --help."
STDIN_TOO_LARGE = "JavaScript stdin exceeds the command size limit; use a workspace script file."
#: Upstream detail unknown; tavernlab's choice (spec 3.3).
NO_STDIN = "No JavaScript source on stdin; pipe a module or use a workspace script file."


@dataclass(frozen=True, slots=True)
class CommandResult:
    """What one ``js`` run produced.

    ``timed_out``/``cancelled`` tell the shell that the job was stopped by its deadline or by
    cancellation, so it can report ``Command timed out.`` / ``Command cancelled.``.
    """

    exit_code: int
    stdout: str
    stderr: str
    timed_out: bool = False
    cancelled: bool = False


@dataclass(frozen=True, slots=True)
class CommandLine:
    """The scanned arguments: help, or an entry (``file``/``stdin``/``eval``) plus script
    arguments. ``source`` is the file argument or the eval code."""

    help: bool
    kind: Literal["file", "stdin", "eval"] | None = None
    source: str = ""
    args: tuple[str, ...] = ()


def parse_command_line(argv: list[str], command: str = "js") -> CommandLine:
    """Scan ``argv`` (without the command name) per spec 3.1-3.2; raise
    :class:`JsArgumentError` with the exact message."""
    if command == "deno":
        if argv and argv[0] in ("--help", "-h"):
            return CommandLine(help=True)
        if argv and argv[0] == "run":
            argv = argv[1:]
        elif argv and argv[0] == "eval":
            argv = ["-e", *argv[1:]]
        else:
            raise JsArgumentError(DENO_USAGE)
    kind: Literal["file", "stdin", "eval"] | None = None
    source = ""
    index = 0
    while index < len(argv):
        arg = argv[index]
        if arg in ("--help", "-h"):
            return CommandLine(help=True)
        if arg in ("-e", "--eval") and kind is None:
            if index + 1 >= len(argv):
                raise JsArgumentError(EVAL_NEEDS_VALUE)
            kind, source = "eval", argv[index + 1]
            index += 2
            continue
        if arg == "--":
            index += 1
            if kind is None and index < len(argv):
                kind, source = _entry(argv[index])
                index += 1
            break
        if arg == "-" or not arg.startswith("-"):
            if kind is None:
                kind, source = _entry(arg)
                index += 1
            break
        raise JsArgumentError(f"Unsupported or repeated argument `{arg}`. See js --help.")
    if kind is None:
        raise JsArgumentError(NO_SOURCE)
    return CommandLine(help=False, kind=kind, source=source, args=tuple(argv[index:]))


def _entry(arg: str) -> tuple[Literal["file", "stdin"], str]:
    return ("stdin", "") if arg == "-" else ("file", arg)


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


def run_js_command(argv: list[str], *, scope: ScopedWorkspaceFs, context: FrozenContext,
                   cwd: str = "/", stdin: bytes | None = None, command: str = "js",
                   deadline: float | None = None, token: CancelToken | None = None,
                   budget: InputBudget | None = None,
                   pool: WorkerPool | None = None) -> CommandResult:
    """Run ``js``/``node``/``deno`` with ``argv`` (without the command name).

    ``scope`` is the Invocation's view (policy, skills mount, tracker); ``context`` the run's
    frozen facts; ``cwd`` the shell directory; ``stdin`` the piped bytes (``None``: nothing
    piped); ``deadline`` a ``time.monotonic()`` instant (default: 30 s from now); ``token``
    cancels; ``budget`` is the shell call's input budget; ``pool`` defaults to the kernel-wide
    pool.
    """
    try:
        line = parse_command_line(argv, command)
    except JsArgumentError as exc:
        return CommandResult(2, "", f"js: {exc.message}\n")
    if line.help:
        return CommandResult(0, HELP_TEXT, "")
    deadline = time.monotonic() + DEFAULT_DEADLINE_S if deadline is None else deadline
    budget = budget if budget is not None else InputBudget()
    cwd = shell_path("/", cwd)
    loader = WorkspaceModuleLoader(scope, budget, COMMAND_BUILTINS)
    server = RuntimeCapabilities(scope, context, budget)
    not_started = CommandResult(1, "", f"js: {INTERRUPT_REASONS['cancel']}\n", cancelled=True)
    if token is not None and token.cancelled:
        return not_started
    try:
        name, source = _load_entry(line, cwd, stdin, loader, budget)
    except (JsLoadError, ModuleLoadError) as exc:
        return CommandResult(1, "", f"js: {exc.message}\n")
    except Cancelled:
        return not_started
    try:
        graph = build_module_graph(name, source, loader)
    except ModuleLoadError as exc:
        return _result(server, name, JobOutcome("error", text=exc.message, stack=exc.stack))
    except Cancelled:
        return _result(server, name, JobOutcome("interrupted", reason="cancel"))
    argv_js = [command, *(() if line.kind == "eval" else (
        name if line.kind == "file" else "-",)), *line.args]
    job = Job(mode="command", entry=name, modules=graph.modules,
              runtime_names=COMMAND_BUILTINS.runtime_names, context=runtime_context_json(context),
              argv=tuple(argv_js), output_cap=OUTPUT_CAP)
    outcome = (pool or default_pool()).run(job, server, deadline=deadline, token=token)
    return _result(server, name, outcome)


def _load_entry(line: CommandLine, cwd: str, stdin: bytes | None,
                loader: WorkspaceModuleLoader, budget: InputBudget) -> tuple[str, bytes]:
    """The entry's module name and source bytes (charged to the budget)."""
    if line.kind == "file":
        if has_invalid_path_chars(line.source):
            raise JsLoadError(invalid_path(line.source))
        name = shell_path(cwd, line.source)
        if not has_module_extension(name):
            raise JsLoadError(not_a_module_path(line.source))
        source = loader.load(name, "")
    else:
        if line.kind == "stdin":
            if stdin is None:
                raise JsLoadError(NO_STDIN)
            if len(stdin) > STDIN_LIMIT:
                raise JsLoadError(STDIN_TOO_LARGE)
            name, source = join_relative(cwd, "<stdin>") or "/<stdin>", stdin
        else:
            name, source = join_relative(cwd, "<eval>") or "/<eval>", line.source.encode(
                "utf-8", "surrogatepass")
        try:
            budget.charge(len(source))
        except InputBudgetExceeded as exc:
            raise JsLoadError(exc.message) from None
    try:
        source.decode("utf-8")
    except UnicodeDecodeError:
        raise JsLoadError(SOURCE_NOT_UTF8) from None
    return name, source


def _result(server: RuntimeCapabilities, module: str, outcome: JobOutcome) -> CommandResult:
    stdout = "".join(server.stdout)
    stderr = "".join(server.stderr)
    if outcome.status == "ok":
        return CommandResult(outcome.exit_code, stdout, stderr)
    report = f"js: {module}: {outcome.message}\n"
    if outcome.stack:
        report += outcome.stack + "\n"
    return CommandResult(1, stdout, fit_failure_report(stderr, report),
                         timed_out=outcome.timed_out, cancelled=outcome.cancelled)


def fit_failure_report(earlier: str, report: str, cap: int = OUTPUT_CAP) -> str:
    """``earlier + report`` within ``cap`` UTF-8 bytes: earlier stderr is cut (keeping its
    beginning) so the report fits; a report that alone exceeds the cap is cut itself."""
    report_bytes = report.encode("utf-8")
    if len(report_bytes) >= cap:
        return _cut(report_bytes, cap)
    room = cap - len(report_bytes)
    earlier_bytes = earlier.encode("utf-8")
    if len(earlier_bytes) > room:
        earlier = _cut(earlier_bytes, room)
    return earlier + report


def _cut(data: bytes, size: int) -> str:
    """The longest UTF-8 prefix of ``data`` within ``size`` bytes."""
    return data[:size].decode("utf-8", "ignore")
