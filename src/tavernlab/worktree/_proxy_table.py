"""The hostname → port routes behind the ``*.localhost`` proxy (docs/worktrees.md).

Keys are lowercased on set, get and delete; resolving a raw ``Host`` header strips its
``:port`` (keeping a bracketed IPv6 address) first.
"""

from __future__ import annotations

import threading


def strip_port(host: str) -> str:
    """``host:8080`` → ``host``; ``[::1]:8080`` → ``[::1]``; a bare host is unchanged."""
    if host.startswith("["):
        end = host.find("]")
        return host[: end + 1] if end != -1 else host
    if host.count(":") == 1:
        return host.split(":", 1)[0]
    return host


class ProxyTable:
    """Hostname → port routes; keys are lowercased on set, get and delete. Thread-safe."""

    def __init__(self) -> None:
        self._routes: dict[str, int] = {}
        self._lock = threading.Lock()

    def set(self, hostname: str, port: int) -> None:
        """Route ``hostname`` to ``127.0.0.1:<port>``."""
        with self._lock:
            self._routes[hostname.lower()] = port

    def get(self, hostname: str) -> int | None:
        """The port for ``hostname`` (exact, case-insensitive), or ``None``."""
        with self._lock:
            return self._routes.get(hostname.lower())

    def delete(self, hostname: str) -> bool:
        """Drop a route; ``True`` if it existed."""
        with self._lock:
            return self._routes.pop(hostname.lower(), None) is not None

    def resolve(self, host_header: str | None) -> int | None:
        """The port for a raw ``Host`` header (port stripped, lowercased), or ``None``."""
        if not host_header:
            return None
        return self.get(strip_port(host_header.strip()))

    def hosts(self) -> list[str]:
        """Every routed hostname, in the order the routes were added (upstream's order)."""
        with self._lock:
            return list(self._routes)

    def clear(self) -> None:
        """Drop every route."""
        with self._lock:
            self._routes.clear()


#: The process-wide table: every supervisor and proxy of the default runtime share it, as
#: upstream's one proxy port serves every worktree of the machine.
proxy_table = ProxyTable()
