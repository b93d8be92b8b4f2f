"""Pure renderers shared by the command line, the demo and the notebook: data in, text or
HTML out, with no I/O of their own (rendering kept apart from data).

* :mod:`~tavernlab.views._text`: the compact one-line forms the CLI and the demo print (tool
  calls, chat messages, persist states, event lines, provisioning progress events);
* :mod:`~tavernlab.views._results`, :mod:`~tavernlab.views._runs`, :mod:`~tavernlab.views._tree`,
  :mod:`~tavernlab.views._skills`, :mod:`~tavernlab.views._worktrees`: a readable text form and
  an HTML form for each object a notebook shows (tool, command and shell results, run cards,
  event tables, labs, workspace trees, skill entries and install reports, worktree results);
  nothing is ever cut, long content folds (:mod:`~tavernlab.views._markup`).

The notebook layer registers these as IPython display formatters; the data classes
themselves know nothing of how they are drawn.
"""

from tavernlab.views._agent import (
    arguments_at,
    follow,
    model_prefixes_html,
    model_prefixes_text,
    outcome_json,
    outcome_line,
    stored_arguments,
    tool_call_line,
)
from tavernlab.views._markup import COLOURS, STATUS_COLOURS, escape, fold, pre
from tavernlab.views._results import (
    command_result_html,
    command_result_text,
    shell_result_html,
    shell_result_text,
    tool_result_html,
    tool_result_text,
)
from tavernlab.views._runs import (
    RunSummary,
    events_html,
    events_text,
    lab_html,
    lab_text,
    run_card_html,
    run_card_text,
)
from tavernlab.views._skills import (
    install_report_html,
    install_report_text,
    skill_entries_html,
    skill_entries_text,
)
from tavernlab.views._text import (
    ARGUMENT_PREVIEW,
    describe_event,
    render_events,
    render_message,
    render_persist_state,
    render_tool_call,
)
from tavernlab.views._tree import tree_html, tree_text
from tavernlab.views._worktrees import progress_line, worktree_result_html, worktree_result_text

__all__ = [
    "ARGUMENT_PREVIEW",
    "COLOURS",
    "STATUS_COLOURS",
    "RunSummary",
    "arguments_at",
    "command_result_html",
    "command_result_text",
    "describe_event",
    "escape",
    "events_html",
    "events_text",
    "fold",
    "follow",
    "install_report_html",
    "install_report_text",
    "lab_html",
    "lab_text",
    "model_prefixes_html",
    "model_prefixes_text",
    "outcome_json",
    "outcome_line",
    "pre",
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
    "stored_arguments",
    "tool_call_line",
    "tool_result_html",
    "tool_result_text",
    "tree_html",
    "tree_text",
    "worktree_result_html",
    "worktree_result_text",
]
