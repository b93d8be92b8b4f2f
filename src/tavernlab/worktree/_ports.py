"""Port allocation for services (docs/worktrees.md).

A declared port is used when it is free and not already reserved by a sibling service;
otherwise the OS picks an ephemeral one. All ports of a worktree are reserved up front, so
two services never race for the same number. The check-then-bind race with unrelated
programs is accepted, as upstream does.
"""

from __future__ import annotations

import socket
from collections.abc import MutableSet

from tavernlab.worktree._errors import PortAllocationError

#: Ephemeral attempts before giving up.
MAX_ATTEMPTS = 20


def is_port_free(port: int, host: str = "127.0.0.1") -> bool:
    """Whether ``host:port`` can be bound right now (bind, then close)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


def ephemeral_port(host: str = "127.0.0.1") -> int:
    """A port the OS considers free: bind ``host:0``, read the port, close."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        port: int = probe.getsockname()[1]
        return port


def allocate_port(preferred: int | None, reserved: MutableSet[int]) -> int:
    """Return ``preferred`` if it is free and unreserved, else an unreserved ephemeral port.

    The chosen port is added to ``reserved``. After 20 reserved ephemeral picks the call
    fails with ``could not allocate a free port after 20 attempts``.
    """
    if preferred is not None and preferred not in reserved and is_port_free(preferred):
        reserved.add(preferred)
        return preferred
    for _ in range(MAX_ATTEMPTS):
        port = ephemeral_port()
        if port not in reserved:
            reserved.add(port)
            return port
    raise PortAllocationError(f"could not allocate a free port after {MAX_ATTEMPTS} attempts")
