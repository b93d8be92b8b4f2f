"""A notebook that replays a bundle's run step by step with the magics
(``tavernlab notebook from-run FILE -o demo.ipynb``).

The notebook runs on the tavernlab kernel (named in its metadata), which loads the extension.
Its cells, with deterministic ids (``tavern-0001``...):

1. a heading naming the run, its chat, its actions and skills;
2. the setup: :meth:`tavernlab.replay.ReplaySession.prepare` builds a temporary lab as the
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

What the magics do with a cell, which this relies on (tests/notebook/test_from_run.py runs
such a notebook in the real kernel): ``%%ws_shell --workdir W [--no-raise]`` calls
``workspace.shell`` with ``{"command": <the body without IPython's final newline>,
"workdir": W}``; ``%%js`` runs ``js -e "\n" + BODY -- ARG...`` named ``<cell N>``, N the
cell's execution count, which in a notebook run top to bottom in a fresh kernel is the code
cell's position (:attr:`_Cells.next_count`).
"""

from __future__ import annotations

import os
import pprint
import shlex
from pathlib import Path
from typing import Any

import nbformat

from tavernlab.replay.actions import JsJob, NextRound, Resume, Subagent, ToolCall
from tavernlab.replay.bundle import Bundle, read_bundle
from tavernlab.replay.errors import ReplaySetupError
from tavernlab.workspace.atomic import replace_durably

#: How the setup cell makes ``run`` the extension's current run (an assumption, see above).
BIND_RUN = "tavernlab.notebook.current_session().use_run(run)"
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

    def code(self, text: str) -> None:
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
    return bool(command) and not command.endswith("\n")


def _literal(value: Any) -> str:
    return pprint.pformat(value, width=88, sort_dicts=False)


class _Writer:
    """Turns the actions of one bundle into cells."""

    def __init__(self, bundle: Bundle) -> None:
        self.bundle = bundle
        self.cells = _Cells()
        self.agents: dict[str, str] = {}
        self.calls = 0
        self.profile = bundle.run_json("input/resolved_profile.json")

    def recorded_error(self, call: ToolCall) -> bool:
        result = self.bundle.run_json(call.result_path) if call.result_path else {}
        return bool(result.get("isError"))

    def tool_call(self, index: int, call: ToolCall) -> None:
        self.calls += 1
        if call.cancel is not None or call.call_id != f"call_{self.calls}":
            self.cells.code(f"replay.play_action({index})  # {call.tool_id} {call.call_id}"
                            + (" (cancelled in the recording)" if call.cancel is not None
                               else ""))
            return
        arguments = self.bundle.run_json(call.arguments_path).get("arguments")
        agent = self.agents.get(call.invocation_id)
        command = arguments.get("command") if isinstance(arguments, dict) else None
        if (call.tool_id == "workspace.shell" and agent is None and isinstance(command, str)
                and set(arguments) == {"command", "workdir"} and _cell_body(command)):
            flags = f"--workdir {shlex.quote(str(arguments['workdir']))}"
            flags += " --no-raise" if self.recorded_error(call) else ""
            self.cells.code(f"%%ws_shell {flags}\n{command}")
            return
        if (call.tool_id == "workspace.finish" and agent is None and isinstance(arguments, dict)
                and set(arguments) <= {"reason"}):
            reason = arguments.get("reason")
            self.cells.code(f"run.finish({reason!r})" if reason is not None else "run.finish()")
            return
        extra = f", invocation={agent}" if agent else ""
        self.cells.code(f"run.call_tool({call.tool_id!r}, {_literal(arguments)}{extra})")

    def js_job(self, index: int, job: JsJob) -> None:
        if job.cancel is not None:
            self.cells.code(f"replay.play_action({index})  # cancelled in the recording")
            return
        record = self.bundle.run_json(job.job_path)
        flags = [] if job.cwd == "/" else ["--cwd", job.cwd]
        stdin = None
        if record.get("stdin") is not None:
            stdin = f"stdin_{index}"
            self.cells.code(f"import base64\n{stdin} = base64.b64decode({record['stdin']!r})")
            flags += ["--stdin", stdin]
        if job.command != "js":
            flags += ["--command", job.command]
        if record.get("exitCode"):
            flags.append("--no-raise")
        inline = len(job.argv) >= 2 and job.argv[0] == "-e"
        eval_name = record.get("evalName")
        body = job.argv[1].removeprefix("\n") if inline else ""
        if (inline and eval_name == f"<cell {self.cells.next_count}>"
                and job.argv[1].startswith("\n") and body.endswith("\n")
                and job.argv[2:3] in ([], ["--"])):
            line = shlex.join(["%%js", *flags, *job.argv[3:]])
            self.cells.code(f"{line}\n{body.removesuffix(chr(10))}")
        elif eval_name is not None or (inline and "\n" in job.argv[1]):
            name = f", eval_name={eval_name!r}" if eval_name is not None else ""
            self.cells.code(f"run.js({_literal(job.argv)}, {job.cwd!r}, stdin={stdin}, "
                            f"command={job.command!r}{name})")
        else:
            self.cells.code(shlex.join(["%js", *flags, *job.argv]))

    def subagent(self, action: Subagent) -> None:
        name = "".join(c if c.isalnum() else "_" for c in action.agent_id).lower()
        name = f"agent_{name}_{len(self.agents) + 1}"
        self.agents[action.invocation_id] = name
        if action.profile == self.profile:
            self.cells.code(f"{name} = run.start_subagent({action.agent_id!r})")
        else:
            self.cells.code(f"from tavernlab.workspace.profile import Profile\n"
                            f"{name} = run.start_subagent({action.agent_id!r}, "
                            f"Profile.model_validate({_literal(action.profile)}))")


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
    cells.code("import tavernlab.notebook\nfrom tavernlab.replay import ReplaySession\n\n"
               f"replay = ReplaySession.prepare({bundle_ref!r})\nrun = replay.run\n"
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
    opens the bundle by its path relative to the notebook's folder."""
    target = Path(output).resolve()
    bundle = read_bundle(bundle_path)
    reference = os.path.relpath(Path(bundle_path).resolve(), target.parent)
    notebook = notebook_from_bundle(bundle, Path(reference).as_posix())
    target.parent.mkdir(parents=True, exist_ok=True)
    text = nbformat.writes(notebook)  # type: ignore[no-untyped-call]
    replace_durably(target, (text if text.endswith("\n") else text + "\n").encode("utf-8"))
    return target
