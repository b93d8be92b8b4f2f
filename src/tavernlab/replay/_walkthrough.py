"""A notebook that replays a bundle's run step by step with the magics
(``tavernlab notebook from-run FILE -o demo.ipynb``).

The notebook runs on the tavernlab kernel (named in its metadata), which loads the extension.
Its cells, with deterministic ids (``tavern-0001``...):

1. a heading naming the run, its chat, its actions and skills;
2. the setup: :meth:`tavernlab.replay.Replay.prepare` builds a temporary lab as the
   recorded one stood (recorded clock and ids, skills, chat, persist base) and starts the
   run; the run becomes the extension's current run (:data:`BIND_RUN`) and each cell stops
   being a round of its own (``round_per_cell = False``: rounds end where the recording
   ended them);
3. a markdown heading per round, then one cell per action: ``%%ws_shell`` for a shell call
   (the cell form, so IPython never expands ``$VAR`` in the command), ``%js ARGV`` for a
   ``run.js`` job, ``%%js`` for a job recorded from a ``%%js`` cell that lands at the same
   cell number here, ``run.js(...)`` / ``run.call_tool(...)`` where no magic reproduces the
   recorded arguments exactly (another cell number, a multi-line ``-e`` without a cell, a
   command ending in a newline), ``run.finish(...)``, ``run.call_tool(...)`` for any other
   tool call, ``run.start_subagent(...)``, ``run.next_round()``, ``run.resume()``; an action
   no call can express as recorded (a cancelled one, a reopen, a call with a non-default call
   id) is played by ``replay.play_action(i)``;
4. the verification: ``replay.verify()`` shows the :class:`~tavernlab.replay.ReplayReport`.

A bundle is shared, so nothing recorded in it runs as code when the notebook runs: every
recorded value (arguments, commands, argv, directories, eval names, stdin, ids, Profiles)
enters a code cell as a Python data literal (``repr``/``pprint``, or ``json.loads`` of a
string literal for what no literal spells: a non-finite number, deep nesting), never as
code or comment text. The magic forms are used only when the magic receives the recorded
values exactly: every word of a magic line is printable, holds no ``$``, ``{`` or ``}``,
and IPython's own input transformation of the cell (:class:`TransformerManager`) yields
exactly the magic call with that line and that body (no line break, prompt stripping,
help request or line continuation changes it); a body must be UTF-8 without NUL. Anything
else falls back to the literal call. The ids a bundle names, the run id and the bound
skills are checked when it is read (:func:`~tavernlab.replay.read_bundle`); a recorded file
the writer reads that is not the JSON object it must be is refused with
``replay.bundle_invalid``.

What the magics do with a cell, which this relies on (tests/notebook/test_from_run.py runs
such a notebook in the real kernel): ``%%ws_shell --workdir W [--no-raise]`` calls
``workspace.shell`` with ``{"command": <the body without IPython's final newline>,
"workdir": W}``; ``%%js`` runs ``js -e "\n" + BODY -- ARG...`` named ``<cell N>``, N the
cell's execution count, which in a notebook run top to bottom in a fresh kernel is the code
cell's position (:attr:`_Cells.next_count`). Both magics take their line as typed (no
``$``/``{}`` expansion) and split it like a shell; a first ARG that starts with ``-`` would
be read as an option, so a ``--`` goes before it (the magics drop one leading ``--``).
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
import math
import os
import pprint
import shlex
from pathlib import Path
from typing import Any

import nbformat

import tavernlab.layout as layout
from tavernlab.errors import InvalidData
from tavernlab.replay._actions import JsJob, NextRound, Resume, Subagent, ToolCall
from tavernlab.replay._bundle import Bundle, read_bundle
from tavernlab.replay._errors import BundleInvalid, ReplaySetupError
from tavernlab.workspace.storage import replace_durably

#: How the setup cell makes ``run`` the extension's current run (an assumption, see above).
BIND_RUN = "tavernlab.notebook.current_state().use_run(run)"
KERNELSPEC = {"name": "tavernlab", "display_name": "tavernlab", "language": "python"}


class _Cells:
    """The notebook being written, with deterministic cell ids."""

    def __init__(self) -> None:
        self.cells: list[Any] = []

    def _id(self) -> str:
        return f"tavern-{len(self.cells) + 1:04d}"

    def markdown(self, text: str) -> None:
        cell = nbformat.v4.new_markdown_cell(text, id=self._id())  # type: ignore[no-untyped-call]
        self.cells.append(cell)

    def code(self, text: str, *literals: str) -> None:
        """A code cell; ``literals`` are the recorded values' expressions it holds (one in
        the ``json.loads`` form makes the cell import ``json`` first)."""
        if any(literal.startswith("json.loads(") for literal in literals):
            text = "import json\n" + text
        cell = nbformat.v4.new_code_cell(text, id=self._id())  # type: ignore[no-untyped-call]
        self.cells.append(cell)

    @property
    def next_count(self) -> int:
        """The execution count the next code cell gets when the notebook runs top to bottom
        in a fresh kernel (what ``%%js`` names ``<cell N>``)."""
        return 1 + sum(1 for cell in self.cells if cell.cell_type == "code")


def _cell_body(command: str) -> bool:
    """Whether a cell magic reproduces ``command`` exactly: IPython ends every cell body with
    one newline, which ``%%ws_shell`` drops, so a command ending in a newline of its own (or
    an empty one) is played with ``run.shell`` instead."""
    return bool(command.strip()) and not command.endswith("\n")


#: Deepest nesting written as a plain literal (Python's parser refuses deeply nested
#: brackets; deeper data goes through ``json.loads``).
MAX_LITERAL_DEPTH = 40


def _plain(value: Any, depth: int = 0) -> bool:
    """Whether ``value`` (decoded JSON) reads back from its ``repr`` as the same data:
    ``None``, booleans, integers, finite floats, strings, lists and string-keyed dicts,
    nested at most :data:`MAX_LITERAL_DEPTH` deep."""
    if value is None or isinstance(value, bool | int | str):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if depth >= MAX_LITERAL_DEPTH:
        return False
    if isinstance(value, list):
        return all(_plain(item, depth + 1) for item in value)
    if isinstance(value, dict):
        return all(isinstance(key, str) and _plain(item, depth + 1)
                   for key, item in value.items())
    return False


def _literal(value: Any) -> str:
    """A Python expression that evaluates to ``value`` and runs nothing else: its
    pretty-printed literal, or ``json.loads('…')`` of its JSON text (the cell then needs
    ``import json``: see :meth:`_Cells.code`)."""
    if _plain(value):
        return pprint.pformat(value, width=88, sort_dicts=False)
    try:
        text = json.dumps(value, ensure_ascii=True)
    except (TypeError, ValueError, RecursionError):
        raise BundleInvalid(f"a recorded value of type {type(value).__name__} is not "
                            "JSON data") from None
    return f"json.loads({text!r})"


@functools.cache
def _transformer() -> Any:
    """IPython's input transformation, the one a kernel applies to every cell (loaded when
    a notebook is first written: the rest of the package does not need IPython)."""
    from IPython.core.inputtransformer2 import TransformerManager

    return TransformerManager()  # type: ignore[no-untyped-call]


def _magic_word(word: str) -> bool:
    """A word a magic line may carry: printable (no line break, control character or lone
    surrogate) and free of IPython's expansion characters ``$ { }``."""
    return word.isprintable() and not set(word) & {"$", "{", "}"}


