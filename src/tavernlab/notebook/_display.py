"""Rich display in the notebook: IPython formatters for tavernlab's objects, and the small
display objects the magics return.

The data classes (``ToolResult``, ``Run``, ``TreeNode``…) live on lower floors and know nothing
of IPython; :func:`register_formatters` teaches the shell to draw them with the pure renderers
of :mod:`tavernlab.views`, as ``text/html`` and as ``text/plain`` (the ``_repr_pretty_`` path of
terminal IPython and of saved notebooks), and returns the function that undoes it. Types the
magics make themselves (an event list, a skill list, a worktree result) carry their own
``_repr_html_`` and ``_repr_pretty_``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import tavernlab.views as views
from tavernlab.events import Event
from tavernlab.host import Lab, Run
from tavernlab.js import CommandResult
from tavernlab.shell import ShellResult
from tavernlab.skills import SkillIndexEntry, SkillInstallReport
from tavernlab.views import escape
from tavernlab.workspace.scope import TreeNode
from tavernlab.workspace.tools import ToolResult


def summarize_run(run: Run) -> views.RunSummary:
    """The facts of a run's card, read from its records now."""
    records = run.events()
    files: list[str] = []
    commits: list[str] = []
    calls = jobs = model_calls = 0
    usage: dict[str, int] = {}
    round_usage: dict[int, dict[str, int]] = {}
    for record in records:
        if record.type == "model_completed":
            model_calls += 1
            per_round = (round_usage.setdefault(record.payload.round, {})
                         if record.payload.invocation_id == "inv_root" else {})
            for key, value in record.payload.usage.items():
                if isinstance(value, int):
                    usage[key] = usage.get(key, 0) + value
                    per_round[key] = per_round.get(key, 0) + value
        elif record.type == "tool_call_requested":
            calls += 1
        elif record.type == "js_job_started":
            jobs += 1
        elif (record.type == "file_changed" and record.payload.node == "file"
              and record.payload.path not in files):
            files.append(record.payload.path)
        elif record.type == "chat_commit_requested":
            commits.append(record.payload.path)
    target = run.record.target
    where = f"chat {target.stable_chat_id}" if target.kind == "chat" else \
        f"session {target.session_id}"
    return views.RunSummary(
        id=run.id, status=run.status, target=where, presentation=run.record.presentation,
        round=run.round, tool_calls=calls, js_jobs=jobs, files_changed=files,
        chat_commits=commits, skills=sorted(run.skills), workspace_dir=str(run.workspace_dir),
        persist_state_id=run.persist_state_id, model_calls=model_calls, usage=usage,
        round_usage=round_usage)


def run_text(run: Run) -> str:
    """A run's card as text."""
    return views.run_card_text(summarize_run(run))


def run_html(run: Run) -> str:
    """A run's card as HTML."""
    return views.run_card_html(summarize_run(run))


#: ``type -> (text renderer, HTML renderer)`` for the classes of the lower floors.
RENDERERS: dict[type, tuple[Callable[[Any], str], Callable[[Any], str]]] = {
    ToolResult: (views.tool_result_text, views.tool_result_html),
    CommandResult: (views.command_result_text, views.command_result_html),
    ShellResult: (views.shell_result_text, views.shell_result_html),
    Run: (run_text, run_html),
    TreeNode: (views.tree_text, views.tree_html),
    SkillIndexEntry: (lambda e: views.skill_entries_text([e]),
                      lambda e: views.skill_entries_html([e])),
    SkillInstallReport: (views.install_report_text, views.install_report_html),
    Lab: (lambda lab: views.lab_text(str(lab.root), lab.runs(), lab.shown_statuses()),
          lambda lab: views.lab_html(str(lab.root), lab.runs(), lab.shown_statuses())),
}


def _pretty(render: Callable[[Any], str]) -> Callable[[Any, Any, bool], None]:
    def pretty(obj: Any, printer: Any, cycle: bool) -> None:
        printer.text(render(obj))

    return pretty


def register_formatters(shell: Any) -> Callable[[], None]:
    """Register :data:`RENDERERS` with ``shell``'s display formatter; returns the undo
    (which puts back any formatter that was there before)."""
    formatters = shell.display_formatter.formatters
    previous: list[tuple[Any, type, Any]] = []
    for cls, (text, html) in RENDERERS.items():
        for mime, function in (("text/plain", _pretty(text)), ("text/html", html)):
            formatter = formatters[mime]
            previous.append((formatter, cls, formatter.for_type(cls, function)))

    def undo() -> None:
        for formatter, cls, old in previous:
            formatter.pop(cls, None)
            if old is not None:
                formatter.for_type(cls, old)

    return undo


class Rendered:
    """A display object with both forms fixed (a status line, a notice)."""

    def __init__(self, text: str, html: str) -> None:
        self.text = text
        self.html = html

    def __repr__(self) -> str:
        return self.text

    def _repr_html_(self) -> str:
        return self.html

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(self.text)


class EventList(list[Event]):
    """A run's events and journal records (a list), shown as a table."""

    def _repr_html_(self) -> str:
        return views.events_html(self)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(views.events_text(self))


class SkillList(list[SkillIndexEntry]):
    """Installed skills (a list of index entries), shown as a table."""

    def _repr_html_(self) -> str:
        return views.skill_entries_html(self)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(views.skill_entries_text(self))


class WorktreeResult:
    """What a ``%worktree`` command returned (``data``: the tool's upstream shape), with a
    title; indexing reads the data (``result["cwd"]``)."""

    def __init__(self, title: str, data: Any) -> None:
        self.title = title
        self.data = data

    def __getitem__(self, key: Any) -> Any:
        return self.data[key]

    def __repr__(self) -> str:
        return views.worktree_result_text(self.title, self.data)

    def _repr_html_(self) -> str:
        return views.worktree_result_html(self.title, self.data)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))


def status_view(lab_path: str, run: Run | None, settings: Sequence[tuple[str, Any]],
                chat: str | None = None) -> Rendered:
    """``%tavern status``: the lab, the current run's card, the chat new runs start in (and
    why) and the settings."""
    settings_text = ", ".join(f"{k}={v!r}" for k, v in settings)
    run_part = run_text(run) if run is not None else "no current run (one starts on first use)"
    chat_line = f"\nnew runs start in the chat {chat}" if chat is not None else ""
    text = f"lab: {lab_path}\n{run_part}{chat_line}\nsettings: {settings_text}"
    run_html_part = run_html(run) if run is not None else \
        "<i>no current run (one starts on first use)</i>"
    chat_html = (f"<div>new runs start in the chat <code>{escape(chat)}</code></div>"
                 if chat is not None else "")
    html = (f"<div>lab: <code>{escape(lab_path)}</code></div>{run_html_part}{chat_html}"
            f"<div>settings: <code>{escape(settings_text)}</code></div>")
    return Rendered(text, html)


def notice(text: str) -> Rendered:
    """A one-line answer (``cancelled 1 running call``)."""
    return Rendered(text, f"<div>{escape(text)}</div>")

