"""Supervisors per worktree and the three service tools (docs/worktrees.md).

A :class:`ServiceRegistry` keeps one :class:`~tavernlab.worktree._supervisor.ServiceSupervisor`
per worktree path (exact string key), created by the first start-service or list-services
call and reused. Its :meth:`ServiceRegistry.close` stops every service it started; it also
runs when the process exits normally (an ``atexit`` hook, registered when the first service
starts), which covers a Jupyter kernel shut down through its kernel manager. Upstream leaves
its services running when the process ends; tavernlab does not (tavernlab choice).
:func:`default_registry` is the process-wide instance the tools use unless given another.
"""

from __future__ import annotations

import atexit
import os
import threading
from typing import Any

from tavernlab.clock import SYSTEM_CLOCK, Clock
from tavernlab.errors import ToolError
from tavernlab.worktree._git import DEFAULT_REF
from tavernlab.worktree._proxy_table import ProxyTable, proxy_table
from tavernlab.worktree._supervisor import ServiceStatus, ServiceSupervisor


class ServiceRegistry:
    """The supervisors of one owner (a process, or a lab), keyed by worktree path."""

    def __init__(self, table: ProxyTable | None = None, clock: Clock = SYSTEM_CLOCK) -> None:
        self.table = table if table is not None else proxy_table
        self.clock = clock
        self._supervisors: dict[str, ServiceSupervisor] = {}
        self._lock = threading.Lock()
        self._exit_hook_pid: int | None = None

    def get(self, worktree_path: str) -> ServiceSupervisor | None:
        """The supervisor of a worktree (exact path string), if one was created."""
        with self._lock:
            return self._supervisors.get(worktree_path)

    def get_or_create(self, repo_root: str, worktree_path: str, branch: str, *,
                      base: str = DEFAULT_REF,
                      proxy_port: int | None = None) -> ServiceSupervisor:
        """Reuse the worktree's supervisor or create it (reading the committed config once)."""
        with self._lock:
            supervisor = self._supervisors.get(worktree_path)
            if supervisor is None:
                supervisor = ServiceSupervisor(repo_root, worktree_path, branch, base=base,
                                               proxy_port=proxy_port, table=self.table,
                                               clock=self.clock)
                self._supervisors[worktree_path] = supervisor
            return supervisor

    def paths(self) -> list[str]:
        """Worktree paths that have a supervisor."""
        with self._lock:
            return list(self._supervisors)

    def start(self, supervisor: ServiceSupervisor, name: str) -> ServiceStatus:
        """Start one service and make sure it is stopped when this process exits."""
        self._arm_exit_hook()
        return supervisor.start(name)

    def dispose(self, worktree_path: str) -> bool:
        """Stop every service of the worktree and forget its supervisor; ``False`` if none."""
        with self._lock:
            supervisor = self._supervisors.pop(worktree_path, None)
        if supervisor is None:
            return False
        supervisor.stop_all()
        return True

    def close(self) -> None:
        """Stop every service this registry started and forget every supervisor."""
        for path in self.paths():
            self.dispose(path)
        if self._exit_hook_pid is not None:
            atexit.unregister(self._at_exit)
            self._exit_hook_pid = None

    def _arm_exit_hook(self) -> None:
        with self._lock:
            if self._exit_hook_pid == os.getpid():
                return
            self._exit_hook_pid = os.getpid()
        atexit.register(self._at_exit)

    def _at_exit(self) -> None:
        if self._exit_hook_pid == os.getpid():  # never from a forked child's exit
            self.close()


_default: ServiceRegistry | None = None
_default_lock = threading.Lock()


def default_registry() -> ServiceRegistry:
    """The process-wide registry (over the process-wide proxy table)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = ServiceRegistry()
        return _default


def start_service(repo_root: str, worktree_path: str, branch: str, script: str, *,
                  base: str = DEFAULT_REF, proxy_port: int | None = None,
                  registry: ServiceRegistry | None = None) -> ServiceStatus:
    """``worktree.start-service``: start a declared ``type: "service"`` script."""
    owner = registry or default_registry()
    supervisor = owner.get_or_create(repo_root, worktree_path, branch, base=base,
                                     proxy_port=proxy_port)
    if script not in supervisor.names():
        raise ToolError("not_found", f'no service "{script}" declared (type: "service") in '
                                     f"{base}:agentproto.json")
    return owner.start(supervisor, script)


def stop_service(worktree_path: str, script: str, *,
                 registry: ServiceRegistry | None = None) -> dict[str, Any]:
    """``worktree.stop-service``: ``{stopped}``; ``False`` without a supervisor."""
    supervisor = (registry or default_registry()).get(worktree_path)
    if supervisor is None:
        return {"stopped": False}
    return {"stopped": supervisor.stop(script)}


def list_services(repo_root: str, worktree_path: str, branch: str, *,
                  base: str = DEFAULT_REF, proxy_port: int | None = None,
                  registry: ServiceRegistry | None = None) -> dict[str, Any]:
    """``worktree.list-services``: ``{services: [status…]}`` (creates the supervisor)."""
    supervisor = (registry or default_registry()).get_or_create(
        repo_root, worktree_path, branch, base=base, proxy_port=proxy_port)
    return {"services": supervisor.statuses()}
