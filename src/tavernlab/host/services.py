"""The process resources a lab's runs use, and who owns them.

tavernlab's engines need a few long-lived resources: the JavaScript worker pool (every ``js``
job and legacy script runs there), the shell's helper thread for main-thread callers, and on
the worktree side a :class:`~tavernlab.worktree.runtime.WorktreeRuntime` (its service
registry; the provisioning scheduler and the proxy table inside it stay process-wide, see that
module). Upstream caps them process-wide (two QuickJS jobs at a time, one provisioning queue
per daemon), so by default every :class:`~tavernlab.host.lab.Lab` of a kernel shares one
:class:`LabServices` (:meth:`LabServices.shared`). A lab that wants its own (a test, a
benchmark, an isolated replay) passes ``services=LabServices.private()`` and closing that lab
stops what it started: its worker processes, its helper thread, the services its worktrees
started and the proxies they opened. Closing a lab never stops the shared services, which
live until the process exits (the worktree services' exit hook stops them then).
"""

from __future__ import annotations

import threading

from tavernlab.js.pool import WorkerPool, default_pool
from tavernlab.shell.resources import DEFAULT_HELPER, MainThreadHelper
from tavernlab.worktree.runtime import WorktreeRuntime, default_runtime


class LabServices:
    """The JavaScript worker pool, the shell's main-thread helper and the worktree runtime a
    lab hands to its runs' tools, ``run.js`` jobs and worktree tools."""

    _shared: LabServices | None = None
    _shared_lock = threading.Lock()

    def __init__(self, js_pool: WorkerPool, shell_helper: MainThreadHelper,
                 worktree: WorktreeRuntime, *, owned: bool) -> None:
        self.js_pool = js_pool
        self.shell_helper = shell_helper
        self.worktree = worktree
        self.owned = owned

    @classmethod
    def shared(cls) -> LabServices:
        """The process-wide services (the default of every lab)."""
        with cls._shared_lock:
            if cls._shared is None:
                cls._shared = cls(default_pool(), DEFAULT_HELPER, default_runtime(), owned=False)
            return cls._shared

    @classmethod
    def private(cls, *, js_workers: int = 2) -> LabServices:
        """Services of one lab only: a worker pool of its own, stopped when the lab closes."""
        return cls(WorkerPool(size=js_workers), MainThreadHelper(), WorktreeRuntime(), owned=True)

    def close(self) -> None:
        """Stop what these services started, when they are owned (shared ones stay)."""
        if self.owned:
            self.js_pool.close()
            self.shell_helper.close()
            self.worktree.close()

    def __repr__(self) -> str:
        return f"<LabServices {'private' if self.owned else 'shared'}>"
