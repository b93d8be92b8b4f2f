"""The ``*.localhost`` reverse proxy (spec section 5.5).

One process-wide :class:`ProxyTable` maps hostnames to local service ports. A proxy started
with :func:`start_proxy` listens on 127.0.0.1, routes each request by its ``Host`` header to
``127.0.0.1:<port>`` and forwards method, path and **all headers unchanged** (``Host``
included). WebSocket (any ``Upgrade``) requests are replayed on a raw TCP connection and then
piped both ways. Unknown hosts get a 502 that lists the hosts the proxy does know.

The server is thread-per-connection over plain sockets: HTTP/1.1 framing (Content-Length,
chunked, read-until-close) is parsed only as far as needed to find where a message ends, so
bytes pass through untouched and keep-alive connections are re-routed per request.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from dataclasses import dataclass, field

#: Longest request or response head accepted.
MAX_HEAD_BYTES = 64 * 1024
_CHUNK = 65536


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
        """Every routed hostname, sorted."""
        with self._lock:
            return sorted(self._routes)

    def clear(self) -> None:
        """Drop every route."""
        with self._lock:
            self._routes.clear()


#: The process-wide table shared by every supervisor and proxy in this process.
proxy_table = ProxyTable()


class _Stream:
    """A socket with a read buffer, for parsing just enough HTTP to find message ends."""

    def __init__(self, sock: socket.socket, initial: bytes = b"") -> None:
        self.sock = sock
        self.buffer = bytearray(initial)

    def fill(self) -> bool:
        data = self.sock.recv(_CHUNK)
        if not data:
            return False
        self.buffer += data
        return True

    def read_head(self) -> bytes | None:
        while True:
            end = self.buffer.find(b"\r\n\r\n")
            if end != -1:
                head = bytes(self.buffer[: end + 4])
                del self.buffer[: end + 4]
                return head
            if len(self.buffer) > MAX_HEAD_BYTES or not self.fill():
                return None

    def take(self, limit: int | None = None) -> bytes:
        if not self.buffer and not self.fill():
            return b""
        size = len(self.buffer) if limit is None else min(limit, len(self.buffer))
        data = bytes(self.buffer[:size])
        del self.buffer[:size]
        return data

    def read_line(self) -> bytes:
        while True:
            end = self.buffer.find(b"\r\n")
            if end != -1:
                line = bytes(self.buffer[: end + 2])
                del self.buffer[: end + 2]
                return line
            if not self.fill():
                raise ConnectionError("connection closed inside a chunked body")


@dataclass
class _Head:
    raw: bytes
    start_line: str
    headers: list[tuple[str, str]] = field(default_factory=list)

    @classmethod
    def parse(cls, raw: bytes) -> _Head:
        lines = raw.decode("latin-1").split("\r\n")
        head = cls(raw=raw, start_line=lines[0])
        for line in lines[1:]:
            if line:
                name, _, value = line.partition(":")
                head.headers.append((name.strip().lower(), value.strip()))
        return head

    def get(self, name: str) -> str | None:
        return next((value for key, value in self.headers if key == name), None)

    def tokens(self, name: str) -> set[str]:
        return {token.strip().lower() for key, value in self.headers if key == name
                for token in value.split(",")}

    @property
    def chunked(self) -> bool:
        return "chunked" in self.tokens("transfer-encoding")

    @property
    def content_length(self) -> int | None:
        value = self.get("content-length")
        return int(value) if value is not None and value.isdigit() else None


def _send_all(sock: socket.socket, data: bytes) -> None:
    if data:
        sock.sendall(data)


def _relay_body(source: _Stream, dest: socket.socket, head: _Head, *,
                until_close: bool) -> bool:
    """Copy one message body; returns False when the body ran until the source closed."""
    if head.chunked:
        while True:
            size_line = source.read_line()
            _send_all(dest, size_line)
            size = int(size_line.split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while True:  # trailers, then the final blank line
                    line = source.read_line()
                    _send_all(dest, line)
                    if line == b"\r\n":
                        return True
            remaining = size + 2
            while remaining:
                data = source.take(remaining)
                if not data:
                    raise ConnectionError("connection closed inside a chunk")
                _send_all(dest, data)
                remaining -= len(data)
    length = head.content_length
    if length is not None:
        while length:
            data = source.take(length)
            if not data:
                raise ConnectionError("connection closed inside a body")
            _send_all(dest, data)
            length -= len(data)
        return True
    if until_close:
        while True:
            data = source.take()
            if not data:
                return False
            _send_all(dest, data)
    return True


def _no_body(method: str, status: int) -> bool:
    return method == "HEAD" or 100 <= status < 200 or status in (204, 304)


class ProxyServer:
    """A running proxy: ``port``, ``close()``; routes come from its :class:`ProxyTable`."""

    def __init__(self, table: ProxyTable, port: int = 0, host: str = "127.0.0.1") -> None:
        self.table = table
        self._listener = socket.create_server((host, port), backlog=128)
        self.port: int = self._listener.getsockname()[1]
        self.host = host
        self._sockets: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._closed = False
        self._thread = threading.Thread(target=self._accept_loop, daemon=True,
                                        name=f"worktree-proxy:{self.port}")
        self._thread.start()

    @property
    def server(self) -> socket.socket:
        """The listening socket."""
        return self._listener

    def __enter__(self) -> ProxyServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Destroy every tracked socket (upgraded ones included), then close the server."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            sockets = list(self._sockets)
            self._sockets.clear()
        for sock in sockets:
            _destroy(sock)
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        self._thread.join(timeout=5)

    # -- connection handling ---------------------------------------------------------------

    def _track(self, sock: socket.socket) -> bool:
        with self._lock:
            if self._closed:
                return False
            self._sockets.add(sock)
            return True

    def _untrack(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.discard(sock)
        _destroy(sock)

    def _accept_loop(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            if not self._track(client):
                _destroy(client)
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        stream = _Stream(client)
        try:
            while True:
                raw = stream.read_head()
                if raw is None:
                    return
                head = _Head.parse(raw)
                if head.get("upgrade") is not None:
                    self._tunnel(client, stream, head)
                    return
                if not self._forward(client, stream, head):
                    return
        except (OSError, ValueError, ConnectionError):
            return
        finally:
            self._untrack(client)

    def _unknown_host(self, head: _Head) -> bytes:
        host = head.get("host")
        known = self.table.hosts()
        listing = "known hosts: " + ", ".join(known) if known else "no services registered"
        body = (f'worktree-proxy: no service for host "{host or "(none)"}"\n{listing}\n'
                ).encode()
        return _plain_response(502, "Bad Gateway", body)

    def _forward(self, client: socket.socket, stream: _Stream, head: _Head) -> bool:
        """Forward one request and its response; returns whether to keep the connection."""
        method = head.start_line.split(" ", 1)[0]
        port = self.table.resolve(head.get("host"))
        if port is None:
            _relay_request_body_discard(stream, head)
            _send_all(client, self._unknown_host(head))
            return "close" not in head.tokens("connection")
        try:
            upstream = socket.create_connection(("127.0.0.1", port))
        except OSError as exc:
            _send_all(client, _plain_response(
                502, "Bad Gateway", f"worktree-proxy: upstream error: {exc}\n".encode()))
            return False
        if not self._track(upstream):
            _destroy(upstream)
            return False
        try:
            _send_all(upstream, head.raw)
            _relay_body(stream, upstream, head, until_close=False)
            reply = _Stream(upstream)
            while True:
                raw = reply.read_head()
                if raw is None:
                    _send_all(client, _plain_response(
                        502, "Bad Gateway",
                        b"worktree-proxy: upstream error: connection closed\n"))
                    return False
                response = _Head.parse(raw)
                status = int(response.start_line.split(" ")[1])
                _send_all(client, raw)
                if 100 <= status < 200:
                    continue  # interim response: the final one follows
                break
            if _no_body(method, status):
                complete = True
            else:
                complete = _relay_body(reply, client, response, until_close=True)
            keep = complete and "close" not in head.tokens("connection") \
                and "close" not in response.tokens("connection") \
                and not head.start_line.endswith("HTTP/1.0")
            return keep
        finally:
            self._untrack(upstream)

    def _tunnel(self, client: socket.socket, stream: _Stream, head: _Head) -> None:
        """Replay an upgrade request on a raw connection and pipe both ways until one side
        closes or fails; unknown hosts get ``HTTP/1.1 502 Bad Gateway``."""
        port = self.table.resolve(head.get("host"))
        if port is None:
            _send_all(client, b"HTTP/1.1 502 Bad Gateway\r\nConnection: close\r\n\r\n")
            return
        try:
            upstream = socket.create_connection(("127.0.0.1", port))
        except OSError:
            _send_all(client, b"HTTP/1.1 502 Bad Gateway\r\nConnection: close\r\n\r\n")
            return
        if not self._track(upstream):
            _destroy(upstream)
            return
        try:
            _send_all(upstream, head.raw + bytes(stream.buffer))
            stream.buffer.clear()
            done = threading.Event()
            pump = threading.Thread(target=_pipe, args=(upstream, client, done), daemon=True)
            pump.start()
            _pipe(client, upstream, done)
            pump.join()
        finally:
            self._untrack(upstream)


def _relay_request_body_discard(stream: _Stream, head: _Head) -> None:
    class _Sink:
        def sendall(self, data: bytes) -> None:
            pass

    _relay_body(stream, _Sink(), head, until_close=False)  # type: ignore[arg-type]


def _pipe(source: socket.socket, dest: socket.socket, done: threading.Event) -> None:
    try:
        while not done.is_set():
            data = source.recv(_CHUNK)
            if not data:
                break
            dest.sendall(data)
    except OSError:
        pass
    finally:
        done.set()
        for sock in (source, dest):  # a close or error on either side closes both
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


def _plain_response(status: int, reason: str, body: bytes) -> bytes:
    head = (f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode()
    return head + body


def _destroy(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    with contextlib.suppress(OSError):
        sock.close()


def start_proxy(port: int = 0, table: ProxyTable | None = None,
                host: str = "127.0.0.1") -> ProxyServer:
    """Start a proxy over ``table`` (default: the process-wide :data:`proxy_table`).

    ``port=0`` lets the OS pick; read it from ``.port``. Call ``.close()`` when done.
    """
    return ProxyServer(table if table is not None else proxy_table, port=port, host=host)
