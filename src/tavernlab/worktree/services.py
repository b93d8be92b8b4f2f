"""Supervised services of a worktree (spec sections 5.1, 5.2, 2.5-2.7).

One :class:`ServiceSupervisor` per worktree path, kept in a process-wide registry, owns the
worktree's ``type: "service"`` scripts from the committed ``agentproto.json``. Creating it
reserves every service's port up front and computes its ``*.localhost`` hostname; nothing is
spawned until :meth:`ServiceSupervisor.start`. Starting registers the hostname in the
process-wide proxy table; stopping drops it. Services are not restarted when they crash.
"""

from __future__ import annotations

import contextlib
import os
import signal as signals
import subprocess
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal, TypedDict

from tavernlab.worktree.config import load_committed_config
from tavernlab.worktree.environment import HookContext, ServiceEndpoint, service_environment
from tavernlab.worktree.errors import ServiceError
from tavernlab.worktree.hostnames import (
    DEFAULT_PROXY_PORT,
    default_branch,
    repo_name,
    service_hostname,
    service_url,
)
from tavernlab.worktree.ports import allocate_port
from tavernlab.worktree.process import child_environment
from tavernlab.worktree.proxy import ProxyTable, proxy_table


class ServiceStatus(TypedDict):
    """``{name, hostname, port, url, pid, status, exitCode, startedAt}``."""

    name: str
    hostname: str
    port: int
    url: str
    pid: int | None
    status: Literal["running", "exited"]
    exitCode: int | None
    startedAt: str | None


@dataclass
class _Service:
    name: str
    command: str
    hostname: str
    port: int
    url: str
    process: subprocess.Popen[bytes] | None = None
    pid: int | None = None
    status: Literal["running", "exited"] = "exited"
    exit_code: int | None = None
    started_at: str | None = None

    def to_status(self) -> ServiceStatus:
        return {"name": self.name, "hostname": self.hostname, "port": self.port,
                "url": self.url, "pid": self.pid, "status": self.status,
                "exitCode": self.exit_code, "startedAt": self.started_at}


class ServiceSupervisor:
    """The services of one worktree: ports, hostnames, processes and proxy routes."""

    def __init__(self, repo_root: str, worktree_path: str, branch: str, *,
                 base: str = "origin/main", proxy_port: int | None = None,
                 table: ProxyTable | None = None) -> None:
        self.repo_root = os.path.abspath(repo_root)
        self.worktree_path = worktree_path
        self.branch = branch
        self.table = table if table is not None else proxy_table
        port = proxy_port or DEFAULT_PROXY_PORT
        config = load_committed_config(self.repo_root, base)
        declared = config.list_services() if config else []
        on_default = branch == default_branch(self.repo_root)
        repo = repo_name(self.repo_root)
        reserved: set[int] = set()
        self._services: dict[str, _Service] = {}
        for script in declared:
            hostname = service_hostname(script["name"], branch, repo, on_default)
            self._services[script["name"]] = _Service(
                name=script["name"], command=script["command"], hostname=hostname,
                port=allocate_port(script.get("port"), reserved),
                url=service_url(hostname, port))
        self._lock = threading.Lock()

    def names(self) -> list[str]:
        """Declared service names, in declaration order."""
        return list(self._services)

    def status(self, name: str) -> ServiceStatus:
        """One service's status."""
        return self._get(name).to_status()

    def statuses(self) -> list[ServiceStatus]:
        """Every declared service's status, never-started ones as ``exited``."""
        return [service.to_status() for service in self._services.values()]

    def _get(self, name: str) -> _Service:
        service = self._services.get(name)
        if service is None:
            raise ServiceError(f'no service "{name}" declared in agentproto.json')
        return service

    def start(self, name: str) -> ServiceStatus:
        """Start a service (or return its status if it runs) and register its route.

        The command runs through ``/bin/sh -c`` in the worktree with the inherited
        environment, the hook variables, its own ``AGENTPROTO_PORT``/``AGENTPROTO_URL`` and
        every sibling's discovery variables; stdio is inherited (no log files).
        """
        service = self._get(name)
        with self._lock:
            if service.status == "running" and service.process is not None \
                    and service.process.poll() is None:
                return service.to_status()
            endpoints = [ServiceEndpoint(s.name, s.port, s.url) for s in self._services.values()]
            own = ServiceEndpoint(service.name, service.port, service.url)
            env = service_environment(
                HookContext(self.repo_root, self.worktree_path, self.branch), own, endpoints)
            try:
                process = subprocess.Popen(["/bin/sh", "-c", service.command],
                                           cwd=self.worktree_path, env=child_environment(env),
                                           stdin=subprocess.DEVNULL)
            except OSError:
                service.status, service.pid, service.process = "exited", None, None
                if service.exit_code is None:
                    service.exit_code = -1
                return service.to_status()
            service.process = process
            service.pid = process.pid
            service.status = "running"
            service.exit_code = None
            service.started_at = datetime.now(UTC).isoformat(timespec="milliseconds") \
                .replace("+00:00", "Z")
            threading.Thread(target=self._watch, args=(service, process), daemon=True).start()
            self.table.set(service.hostname, service.port)
            return service.to_status()

    def _watch(self, service: _Service, process: subprocess.Popen[bytes]) -> None:
        code = process.wait()
        with self._lock:
            if service.process is process:
                service.status = "exited"
                service.exit_code = -1 if code < 0 else code

    def stop(self, name: str) -> bool:
        """Drop the route; SIGTERM a running service's shell child (no group kill), wait for
        it and mark it exited. ``False`` when it was not running."""
        service = self._get(name)
        self.table.delete(service.hostname)
        process = service.process
        if process is None or service.status != "running" or process.poll() is not None:
            return False
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signals.SIGTERM)
        code = process.wait()
        with self._lock:
            service.status = "exited"
            service.exit_code = -1 if code < 0 else code
        return True

    def stop_all(self) -> list[bool]:
        """Stop every service in parallel."""
        if not self._services:
            return []
        with ThreadPoolExecutor(max_workers=len(self._services)) as pool:
            return list(pool.map(self.stop, self._services))


