"""Demo section: a scripted agent run through the workspace tools.

Plays what a model would do in a character chat: write, read, a sub-agent's result that the
main agent reads partially (so its patch is refused) and then fully (so the patch applies),
search, list, an explicit commit, finish (which publishes ``persist/``), then a second run
based on the first run's persist state.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TextIO

from tavernlab.demo import deliberate_error
from tavernlab.host import Invocation, Lab, Run
from tavernlab.views import render_message, render_persist_state, render_tool_call

CONTEXT: dict[str, Any] = {
    "macroContext": {"names": {"user": "Mika", "char": "Alice"}},
    "variables": {"local": {"mood": "curious"}, "global": {}},
    "worldInfoActivation": {"entries": []},
}

DRAFT = """# The lighthouse

Alice climbs the stairs at dusk.
The lamp is dark tonight.
Mika waits below with the key.
"""

CRITIQUE = """Review of output/main.md
- Line 4: the scene is too dark for a first visit.
- The key could appear earlier.
"""


def _call(run: Run, out: TextIO, tool: str, args: dict[str, Any]) -> None:
    print(render_tool_call(tool, args, run.call_tool(tool, args)), file=out)


def _call_as(run: Run, invocation: Invocation, out: TextIO, tool: str, args: dict[str, Any]
             ) -> None:
    result = run.call_tool(tool, args, invocation=invocation)
    print(render_tool_call(tool, args, result), file=out)


def _heading(out: TextIO, text: str) -> None:
    print(f"\n=== {text} ===", file=out)


def run(root: Path, out: TextIO) -> None:
    """Play the workspace section in the lab at ``root``."""
    lab = Lab(root / "lab")
    first = _first_run(lab, out)
    second = _second_run(lab, out)
    _heading(out, "Persist states")
    repo = lab.chat("demo-alice").persist
    for state_id in (first.persist_state_id, second.persist_state_id):
        assert state_id is not None
        print(render_persist_state(repo.load(state_id)), file=out)
    _heading(out, "Chat after run 2")
    for message in lab.chat("demo-alice").messages:
        print(render_message(message), file=out)


def _first_run(lab: Lab, out: TextIO) -> Run:
    """Run 1: write, read, a sub-agent, patches (one refused), persist, commit, finish."""
    chat = lab.chat("demo-alice")
    chat.add_message("Write the lighthouse scene and remember what happened.")
    _heading(out, f"Workspace: run 1 in chat `{chat.stable_chat_id}` ({chat.workspace_id})")
    first = lab.start_run(chat_id="demo-alice", context=CONTEXT)
    print(f"run {first.id}\n  records:   {first.dir}", file=out)
    _call(first, out, "workspace.write_file", {"path": "output/main.md", "content": DRAFT})
    _call(first, out, "workspace.read_file", {"path": "output/main.md"})
    first.next_round()
    print("\n-- a return-mode sub-agent reviews the scene; its result is new to the main "
          "agent --", file=out)
    critic = first.start_subagent("critic")
    _call_as(first, critic, out, "task.return", {"result": CRITIQUE})
    first.next_round()
    _call(first, out, "workspace.read_file",
          {"path": "summaries/critic-result.md", "start_line": 1, "line_count": 1})
    deliberate_error(out, "the main agent read only line 1 of the result, so the patch is "
                     "refused until it reads the whole file")
    _call(first, out, "workspace.apply_patch", {"path": "summaries/critic-result.md",
                                                "old_string": "too dark",
                                                "new_string": "fixed: the lamp flickers"})
    _call(first, out, "workspace.read_file", {"path": "summaries/critic-result.md"})
    _call(first, out, "workspace.apply_patch", {"path": "summaries/critic-result.md",
                                                "old_string": "too dark",
                                                "new_string": "fixed: the lamp flickers"})
    _call(first, out, "workspace.apply_patch", {"path": "output/main.md",
                                                "old_string": "The lamp is dark tonight.",
                                                "new_string": "The lamp flickers."})
    _call(first, out, "workspace.write_file", {
        "path": "persist/story-so-far.md",
        "content": "- Alice reached the lighthouse.\n- The lamp flickers.\n"})
    _call(first, out, "workspace.search_files", {"query": "lamp flickers", "limit": 2})
    _call(first, out, "workspace.list_files", {"path": "", "depth": 1})
    first.next_round()
    deliberate_error(out, "a foreground chat run must commit its output before it finishes")
    _call(first, out, "workspace.finish", {})
    _call(first, out, "workspace.commit", {"path": "output/main.md", "reason": "scene done"})
    _call(first, out, "workspace.finish", {"reason": "scene written"})
    _heading(out, "Chat after run 1")
    for message in lab.chat("demo-alice").messages:
        print(render_message(message), file=out)
    return first


def _second_run(lab: Lab, out: TextIO) -> Run:
    """Run 2: starts from run 1's persist state and appends to it."""
    base = lab.chat("demo-alice").current_persist_state()
    _heading(out, f"Workspace: run 2 based on {base}")
    second = lab.start_run(chat_id="demo-alice", persist_base=base, context=CONTEXT)
    _call(second, out, "workspace.read_file", {"path": "persist/story-so-far.md"})
    _call(second, out, "workspace.write_file", {"path": "persist/story-so-far.md",
                                                "content": "- Mika unlocked the door.\n",
                                                "mode": "append"})
    _call(second, out, "workspace.write_file", {"path": "output/main.md",
                                                "content": "Mika turns the key.\n"})
    _call(second, out, "workspace.commit", {})
    _call(second, out, "workspace.finish", {})
    return second
