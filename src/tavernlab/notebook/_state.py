"""The notebook's current lab, current run and current worktree, and which cell is which round.

A :class:`NotebookState` belongs to one loaded extension. Its lab is created on first use
at the configured path (default ``./.tavernlab``: JupyterLab starts a kernel in the notebook's
folder, so the lab sits beside the notebook); another lab is opened with ``%tavern lab PATH``,
which creates none unless given ``--create`` (a typo never makes a new, empty lab).

Its run is started on first use in the notebook's own chat, ``notebook:<file>`` (the
notebook's path relative to the kernel's folder, as Jupyter tells the kernel: ``__session__``
/ ``JPY_SESSION_NAME``, or VS Code's ``__vsc_ipynb_file__``), so two notebooks beside one lab
do not share a chat. When the kernel does not know its notebook (a terminal, nbclient) or
``chat_per_notebook`` is off, the run works in the shared chat :data:`DEFAULT_CHAT`, and
``%tavern status`` says which and why. Both can be switched (``%tavern run new|open``, or
:meth:`NotebookState.use_lab` / :meth:`use_run` from Python with a lab of your own, for
example one with a fixed clock).

Rounds: with ``round_per_cell`` on, every cell that uses a run is one model round, whether it
uses a magic or calls the run from Python (``run.call_tool``, ``run.shell``, ``run.js``, on
any run of the process). The state remembers, per run, the cell and round of its last use;
when a *later* cell uses the run while it is still in that round, the round ends first: a
magic calls :meth:`NotebookState.enter_cell`, and the state is the host's round watcher
(:func:`tavernlab.host.watch_rounds`) for the work itself. So an interrupted cell (its
round is cancelled) never leaves the next cell answering ``tool.round_cancelled``, and two
calls in one cell share a round.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from tavernlab.clock import Clock, IdFactory
from tavernlab.errors import UsageError
from tavernlab.host import DATA_DIR, Lab, Run, watch_rounds
from tavernlab.worktree import ProxyServer

#: The shared chat: of every notebook whose path is unknown, or all of them on request.
DEFAULT_CHAT = "notebook"
#: The prefix of a notebook's own chat id (``notebook:analysis.ipynb``).
NOTEBOOK_CHAT_PREFIX = "notebook:"
#: Where the kernel learns its notebook's path: user namespace names, then the environment.
NOTEBOOK_PATH_NAMES = ("__session__", "__vsc_ipynb_file__")
NOTEBOOK_PATH_ENV = "JPY_SESSION_NAME"
#: The lab directory when ``TavernMagics.lab_path`` is empty, relative to the working dir.
DEFAULT_LAB = ".tavernlab"


def notebook_path(shell: Any) -> str | None:
    """The path of the notebook the kernel runs, when Jupyter (or VS Code) told it."""
    namespace = getattr(shell, "user_ns", None) or {}
    for name in NOTEBOOK_PATH_NAMES:
        value = namespace.get(name)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return os.environ.get(NOTEBOOK_PATH_ENV, "").strip() or None


def notebook_chat(path: str) -> str:
    """The chat id of the notebook at ``path``: ``notebook:`` and the path relative to the
    working directory (the absolute path when the notebook lies elsewhere)."""
    absolute = Path(path).absolute()
    try:
        shown = absolute.relative_to(Path.cwd()).as_posix()
    except ValueError:
        shown = absolute.as_posix()
    return NOTEBOOK_CHAT_PREFIX + shown


def is_lab(path: Path) -> bool:
    """Whether ``path`` holds a lab already (its ``_tauritavern`` data folder)."""
    return (path / DATA_DIR).is_dir()


class Settings(Protocol):
    """The magics' configuration (see :class:`tavernlab.notebook.TavernMagics`)."""

    lab_path: str
    chat_per_notebook: bool
    round_per_cell: bool
    raise_on_error: bool
    stream: bool


@dataclass(frozen=True)
class WorktreeRef:
    """The worktree the ``%worktree`` commands act on by default (the last one provisioned)."""

    repo: str
    path: str
    branch: str


@dataclass(frozen=True)
class _Use:
    cell: int
    round: int