_supervisors: dict[str, ServiceSupervisor] = {}
_registry_lock = threading.Lock()


def get_supervisor(worktree_path: str) -> ServiceSupervisor | None:
    """The supervisor of a worktree (exact path string), if one was created."""
    with _registry_lock:
        return _supervisors.get(worktree_path)


def get_or_create_supervisor(repo_root: str, worktree_path: str, branch: str, *,
                             base: str = "origin/main",
                             proxy_port: int | None = None) -> ServiceSupervisor:
    """Reuse the worktree's supervisor or create it (reading the committed config once)."""
    with _registry_lock:
        supervisor = _supervisors.get(worktree_path)
        if supervisor is None:
            supervisor = ServiceSupervisor(repo_root, worktree_path, branch, base=base,
                                           proxy_port=proxy_port)
            _supervisors[worktree_path] = supervisor
        return supervisor


def dispose_supervisor(worktree_path: str) -> bool:
    """Stop every service of the worktree and forget its supervisor; ``False`` if none."""
    with _registry_lock:
        supervisor = _supervisors.pop(worktree_path, None)
    if supervisor is None:
        return False
    supervisor.stop_all()
    return True


def start_service(repo_root: str, worktree_path: str, branch: str, script: str, *,
                  base: str = "origin/main", proxy_port: int | None = None) -> ServiceStatus:
    """``worktree.start-service``: start a declared ``type: "service"`` script."""
    from tavernlab.worktree.errors import ToolError

    supervisor = get_or_create_supervisor(repo_root, worktree_path, branch, base=base,
                                          proxy_port=proxy_port)
    if script not in supervisor.names():
        raise ToolError("not_found", f'no service "{script}" declared (type: "service") in '
                                     f"{base}:agentproto.json")
    return supervisor.start(script)


def stop_service(worktree_path: str, script: str) -> dict[str, Any]:
    """``worktree.stop-service``: ``{stopped}``; ``False`` without a supervisor."""
    supervisor = get_supervisor(worktree_path)
    if supervisor is None:
        return {"stopped": False}
    return {"stopped": supervisor.stop(script)}


def list_services(repo_root: str, worktree_path: str, branch: str, *,
                  base: str = "origin/main", proxy_port: int | None = None) -> dict[str, Any]:
    """``worktree.list-services``: ``{services: [status…]}`` (creates the supervisor)."""
    supervisor = get_or_create_supervisor(repo_root, worktree_path, branch, base=base,
                                          proxy_port=proxy_port)
    return {"services": supervisor.statuses()}
