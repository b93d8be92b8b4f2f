"""The process resources a lab's runs use, and who owns them.

tavernlab's engines need a few long-lived resources: the JavaScript worker pool (every ``js``
job and legacy script runs there), the shell's helper thread for main-thread callers, and on
the worktree side a :class:`~tavernlab.worktree.WorktreeRuntime` (its service
registry; the provisioning scheduler and the proxy table inside it stay process-wide, see that
module). Upstream caps them process-wide (two QuickJS jobs at a time, one provisioning queue
per daemon), so by default every :class:`~tavernlab.host.Lab` of a kernel shares one
:class:`LabServices` (:meth:`LabServices.shared`). A lab that wants its own (a test, a
benchmark, an isolated replay) passes ``services=LabServices.private()`` and closing that lab
stops what it started: its worker processes, its helper thread, the services its worktrees
started and the proxies they opened. Closing a lab never stops the shared services, which
live until the process exits (the worktree services' exit hook stops them then).

Each resource is made on first use, from a factory (so that a process whose first tool call
writes a file loads neither the worker pool nor the worktree runtime, nor their engines).
Shared services keep no resource of their own: each use asks the process-wide factory, which
makes its default again after someone closed it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

if TYPE_CHECKING:
    from tavernlab.js import WorkerPool
    from tavernlab.shell import MainThreadHelper
    from tavernlab.worktree import WorktreeRuntime


class _Closable(Protocol):
    def close(self) -> None: ...


R = TypeVar("R", bound=_Closable)


class _OnFirstUse(Generic[R]):
    """A resource made by ``factory`` the first time it is asked for (once, under a lock).
    Once :meth:`close` ran, a resource made later is closed before it is handed out, so a
    closed lab's services stay closed (a job on them fails as it did before)."""

    def __init__(self, factory: Callable[[], R]) -> None:
        self._factory = factory
        self._value: R | None = None
        self._closed = False
        self._lock = threading.Lock()

    def get(self) -> R:
        """The resource, made now if this is the first use."""
        with self._lock:
            if self._value is None:
                self._value = self._factory()
                if self._closed:
                    self._value.close()
            return self._value

    def close(self) -> None:
        """Close the resource if it was made (a resource never used has nothing to stop)."""
        with self._lock:
            self._closed = True
            value = self._value
        if value is not None:
            value.close()


class _AskEachTime(Generic[R]):
    """A process-wide resource, asked of ``factory`` at every use and never kept: the
    process-wide default may be closed by anyone (a test, a user, the exit hook) and is made
    again by its own factory on next use, so a kept reference would hand every later job the
    closed one. Closing this is a no-op: shared services are not the lab's to stop."""

    def __init__(self, factory: Callable[[], R]) -> None:
        self._factory = factory

    def get(self) -> R:
        """The factory's current resource."""
        return self._factory()

    def close(self) -> None:
        """Nothing to stop: the resource belongs to the process, not to these services."""


def _shared_pool() -> WorkerPool:
    from tavernlab.js import default_pool

    return default_pool()


def _shared_helper() -> MainThreadHelper:
    # the shell's module is imported when a shell first asks for its helper
    from tavernlab.shell import DEFAULT_HELPER

    return DEFAULT_HELPER


def _own_helper() -> MainThreadHelper:
    from tavernlab.shell import MainThreadHelper

    return MainThreadHelper()


def _shared_runtime() -> WorktreeRuntime:
    from tavernlab.worktree import default_runtime

    return default_runtime()


def _own_runtime() -> WorktreeRuntime:
    from tavernlab.worktree import WorktreeRuntime

    return WorktreeRuntime()


def _own_pool(size: int) -> Callable[[], WorkerPool]:
    def make() -> WorkerPool:
        from tavernlab.js import WorkerPool

        return WorkerPool(size=size)

    return make


class LabServices:
    """The JavaScript worker pool, the shell's main-thread helper and the worktree runtime a
    lab hands to its runs' tools, ``run.js`` jobs and worktree tools (each made on first use
    by the factory given here)."""

    _shared: LabServices | None = None
    _shared_lock = threading.Lock()

    def __init__(self, js_pool: Callable[[], WorkerPool],
                 shell_helper: Callable[[], MainThreadHelper],
                 worktree: Callable[[], WorktreeRuntime], *, owned: bool) -> None:
        # Owned resources are made once and closed with the services; shared ones are asked
        # of their process-wide factory at each use (it replaces a default someone closed).
        self._js_pool: _OnFirstUse[WorkerPool] | _AskEachTime[WorkerPool]
        self._shell_helper: _OnFirstUse[MainThreadHelper] | _AskEachTime[MainThreadHelper]
        self._worktree: _OnFirstUse[WorktreeRuntime] | _AskEachTime[WorktreeRuntime]
        if owned:
            self._js_pool = _OnFirstUse(js_pool)
            self._shell_helper = _OnFirstUse(shell_helper)
            self._worktree = _OnFirstUse(worktree)
        else:
            self._js_pool = _AskEachTime(js_pool)
            self._shell_helper = _AskEachTime(shell_helper)
            self._worktree = _AskEachTime(worktree)
        self.owned = owned

    @property
    def js_pool(self) -> WorkerPool:
        """The worker pool of ``js`` jobs and legacy skill scripts."""
        return self._js_pool.get()

    @property
    def shell_helper(self) -> MainThreadHelper:
        """The thread that runs shell interpreters for callers on the main thread."""
        return self._shell_helper.get()

    @property
    def worktree(self) -> WorktreeRuntime:
        """The worktree runtime (service registry, scheduler, proxy table)."""
        return self._worktree.get()

    @classmethod
    def shared(cls) -> LabServices:
        """The process-wide services (the default of every lab): each use asks for the
        process-wide resource of the moment, so a default pool that someone closed is
        replaced here too."""
        with cls._shared_lock:
            if cls._shared is None:
                cls._shared = cls(_shared_pool, _shared_helper, _shared_runtime,
                                  owned=False)
            return cls._shared

    @classmethod
    def private(cls, *, js_workers: int = 2) -> LabServices:
        """Services of one lab only: a worker pool of its own, stopped when the lab closes."""
        return cls(_own_pool(js_workers), _own_helper, _own_runtime, owned=True)

    def close(self) -> None:
        """Stop what these services started, when they are owned (shared ones stay); a
        resource never used was never made and has nothing to stop."""
        if self.owned:
            self._js_pool.close()
            self._shell_helper.close()
            self._worktree.close()

    def __repr__(self) -> str:
        return f"<LabServices {'private' if self.owned else 'shared'}>"