def _body_text(body: str) -> bool:
    """Whether a cell body can hold ``body`` as typed: UTF-8 text without NUL."""
    try:
        body.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return "\0" not in body


def _line_magic(name: str, words: list[str]) -> str | None:
    """``%NAME WORDS`` when IPython hands the magic exactly ``shlex.join(words)``, else
    ``None``."""
    if not words or not all(_magic_word(w) for w in words):
        return None
    line = shlex.join(words)
    cell = f"%{name} {line}"
    expected = f"get_ipython().run_line_magic({name!r}, {line!r})\n"
    return cell if _transformer().transform_cell(cell) == expected else None


def _cell_magic(name: str, words: list[str], body: str) -> str | None:
    """``%%NAME WORDS`` above ``body`` when IPython hands the magic exactly that line and
    ``body`` plus its final newline, else ``None``."""
    if not all(_magic_word(w) for w in words) or not _body_text(body):
        return None
    line = shlex.join(words)
    cell = f"%%{name} {line}\n{body}" if line else f"%%{name}\n{body}"
    expected = f"get_ipython().run_cell_magic({name!r}, {line!r}, {body + chr(10)!r})\n"
    return cell if _transformer().transform_cell(cell) == expected else None


def _option_value(value: str) -> bool:
    """Whether ``value`` can follow an option of a magic (``--workdir``, ``--cwd``) and be
    read as its value."""
    return bool(value) and not value.startswith("-")


def _arguments(argv: list[str]) -> list[str]:
    """ARGs for a magic line: a ``--`` in front when the first starts with ``-`` (the magics
    drop one leading ``--``, and read an option-like first word as an option)."""
    return ["--", *argv] if argv and argv[0].startswith("-") else list(argv)


def _object(bundle: Bundle, path: str) -> dict[str, Any]:
    """A recorded JSON object (``replay.bundle_invalid`` when it is not one)."""
    try:
        value = bundle.run_json(path)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BundleInvalid(f"the bundle's run file {path} is not JSON: "
                            f"{str(exc).splitlines()[0][:200]}") from None
    if not isinstance(value, dict):
        raise BundleInvalid(f"the bundle's run file {path} is not a JSON object")
    return value


