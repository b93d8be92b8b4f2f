"""What the worktree tools run against: a scheduler, service supervisors, a proxy table, a
clock and an id factory (:class:`WorktreeRuntime`).

Upstream keeps all of these as process-wide singletons. tavernlab makes them objects so a
``Lab`` can own its services and close them, while the *caps* stay process-wide as upstream's
are:

* the provisioning scheduler is shared by default (:func:`provision_scheduler`): the
  concurrency cap limits the installs of the whole process, not of one lab;
* the proxy table is shared by default (:data:`proxy_table`): one proxy port serves every
  worktree of the machine, so every runtime registers its routes in the same table.

A runtime built with ``WorktreeRuntime()`` therefore gets its own
:class:`~tavernlab.worktree.ServiceRegistry` over the shared table and scheduler;
:meth:`WorktreeRuntime.close` stops the services that registry started, closes the proxies
started through :meth:`WorktreeRuntime.start_proxy` and (only if the runtime was given a
scheduler of its own) rejects that scheduler's waiters. :func:`default_runtime` is the
process-wide runtime every tool call uses unless given another.
"""

from __future__ import annotations

import threading

from tavernlab.clock import RANDOM_IDS, SYSTEM_CLOCK, Clock, IdFactory
from tavernlab.worktree._proxy import ProxyServer
from tavernlab.worktree._proxy import start_proxy as _start_proxy
from tavernlab.worktree._proxy_table import ProxyTable, proxy_table
from tavernlab.worktree._scheduler import ProvisionScheduler, provision_scheduler
from tavernlab.worktree._services import ServiceRegistry, default_registry


class WorktreeRuntime:
    """The scheduler, services, routes, clock and ids one owner's worktree tools use."""

    def __init__(self, *, scheduler: ProvisionScheduler | None = None,
                 table: ProxyTable | None = None, services: ServiceRegistry | None = None,
                 clock: Clock = SYSTEM_CLOCK, ids: IdFactory = RANDOM_IDS) -> None:
        self._own_scheduler = scheduler
        self.table = table if table is not None else proxy_table
        self.services = services if services is not None else ServiceRegistry(self.table,
                                                                              clock)
        self.clock = clock
        self.ids = ids
        self._proxies: list[ProxyServer] = []
        self._lock = threading.Lock()

    @property
    def scheduler(self) -> ProvisionScheduler:
        """The runtime's scheduler: its own if it was given one, else the process-wide one."""
        return self._own_scheduler or provision_scheduler()

    def start_proxy(self, port: int = 0, host: str = "127.0.0.1") -> ProxyServer:
        """Start a proxy over this runtime's table; :meth:`close` closes it."""
        server = _start_proxy(port=port, table=self.table, host=host)
        with self._lock:
            self._proxies.append(server)
        return server

    def close(self) -> None:
        """Stop what this runtime started: its services, its proxies, its own scheduler."""
        self.services.close()
        with self._lock:
            proxies, self._proxies = self._proxies, []
        for server in proxies:
            server.close()
        if self._own_scheduler is not None:
            self._own_scheduler.close()


_default: WorktreeRuntime | None = None
_default_lock = threading.Lock()


def default_runtime() -> WorktreeRuntime:
    """The process-wide runtime: the default scheduler, table and service registry."""
    global _default
    with _default_lock:
        if _default is None:
            _default = WorktreeRuntime(services=default_registry())
        return _default
