"""Fixtures for the script kit: one real fetch per test session, a local registry, a dead one.

``kit_settings`` and ``kit_env`` live in ``tests/conftest.py`` (the replay tests use them
too): the first fetches the six tarballs from the npm registry (``$TAVERNLAB_NPM_REGISTRY`` /
``$npm_config_registry`` / the public one) once per session into a temporary cache, or reuses
``$TAVERNLAB_KIT_CACHE`` when it is set (a warm cache makes reruns fast). ``kit_env`` points
the environment at that cache for code that reads it at call time (the module loaders, the
CLI). ``local_registry`` is a real HTTP server on 127.0.0.1 serving the bytes a test gives it;
``closed_registry`` is a URL whose port nothing listens on.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tavernlab.js.kit import KitPin


class LocalRegistry:
    """A registry on 127.0.0.1 serving ``files`` (URL path -> bytes); records each path."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.requests: list[str] = []
        registry = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                registry.requests.append(self.path)
                body = registry.files.get(self.path)
                self.send_response(200 if body is not None else 404)
                self.send_header("Content-Length", str(len(body or b"")))
                self.end_headers()
                self.wfile.write(body or b"")

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def serve(self, pin: KitPin, data: bytes) -> None:
        """Serve ``data`` as ``pin``'s tarball."""
        self.files["/" + pin.tarball_url(self.url).removeprefix(self.url)] = data

    def close(self) -> None:
        """Stop the server and its thread."""
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


@pytest.fixture
def local_registry() -> Iterator[LocalRegistry]:
    """A running :class:`LocalRegistry`."""
    registry = LocalRegistry()
    yield registry
    registry.close()


@pytest.fixture
def closed_registry() -> str:
    """A registry URL on a 127.0.0.1 port that was free a moment ago (connection refused)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/"