class _Writer:
    """Turns the actions of one bundle into cells."""

    def __init__(self, bundle: Bundle) -> None:
        self.bundle = bundle
        self.cells = _Cells()
        self.agents: dict[str, str] = {}
        self.calls = 0
        self.profile = _object(bundle, layout.RESOLVED_PROFILE)

    def recorded_error(self, call: ToolCall) -> bool:
        result = _object(self.bundle, call.result_path) if call.result_path else {}
        return bool(result.get("isError"))

    def tool_call(self, index: int, call: ToolCall) -> None:
        self.calls += 1
        if call.cancel is not None:
            self.cells.code(f"replay.play_action({index})  # cancelled in the recording")
            return
        if call.call_id != f"call_{self.calls}":
            self.cells.code(f"replay.play_action({index})  # with its recorded call id")
            return
        arguments = _object(self.bundle, call.arguments_path).get("arguments")
        agent = self.agents.get(call.invocation_id)
        if agent is None and (cell := self.shell_cell(call, arguments)) is not None:
            self.cells.code(cell)
            return
        if (call.tool_id == "workspace.finish" and agent is None and isinstance(arguments, dict)
                and set(arguments) <= {"reason"}):
            reason = arguments.get("reason")
            if reason is None:
                self.cells.code("run.finish()")
            else:
                literal = _literal(reason)
                self.cells.code(f"run.finish({literal})", literal)
            return
        extra = f", invocation={agent}" if agent else ""
        literal = _literal(arguments)
        self.cells.code(f"run.call_tool({call.tool_id!r}, {literal}{extra})", literal)

    def shell_cell(self, call: ToolCall, arguments: Any) -> str | None:
        """``%%ws_shell`` for a main-agent shell call the magic reproduces exactly."""
        if call.tool_id != "workspace.shell" or not isinstance(arguments, dict):
            return None
        command, workdir = arguments.get("command"), arguments.get("workdir")
        if (set(arguments) != {"command", "workdir"} or not isinstance(command, str)
                or not isinstance(workdir, str) or not _cell_body(command)
                or not _option_value(workdir)):
            return None
        flags = ["--workdir", workdir, *(["--no-raise"] if self.recorded_error(call) else [])]
        return _cell_magic("ws_shell", flags, command)

    def js_job(self, index: int, job: JsJob) -> None:
        if job.cancel is not None:
            self.cells.code(f"replay.play_action({index})  # cancelled in the recording")
            return
        record = _object(self.bundle, job.job_path)
        eval_name, recorded_stdin = record.get("evalName"), record.get("stdin")
        if eval_name is not None and not isinstance(eval_name, str):
            raise BundleInvalid(f"the bundle's run file {job.job_path}: evalName is not a "
                                "string")
        flags = [] if job.cwd == "/" else ["--cwd", job.cwd]
        stdin = None
        if recorded_stdin is not None:
            if not isinstance(recorded_stdin, str):
                raise BundleInvalid(f"the bundle's run file {job.job_path}: stdin is not a "
                                    "base64 string")
            try:
                base64.b64decode(recorded_stdin, validate=True)
            except (binascii.Error, ValueError):
                raise BundleInvalid(f"the bundle's run file {job.job_path}: stdin is not "
                                    "base64") from None
            stdin = f"stdin_{index}"
            self.cells.code(f"import base64\n{stdin} = base64.b64decode({recorded_stdin!r})")
            flags += ["--stdin", stdin]
        if job.command != "js":
            flags += ["--command", job.command]
        if record.get("exitCode"):
            flags.append("--no-raise")
        cell = None
        if job.cwd == "/" or _option_value(job.cwd):
            cell = self.js_magic(job, eval_name, flags)
        if cell is None:
            name = f", eval_name={eval_name!r}" if eval_name is not None else ""
            cell = (f"run.js({_literal(job.argv)}, {job.cwd!r}, stdin={stdin}, "
                    f"command={job.command!r}{name})")
        self.cells.code(cell)

    def js_magic(self, job: JsJob, eval_name: str | None, flags: list[str]) -> str | None:
        """``%%js`` for a job recorded from a ``%%js`` cell at this cell number, ``%js`` for a
        job the line form makes; ``None`` when neither reproduces the job exactly."""
        argv = job.argv
        if len(argv) >= 2 and argv[0] == "-e" and eval_name is not None:
            rest = argv[2:]
            body = argv[1].removeprefix("\n")
            if (eval_name != f"<cell {self.cells.next_count}>" or not argv[1].startswith("\n")
                    or not body.endswith("\n") or rest == ["--"]
                    or (rest and rest[0] != "--")):
                return None
            return _cell_magic("js", [*flags, *_arguments(rest[1:])], body.removesuffix("\n"))
        if eval_name is not None or (len(argv) >= 2 and argv[0] == "-e" and "\n" in argv[1]):
            return None
        return _line_magic("js", [*flags, *_arguments(argv)])

    def subagent(self, action: Subagent) -> None:
        name = "".join(c if c.isascii() and c.isalnum() else "_"
                       for c in action.agent_id).lower()
        name = f"agent_{name}_{len(self.agents) + 1}"
        self.agents[action.invocation_id] = name
        if action.profile == self.profile:
            self.cells.code(f"{name} = run.start_subagent({action.agent_id!r})")
        else:
            literal = _literal(action.profile)
            self.cells.code(f"from tavernlab.workspace.roots._profile import Profile\n"
                            f"{name} = run.start_subagent({action.agent_id!r}, "
                            f"Profile.model_validate({literal}))", literal)


