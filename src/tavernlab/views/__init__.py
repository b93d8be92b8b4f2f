"""Pure renderers shared by the command line, the demo and the notebook: data in, text or
HTML out, with no I/O of their own (rendering kept apart from data).

* :mod:`~tavernlab.views.text`: the compact one-line forms the CLI and the demo print (tool
  calls, chat messages, persist states, event lines, provisioning progress events);
* :mod:`~tavernlab.views.results`, :mod:`~tavernlab.views.runs`, :mod:`~tavernlab.views.tree`,
  :mod:`~tavernlab.views.skills`, :mod:`~tavernlab.views.worktrees`: a readable text form and
  an HTML form for each object a notebook shows (tool, command and shell results, run cards,
  event tables, labs, workspace trees, skill entries and install reports, worktree results);
  nothing is ever cut, long content folds (:mod:`~tavernlab.views.markup`).

The notebook layer registers these as IPython display formatters; the data classes
themselves know nothing of how they are drawn.
"""

from tavernlab.views.results import (
    command_result_html,
    command_result_text,
    shell_result_html,
    shell_result_text,
    tool_result_html,
    tool_result_text,
)
from tavernlab.views.runs import (
    RunSummary,
    events_html,
    events_text,
    lab_html,
    lab_text,
    run_card_html,
    run_card_text,
)
from tavernlab.views.skills import (
    install_report_html,
    install_report_text,
    skill_entries_html,
    skill_entries_text,
)
from tavernlab.views.text import (
    ARGUMENT_PREVIEW,
    describe_event,
    render_events,
    render_message,
    render_persist_state,
    render_tool_call,
)
from tavernlab.views.tree import tree_html, tree_text
from tavernlab.views.worktrees import progress_line, worktree_result_html, worktree_result_text

__all__ = [
    "ARGUMENT_PREVIEW",
    "RunSummary",
    "command_result_html",
    "command_result_text",
    "describe_event",
    "events_html",
    "events_text",
    "install_report_html",
    "install_report_text",
    "lab_html",
    "lab_text",
    "progress_line",
    "render_events",
    "render_message",
    "render_persist_state",
    "render_tool_call",
    "run_card_html",
    "run_card_text",
    "shell_result_html",
    "shell_result_text",
    "skill_entries_html",
    "skill_entries_text",
    "tool_result_html",
    "tool_result_text",
    "tree_html",
    "tree_text",
    "worktree_result_html",
    "worktree_result_text",
]