class NotebookState:
    """Current lab, run and worktree of one notebook, plus the cell-to-round bookkeeping."""

    def __init__(self, shell: Any, settings: Settings) -> None:
        self.shell = shell
        self.settings = settings
        self._lab: Lab | None = None
        self._owns_lab = False
        self._run: Run | None = None
        self._uses: dict[str, _Use] = {}
        self.worktree: WorktreeRef | None = None
        self.proxy: ProxyServer | None = None
        self._unwatch = watch_rounds(self._begins_round)

    # -- the lab --------------------------------------------------------------------------------

    @property
    def lab_path(self) -> Path:
        """Where the current (or next) lab lives."""
        if self._lab is not None:
            return self._lab.root
        return Path(self.settings.lab_path or DEFAULT_LAB).resolve()

    @property
    def lab(self) -> Lab:
        """The current lab, created at :attr:`lab_path` on first use."""
        if self._lab is None or self._lab.closed:
            self._set_lab(Lab(self.lab_path), owned=True)
        assert self._lab is not None
        return self._lab

    def existing_lab(self) -> Lab | None:
        """The current lab, or the one at :attr:`lab_path` when it exists on disk (opened as
        the next use would open it); ``None`` when using it would create a lab. For what must
        change nothing, such as tab completion."""
        if self._lab is not None and not self._lab.closed:
            return self._lab
        return self.lab if is_lab(self.lab_path) else None

    def use_lab(self, lab: Lab | str | Path, *, clock: Clock | None = None,
                ids: IdFactory | None = None, create: bool = True) -> Lab:
        """Make ``lab`` (a :class:`Lab`, or a path opened as one with ``clock`` and ``ids``)
        current; the current run is forgotten. A lab this state opened itself is closed
        when it is replaced. ``create=False`` refuses a path that holds no lab yet (and
        changes nothing)."""
        if not isinstance(lab, Lab) and not create and not is_lab(Path(lab).resolve()):
            raise UsageError(f"no lab at {Path(lab).resolve()}: pass --create to create a "
                             "new lab there")
        if isinstance(lab, Lab):
            if clock is not None or ids is not None:
                raise UsageError("clock and ids apply to a lab opened from a path; this Lab "
                                 "has its own")
            self._set_lab(lab, owned=False)
        else:
            self._set_lab(Lab(lab, clock=clock, ids=ids), owned=True)
        assert self._lab is not None
        return self._lab

    def forget_lab(self) -> None:
        """Drop the current lab and stop its proxy (the next use opens the configured path
        again)."""
        self._set_lab(None, owned=False)

    def _set_lab(self, lab: Lab | None, *, owned: bool) -> None:
        if self._lab is not lab and self.proxy is not None:
            # the proxy serves the routes of the old lab's worktree runtime
            self.proxy.close()
            self.proxy = None
        if self._lab is not None and self._owns_lab and self._lab is not lab:
            self._lab.close()
        self._lab, self._owns_lab = lab, owned
        self._run = None

    # -- the run --------------------------------------------------------------------------------

    @property
    def has_run(self) -> bool:
        """Whether a current run exists (without starting one)."""
        return self._run is not None

    @property
    def default_chat(self) -> str:
        """The chat a run starts in unless told otherwise: this notebook's own, or the shared
        :data:`DEFAULT_CHAT` (see the module docstring)."""
        path = notebook_path(self.shell) if self.settings.chat_per_notebook else None
        return DEFAULT_CHAT if path is None else notebook_chat(path)

    @property
    def chat_reason(self) -> str:
        """Why runs start in :attr:`default_chat` (what ``%tavern status`` shows)."""
        if not self.settings.chat_per_notebook:
            return "shared (chat_per_notebook is off)"
        if notebook_path(self.shell) is None:
            return ("shared: the kernel does not know this notebook's path (no __session__ "
                    "or JPY_SESSION_NAME)")
        return "this notebook's own"

    @property
    def run(self) -> Run:
        """The current run, started in :attr:`default_chat` on first use. If an earlier
        kernel (or an earlier load of the extension) left a run of that chat unfinished, the
        first use says which one and how to continue it (see :meth:`left_behind`)."""
        if self._run is None:
            note = self.left_behind()
            self._run = self.lab.start_run(chat_id=self.default_chat)
            if note:
                print(f"{note} This notebook now uses the new run {self._run.id}.")
        return self._run

    def left_behind(self) -> str | None:
        """A note on the newest run of :attr:`default_chat` that no living process holds
        and that never ended (a kernel restarted or killed, the extension reloaded), or
        ``None``."""
        chat = self.default_chat
        for record in self.lab.runs():
            target = record.target
            if target.kind != "chat" or target.stable_chat_id != chat:
                continue
            if self.lab.live.shown_status(record) == "interrupted":
                return (f"tavernlab: run {record.id} was left unfinished by an earlier kernel "
                        f"(interrupted while {record.status}); `%tavern run open {record.id}` "
                        "continues it.")
            return None
        return None

    def farewell(self) -> str | None:
        """What becomes of the current run when the extension unloads (``%reload_ext``,
        ``%unload_ext``), or ``None`` without a current run."""
        run = self._run
        if run is None:
            return None
        where = f"stays in the lab {self.lab_path}"
        if run.record.is_terminal:
            return f"tavernlab: run {run.id} ended ({run.status}) and {where}."
        return (f"tavernlab: run {run.id} ({run.status}, round {run.round}) {where}, "
                f"unfinished; `%tavern run open {run.id}` makes it current again.")

    def use_run(self, run: Run) -> Run:
        """Make ``run`` the current run."""
        self._run = run
        return run

    def new_run(self, **options: Any) -> Run:
        """Start a run in the current lab (``lab.start_run`` options) and make it current."""
        if options.get("chat_id") is None and not options.get("session"):
            options["chat_id"] = self.default_chat
        return self.use_run(self.lab.start_run(**options))

    def open_run(self, run_id: str) -> Run:
        """Reopen a run of the current lab by id and make it current."""
        return self.use_run(self.lab.open_run(run_id))

    # -- rounds ---------------------------------------------------------------------------------

    @property
    def cell(self) -> int:
        """The number of the cell running now, as its ``In [N]`` prompt shows it (IPython
        has already counted it, so this is ``displayhook.prompt_count``)."""
        return int(getattr(getattr(self.shell, "displayhook", None), "prompt_count", 0))

    def enter_cell(self, run: Run) -> None:
        """Note that the running cell uses ``run``; with ``round_per_cell``, end the round a
        previous cell left open first (see the module docstring)."""
        if self._begins_round(run.id, run.round, terminal=run.record.is_terminal):
            run.next_round()

    def _begins_round(self, run_id: str, round_number: int, *, terminal: bool = False) -> bool:
        """Whether the running cell's use of the run ``run_id``, now in ``round_number``,
        begins a new round (noting the use either way)."""
        if not self.settings.round_per_cell:
            return False
        cell, last = self.cell, self._uses.get(run_id)
        begins = (last is not None and last.cell != cell and last.round == round_number
                  and not terminal)
        self._uses[run_id] = _Use(cell, round_number + 1 if begins else round_number)
        return begins

    # -- worktrees ------------------------------------------------------------------------------

    def current_worktree(self) -> WorktreeRef:
        """The worktree commands act on when none is named."""
        if self.worktree is None:
            raise UsageError("no current worktree: run `%worktree new SLUG` first or pass "
                             "--worktree PATH")
        return self.worktree

    def proxy_port(self, start: bool) -> int | None:
        """The port of this notebook's proxy, started on first need when ``start``."""
        if self.proxy is None and start:
            self.proxy = self.lab.services.worktree.start_proxy(port=0)
        return None if self.proxy is None else self.proxy.port

    def start_proxy(self, port: int) -> ProxyServer:
        """Start the notebook's proxy on ``port`` (0: a free one), replacing a running one."""
        if self.proxy is not None:
            self.proxy.close()
            self.proxy = None
        self.proxy = self.lab.services.worktree.start_proxy(port=port)
        return self.proxy

    def close(self) -> None:
        """Close the proxy and the lab this state opened (unloading the extension), and
        stop watching rounds."""
        self._unwatch()
        self.forget_lab()
