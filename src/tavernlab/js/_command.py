"""The V5 ``js`` / ``node`` / ``deno`` command (docs/js-and-skills.md).

:func:`run_js_command` is the one entry point; the shell registers it as a bashkit builtin and
``run.js(...)`` / ``%%js`` call it directly::

    result = run_js_command(["-e", "console.log(1)"], scope=scope, context=context)
    result.exit_code, result.stdout, result.stderr, result.timed_out, result.cancelled

    # a notebook cell: streamed output, the cell's own name and lines, reproducible time
    run_js_command(["-e", cell, "--", *args], scope=scope, context=context, cwd="/scratch",
                   eval_name="<cell 4>", on_output=show, clock=lab_clock, seed=1234)

Steps: scan the arguments (help, ``-e``, ``--``, entry, script arguments; errors exit 2), load
the entry (a workspace ``.js``/``.mjs`` file resolved against ``cwd``, stdin, or the ``-e``
source; failures exit 1 with ``js: <message>``), load the module graph through the
Invocation's ``ScopedWorkspaceFs`` (:mod:`tavernlab.js._modules`), run the job in the worker
pool (:mod:`tavernlab.js._pool`) with the runtime served by
:class:`~tavernlab.js._runtime_api.RuntimeCapabilities`, and build the result: the exit status is
``process.exitCode``, or 1 with the failure report ``js: <module>: <message>\\n<stack>\\n``
appended to stderr (earlier stderr is cut, keeping its beginning, so the report always fits the
128 KiB cap).

tavernlab choices where upstream is unknown:

* An empty ``b""`` stdin is an empty module (``stdin=None`` is "no stdin": an argument error).
* Messages about the entry's form name the path as the user typed it (``js task.txt`` ->
  `` `task.txt` must be an explicit .js or .mjs module path.``); a missing entry names its
  absolute shell path (upstream's ``Cannot read `/scratch/task.js`: path not found. ...``).
* A static import that cannot be loaded is a failure report (exit 1) naming the entry module,
  with a one-frame stack at the import site, like an exception thrown while linking.
* ``deadline=None`` means 30 s from the call (the shell's default).
* A cancel noticed before the job starts (the token, or the scope's own check raising
  ``Cancelled`` while modules load) gives ``cancelled=True`` and exit status 1 with
  ``js: JavaScript execution was cancelled.`` (``js: <module>: ...`` once the entry is known).
* Input budget: module sources (file, stdin and ``-e``) and ``workspace.readText`` bytes are
  charged to ``budget``; the shell passes its call-wide :class:`~tavernlab.js.InputBudget`,
  a direct call gets a fresh 8 MiB one. A stdin module over the budget is a load failure.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from tavernlab.cancel import CancelToken
from tavernlab.clock import Clock
from tavernlab.errors import Cancelled
from tavernlab.js._budget import InputBudget, InputBudgetExceeded
from tavernlab.js._builtins import COMMAND_BUILTINS, LOAD_DEADLINE
from tavernlab.js._command_line import CommandLine, parse_command_line, shell_path
from tavernlab.js._determinism import random_state, time_origin
from tavernlab.js._errors import JsArgumentError, JsLoadError, ModuleLoadError
from tavernlab.js._help import HELP_TEXT
from tavernlab.js._job import Job, JobOutcome
from tavernlab.js._limits import (
    DEFAULT_DEADLINE_S,
    INTERRUPT_REASONS,
    OUTPUT_CAP,
    SOURCE_NOT_UTF8,
)
from tavernlab.js._loaders import (
    WorkspaceModuleLoader,
    dirname,
    has_invalid_path_chars,
    has_module_extension,
    invalid_path,
    join_relative,
    not_a_module_path,
)
from tavernlab.js._modules import INTERNAL_PREFIX, build_module_graph
from tavernlab.js._output import CommandOutput, OutputCallback
from tavernlab.js._pool import WorkerPool, default_pool
from tavernlab.js._runtime_api import RuntimeCapabilities, runtime_context_json
from tavernlab.js.kit import KitDeadlinePassed
from tavernlab.workspace.macros import FrozenContext
from tavernlab.workspace.scope import ScopedWorkspaceFs


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

    def json(self) -> Any:
        """The job's stdout parsed as JSON (what a V5 script prints with
        ``console.log(JSON.stringify(result))``); :class:`ValueError` when it is not JSON,
        naming the exit code and the start of what was printed."""
        try:
            return json.loads(self.stdout)
        except ValueError:
            raise ValueError(f"the job's stdout is not JSON (exit {self.exit_code}): "
                             f"{self.stdout[:200]!r}; stderr: {self.stderr[:200]!r}") from None


def run_js_command(argv: list[str], *, scope: ScopedWorkspaceFs, context: FrozenContext,
                   cwd: str = "/", stdin: bytes | None = None, command: str = "js",
                   deadline: float | None = None, token: CancelToken | None = None,
                   budget: InputBudget | None = None, pool: WorkerPool | None = None,
                   clock: Clock | None = None, seed: int | None = None,
                   on_output: OutputCallback | None = None,
                   eval_name: str | None = None) -> CommandResult:
    """Run ``js``/``node``/``deno`` with ``argv`` (without the command name).

    ``scope`` is the Invocation's view (policy, skills mount, tracker); ``context`` the run's
    frozen facts; ``cwd`` the shell directory; ``stdin`` the piped bytes (``None``: nothing
    piped); ``deadline`` a ``time.monotonic()`` instant (default: 30 s from now); ``token``
    cancels; ``budget`` is the shell call's input budget; ``pool`` defaults to the process-wide
    pool. ``clock`` (read once, for the job's time origin) and ``seed`` make ``Date`` and
    ``Math.random`` deterministic (:mod:`tavernlab.js._determinism`); ``None`` keeps real time
    and engine randomness. ``on_output(stream, text)`` receives every chunk of stdout and
    stderr as it is produced (:mod:`tavernlab.js._output`); the result still holds all of it.
    ``eval_name`` names the ``-e`` module instead of ``<cwd>/<eval>`` (``"<cell 4>"``: errors
    read ``<cell 4>:3:7``); its relative imports still resolve against ``cwd``. It must not
    look like a path (no leading ``/`` or ``.``, no NUL), an internal or a built-in name, and
    it is only for an ``-e`` entry (``ValueError`` otherwise).
    """
    output = CommandOutput(on_output)
    try:
        line = parse_command_line(argv, command, stdin)
    except JsArgumentError as exc:
        return _finished(output, 2, stderr=f"js: {exc.message}\n")
    if line.help:
        return _finished(output, 0, stdout=HELP_TEXT)
    if eval_name is not None:
        check_eval_name(eval_name, line)
    deadline = time.monotonic() + DEFAULT_DEADLINE_S if deadline is None else deadline
    budget = budget if budget is not None else InputBudget()
    cwd = shell_path("/", cwd)
    loader = WorkspaceModuleLoader(scope, budget, COMMAND_BUILTINS)
    server = RuntimeCapabilities(scope, context, budget, output)
    cancelled = f"js: {INTERRUPT_REASONS['cancel']}\n"
    if token is not None and token.cancelled:
        return _finished(output, 1, stderr=cancelled, cancelled=True)
    try:
        name, source = _load_entry(line, cwd, loader, budget, eval_name)
    except (JsLoadError, ModuleLoadError) as exc:
        return _finished(output, 1, stderr=f"js: {exc.message}\n")
    except Cancelled:
        return _finished(output, 1, stderr=cancelled, cancelled=True)
    bounded = LOAD_DEADLINE.set(deadline)
    try:
        directory = cwd if line.kind == "eval" else dirname(name) or "/"
        graph = build_module_graph(name, source, loader, directory=directory)
    except ModuleLoadError as exc:
        return _result(output, name, JobOutcome("error", text=exc.message, stack=exc.stack))
    except Cancelled:
        return _result(output, name, JobOutcome("interrupted", reason="cancel"))
    except KitDeadlinePassed:  # a kit module still loading at the job's deadline
        return _result(output, name, JobOutcome("interrupted", reason="deadline"))
    finally:
        LOAD_DEADLINE.reset(bounded)
    job = Job(mode="command", entry=name, modules=graph.modules,
              runtime_names=COMMAND_BUILTINS.runtime_names, context=runtime_context_json(context),
              argv=_process_argv(command, line, name), output_cap=OUTPUT_CAP,
              time_origin=time_origin(clock), random_state=random_state(seed))
    outcome = (pool or default_pool()).run(job, server, deadline=deadline, token=token)
    return _result(output, name, outcome)


def check_eval_name(eval_name: str, line: CommandLine) -> None:
    """Refuse an ``eval_name`` that could collide with another module, or a non-eval entry."""
    if line.kind != "eval":
        raise ValueError("eval_name names the -e SOURCE module; this command line has a "
                         f"{line.kind} entry")
    if (not eval_name or eval_name.startswith(("/", ".", INTERNAL_PREFIX)) or "\0" in eval_name
            or eval_name in COMMAND_BUILTINS):
        raise ValueError(f"eval_name {eval_name!r} must not be empty, start with '/', '.' or "
                         f"{INTERNAL_PREFIX!r}, contain NUL, or be a built-in module name")


def _process_argv(command: str, line: CommandLine, name: str) -> tuple[str, ...]:
    """``process.argv``: the command, the entry (none for eval), the arguments."""
    entry = () if line.kind == "eval" else (name if line.kind == "file" else "-",)
    return (command, *entry, *line.args)


def _load_entry(line: CommandLine, cwd: str, loader: WorkspaceModuleLoader,
                budget: InputBudget, eval_name: str | None) -> tuple[str, bytes]:
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
            name, source = join_relative(cwd, "<stdin>") or "/<stdin>", line.stdin
        else:
            name = eval_name or join_relative(cwd, "<eval>") or "/<eval>"
            source = line.source.encode("utf-8", "surrogatepass")
        try:
            budget.charge(len(source))
        except InputBudgetExceeded as exc:
            raise JsLoadError(exc.message) from None
    try:
        source.decode("utf-8")
    except UnicodeDecodeError:
        raise JsLoadError(SOURCE_NOT_UTF8) from None
    return name, source


def _finished(output: CommandOutput, exit_code: int, *, stdout: str = "", stderr: str = "",
              timed_out: bool = False, cancelled: bool = False) -> CommandResult:
    """Write the command's own final text (help, an error line, a failure report) to
    ``output`` and build the result from everything written."""
    output.write("stdout", stdout)
    earlier = output.stderr
    output.write("stderr", stderr)
    stderr_text = fit_failure_report(earlier, stderr) if stderr else earlier
    return CommandResult(exit_code, output.stdout, stderr_text, timed_out=timed_out,
                         cancelled=cancelled)


def _result(output: CommandOutput, module: str, outcome: JobOutcome) -> CommandResult:
    if outcome.status == "ok":
        return _finished(output, outcome.exit_code)
    report = f"js: {module}: {outcome.message}\n"
    if outcome.stack:
        report += outcome.stack + "\n"
    return _finished(output, 1, stderr=report, timed_out=outcome.timed_out,
                     cancelled=outcome.cancelled)


def fit_failure_report(earlier: str, report: str, cap: int = OUTPUT_CAP) -> str:
    """``earlier + report`` within ``cap`` UTF-8 bytes: earlier stderr is cut (keeping its
    beginning) so the report fits; a report that alone exceeds the cap is cut itself. Lone
    surrogates (a path echoed from the command line) are measured as three bytes."""
    report_bytes = report.encode("utf-8", "surrogatepass")
    if len(report_bytes) >= cap:
        return _cut(report_bytes, cap)
    room = cap - len(report_bytes)
    earlier_bytes = earlier.encode("utf-8", "surrogatepass")
    if len(earlier_bytes) > room:
        earlier = _cut(earlier_bytes, room)
    return earlier + report


def _cut(data: bytes, size: int) -> str:
    """The longest UTF-8 prefix of ``data`` within ``size`` bytes."""
    return data[:size].decode("utf-8", "ignore")