def notebook_from_bundle(bundle: Bundle, bundle_ref: str) -> Any:
    """The notebook replaying ``bundle`` (opened from ``bundle_ref`` by its setup cell); a
    run the agent loop drove is refused (``replay.setup_failed``): its actions are the
    model's, replayed by running the loop again, not cell by cell."""
    if bundle.manifest.agent is not None:
        raise ReplaySetupError("the bundle's run was driven by the agent loop: replay it with "
                               "tavernlab replay (the loop runs again), not cell by cell")
    writer = _Writer(bundle)
    cells = writer.cells
    manifest = bundle.manifest
    skills = ", ".join(f"`{s.name}` ({s.installed_hash[:12]})" for s in manifest.skills)
    cells.markdown(f"# Replay of run `{manifest.run_id}`\n\n{len(manifest.actions)} recorded "
                   f"actions{'; skills: ' + skills if skills else ''}. Running every cell "
                   "plays them again in a fresh lab with the recorded clock and ids; the "
                   "last cell compares every outcome with the recording.")
    cells.code("import tavernlab.notebook\nfrom tavernlab.replay import Replay\n\n"
               f"replay = Replay.prepare({bundle_ref!r})\nrun = replay.run\n"
               f"{BIND_RUN}\n%config TavernMagics.round_per_cell = False")
    round_number = 1
    cells.markdown(f"## Round {round_number}")
    for index, action in enumerate(manifest.actions):
        if isinstance(action, ToolCall):
            writer.tool_call(index, action)
        elif isinstance(action, JsJob):
            writer.js_job(index, action)
        elif isinstance(action, Subagent):
            writer.subagent(action)
        elif isinstance(action, NextRound):
            cells.code("run.next_round()")
            round_number = action.round + 1
            cells.markdown(f"## Round {round_number}")
        elif isinstance(action, Resume):
            cells.code("run.resume()")
        else:
            cells.code(f"replay.play_action({index})  # reopen the run\nrun = replay.run\n"
                       f"{BIND_RUN}")
    cells.markdown("## Verify\n\nEvery outcome compared with the recording.")
    cells.code("report = replay.verify()\nreplay.close()\nreport")
    notebook = nbformat.v4.new_notebook(cells=cells.cells, metadata={  # type: ignore[no-untyped-call]
        "kernelspec": dict(KERNELSPEC), "language_info": {"name": "python"},
        "tavernlab": {"bundle": bundle_ref, "runId": manifest.run_id}})
    nbformat.validate(notebook)
    return notebook


def write_notebook(bundle_path: str | Path, output: str | Path) -> Path:
    """Write the notebook of the bundle at ``bundle_path`` to ``output``; the setup cell
    opens the bundle by its path relative to the notebook's folder. An ``output`` that is
    the bundle itself (the same path, or another name of the same file) is refused before
    anything is read; a recorded file of the wrong shape is ``BundleInvalid``."""
    target = Path(output).resolve()
    if target == Path(bundle_path).resolve() or (
            target.exists() and os.path.samefile(target, bundle_path)):
        raise InvalidData(f"the notebook {output} would replace its own bundle {bundle_path}")
    bundle = read_bundle(bundle_path)
    reference = os.path.relpath(Path(bundle_path).resolve(), target.parent)
    try:
        notebook = notebook_from_bundle(bundle, Path(reference).as_posix())
    except (AttributeError, TypeError, KeyError, IndexError, ValueError) as exc:
        raise BundleInvalid(f"{Path(bundle_path).name} holds a recorded value of the wrong "
                            f"shape: {type(exc).__name__}: {exc}") from None
    target.parent.mkdir(parents=True, exist_ok=True)
    text = nbformat.writes(notebook)  # type: ignore[no-untyped-call]
    replace_durably(target, (text if text.endswith("\n") else text + "\n").encode("utf-8"))
    return target
