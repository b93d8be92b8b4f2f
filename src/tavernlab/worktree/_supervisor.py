"""The supervised services of one worktree (docs/worktrees.md).

A :class:`ServiceSupervisor` owns the worktree's ``type: "service"`` scripts from the
committed ``agentproto.json``. Creating it reserves every service's port up front and
computes its ``*.localhost`` hostname; nothing is spawned until :meth:`ServiceSupervisor.start`.
Starting registers the hostname in the proxy table; stopping drops it. Services are not
restarted when they crash.

Beyond upstream (which signals only the ``/bin/sh`` child and waits for it without a bound):
every service leads its own process group; stopping sends SIGTERM to the whole group, waits
until no member is left and sends SIGKILL to the group after 5 s, so the real server and its
children die with the shell and the stop never blocks for longer than the grace period. A
service killed by a signal reports ``exitCode: null`` and the signal's name in ``signal``.
"""

from __future__ import annotations

import os
import signal as signals
import subprocess
import threading
from dataclasses import dataclass
from typing import Literal, TypedDict

from tavernlab.clock import SYSTEM_CLOCK, Clock, rfc3339_millis
from tavernlab.worktree._config import load_committed_config
from tavernlab.worktree._environment import HookContext, ServiceEndpoint, service_environment
from tavernlab.worktree._errors import ServiceError
from tavernlab.worktree._git import DEFAULT_REF
from tavernlab.worktree._hostnames import (
    DEFAULT_PROXY_PORT,
    default_branch,
    repo_name,
    service_hostname,
    service_url,
)
from tavernlab.worktree._ports import allocate_port
from tavernlab.worktree._process import (
    KILL_GRACE_SECONDS,
    ProcessGroup,
    child_environment,
    terminate_groups,
)
from tavernlab.worktree._proxy_table import ProxyTable


class ServiceStatus(TypedDict):
    """``{name, hostname, port, url, pid, status, exitCode, signal, startedAt}``.

    ``signal`` (tavernlab's addition) names the signal that ended the service, when one did.
    """

    name: str
    hostname: str
    port: int
    url: str
    pid: int | None
    status: Literal["running", "exited"]
    exitCode: int | None
    signal: str | None
    startedAt: str | None


@dataclass
class _Service:
    name: str
    command: str
    hostname: str
    port: int
    url: str
    process: subprocess.Popen[bytes] | None = None
    status: Literal["running", "exited"] = "exited"
    exit_code: int | None = None
    signal: str | None = None
    started_at: str | None = None

    def to_status(self) -> ServiceStatus:
        return {"name": self.name, "hostname": self.hostname, "port": self.port,
                "url": self.url, "pid": self.process.pid if self.process else None,
                "status": self.status, "exitCode": self.exit_code, "signal": self.signal,
                "startedAt": self.started_at}

    def record_exit(self, returncode: int) -> None:
        self.status = "exited"
        if returncode < 0:
            self.exit_code = None
            self.signal = _signal_name(-returncode)
        else:
            self.exit_code, self.signal = returncode, None


def _signal_name(number: int) -> str:
    try:
        return signals.Signals(number).name
    except ValueError:
        return f"signal {number}"


class ServiceSupervisor:
    """The services of one worktree: ports, hostnames, process groups and proxy routes."""

    def __init__(self, repo_root: str, worktree_path: str, branch: str, *,
                 base: str = DEFAULT_REF, proxy_port: int | None = None,
                 table: ProxyTable, clock: Clock = SYSTEM_CLOCK) -> None:
        self.repo_root = os.path.abspath(repo_root)
        self.worktree_path = worktree_path
        self.branch = branch
        self.table = table
        self.clock = clock
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

        The command runs through ``/bin/sh -c`` in the worktree, leading a new process
        group, with the inherited environment, the hook variables, its own
        ``AGENTPROTO_PORT``/``AGENTPROTO_URL`` and every sibling's discovery variables; stdio
        is inherited (no log files).
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
                                           stdin=subprocess.DEVNULL, start_new_session=True)
            except OSError:
                service.status, service.process, service.signal = "exited", None, None
                if service.exit_code is None:
                    service.exit_code = -1
                return service.to_status()
            service.process = process
            service.status, service.exit_code, service.signal = "running", None, None
            service.started_at = rfc3339_millis(self.clock.now())
            threading.Thread(target=self._watch, args=(service, process), daemon=True,
                             name=f"service:{name}").start()
            self.table.set(service.hostname, service.port)
            return service.to_status()

    def _watch(self, service: _Service, process: subprocess.Popen[bytes]) -> None:
        code = process.wait()
        with self._lock:
            if service.process is process:
                service.record_exit(code)

    def stop(self, name: str, grace: float = KILL_GRACE_SECONDS) -> bool:
        """Drop the route and stop the service's whole process group (SIGTERM, SIGKILL after
        ``grace``); ``False`` when it was not running.

        Members of the group that outlived an already-exited shell are killed too, so no
        process the service started survives a stop.
        """
        return self._stop([self._get(name)], grace)[0]

    def stop_all(self, grace: float = KILL_GRACE_SECONDS) -> list[bool]:
        """Stop every service together (one grace period for all), in declaration order."""
        return self._stop(list(self._services.values()), grace)

    def _stop(self, services: list[_Service], grace: float) -> list[bool]:
        running: list[bool] = []
        groups: list[tuple[ProcessGroup, subprocess.Popen[bytes] | None]] = []
        for service in services:
            self.table.delete(service.hostname)
            process = service.process
            was_running = process is not None and service.status == "running" \
                and process.poll() is None
            running.append(was_running)
            if process is not None and (was_running or ProcessGroup(process.pid).alive()):
                groups.append((ProcessGroup(process.pid), process))
        terminate_groups(groups, grace)
        with self._lock:
            for service, was_running in zip(services, running, strict=True):
                process = service.process
                if was_running and process is not None and process.returncode is not None:
                    service.record_exit(process.returncode)
        return running
