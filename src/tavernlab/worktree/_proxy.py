"""The ``*.localhost`` reverse proxy (docs/worktrees.md), framed by h11.

A proxy started with :func:`start_proxy` listens on 127.0.0.1, routes each request by its
``Host`` header (through a :class:`~tavernlab.worktree.ProxyTable`) to
``127.0.0.1:<port>`` and forwards method, target and **all headers unchanged** (``Host`` and
header-name casing included), then relays the status, headers and body back. Unknown hosts
get a 502 that lists the hosts the proxy does know, one per indented line (upstream's body).

HTTP/1.1 framing on both sides is h11's: conflicting ``Content-Length`` headers, a request
with both ``Content-Length`` and ``Transfer-Encoding`` (tavernlab refuses the ambiguous
framing instead of letting ``Transfer-Encoding`` win) and other malformed requests are
answered ``400`` and the connection is closed; chunked bodies,
pipelined requests and keep-alive work as the protocol says, and every request of a
keep-alive connection is routed on its own. A request with an ``Upgrade`` header (a
WebSocket) is replayed on a raw TCP connection to the service — request line, every raw
header line, a blank line, any body and buffered bytes — and then piped both ways until
either side closes.

Every socket has a timeout (tavernlab's addition): a client that stalls longer than
``timeout`` seconds mid-request gets ``408`` and is closed, an idle keep-alive connection is
closed, and a service that stalls longer than ``upstream_timeout`` gets the request a
``502``. Tunnels have no timeout: a quiet WebSocket is not a stalled one. Running out of
descriptors (``EMFILE``) or threads never stops the proxy from accepting once they are back.
"""

from __future__ import annotations

import contextlib
import errno
import socket
import threading
from http import HTTPStatus

import h11

from tavernlab.worktree._proxy_table import ProxyTable, proxy_table

#: Most bytes h11 buffers while a head is incomplete (beyond: 431 for a request head).
MAX_HEAD_BYTES = 64 * 1024
#: Seconds a client may stall (mid-request or idle between requests).
DEFAULT_TIMEOUT = 60.0
#: Seconds the service may stall before the request gets a 502.
DEFAULT_UPSTREAM_TIMEOUT = 300.0
#: Seconds the accept loop waits after a transient failure (doubling up to the maximum).
ACCEPT_BACKOFF_MIN = 0.01
ACCEPT_BACKOFF_MAX = 0.5
#: ``accept`` failures that pass (descriptors, memory, a connection reset in the backlog).
_TRANSIENT_ACCEPT_ERRORS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM,
                                      errno.ECONNABORTED, errno.EPROTO, errno.EPERM})
_CHUNK = 262144
_TARGET = "127.0.0.1"


class _Failed(Exception):
    """The exchange cannot go on; ``response`` is sent if the client may still get one."""

    def __init__(self, status: int, reason: str, body: str) -> None:
        super().__init__(body)
        self.status, self.reason, self.body = status, reason, body


def _next_event(conn: h11.Connection, sock: socket.socket) -> object:
    """The next h11 event, reading from ``sock`` as needed (EOF becomes ConnectionClosed)."""
    while True:
        event = conn.next_event()
        if event is not h11.NEED_DATA:
            return event
        conn.receive_data(sock.recv(_CHUNK))


def _header(event: h11.Request, name: bytes) -> str | None:
    for key, value in event.headers:
        if key == name:
            return str(value.decode("latin-1"))
    return None


def _no_delay(sock: socket.socket) -> socket.socket:
    """Send small writes at once: a head and its body go out as separate writes, and Nagle's
    algorithm against the peer's delayed ACK would add ~40 ms to every small response."""
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def _destroy(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    with contextlib.suppress(OSError):
        sock.close()


def _pipe(source: socket.socket, dest: socket.socket) -> None:
    """Copy bytes until either side closes or fails, then close both."""
    try:
        while data := source.recv(_CHUNK):
            dest.sendall(data)
    except OSError:
        pass
    finally:
        for sock in (source, dest):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


class ProxyServer:
    """A running proxy: ``port``, ``server``, ``close()``; routes come from its table."""

    def __init__(self, table: ProxyTable, port: int = 0, host: str = "127.0.0.1", *,
                 timeout: float = DEFAULT_TIMEOUT,
                 upstream_timeout: float = DEFAULT_UPSTREAM_TIMEOUT) -> None:
        self.table = table
        self.timeout = timeout
        self.upstream_timeout = upstream_timeout
        self._listener = socket.create_server((host, port), backlog=1024)
        self.port: int = self._listener.getsockname()[1]
        self.host = host
        self._sockets: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._closed = False
        self._stopping = threading.Event()
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
            self._stopping.set()
            sockets = list(self._sockets)
            self._sockets.clear()
        for sock in sockets:
            _destroy(sock)
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        self._thread.join(timeout=5)

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
        """Accept until the proxy is closed. Running out of descriptors, memory or threads
        (``EMFILE``, ``ENFILE``, ``ENOBUFS``, ``ENOMEM``, a thread that cannot start) or a
        connection reset before it was accepted never stops the loop: it waits a moment
        (up to :data:`ACCEPT_BACKOFF_MAX` seconds, doubling from
        :data:`ACCEPT_BACKOFF_MIN`) and accepts again, so the proxy serves once the
        pressure is gone; a client refused meanwhile waits in the listen backlog."""
        backoff = ACCEPT_BACKOFF_MIN
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError as exc:
                if self._closed or exc.errno not in _TRANSIENT_ACCEPT_ERRORS:
                    return
                if exc.errno != errno.ECONNABORTED:
                    self._stopping.wait(backoff)
                    backoff = min(backoff * 2, ACCEPT_BACKOFF_MAX)
                continue
            backoff = ACCEPT_BACKOFF_MIN
            if not self._track(client):
                _destroy(client)
                return
            try:
                threading.Thread(target=self._serve, args=(client,), daemon=True).start()
            except RuntimeError:  # no thread for it now: drop this client, not the proxy
                self._untrack(client)
                self._stopping.wait(backoff)

    # -- one client connection -------------------------------------------------------------

    def _serve(self, client: socket.socket) -> None:
        conn = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD_BYTES)
        try:
            # inside the try: close() may destroy the socket before this thread set it up
            _no_delay(client).settimeout(self.timeout)
            while True:
                event = _next_event(conn, client)
                if not isinstance(event, h11.Request):
                    return  # ConnectionClosed (or a stray event): the client is done
                if (_header(event, b"transfer-encoding") is not None
                        and _header(event, b"content-length") is not None):
                    # Ambiguous framing (a request-smuggling vector): never forwarded.
                    self._refuse(client, conn, 400, "Bad Request",
                                 "worktree-proxy: bad request: both Content-Length and "
                                 "Transfer-Encoding\n")
                    return
                if _header(event, b"upgrade") is not None:
                    self._tunnel(client, conn, event)
                    return
                self._exchange(client, conn, event)
                if conn.our_state is not h11.DONE or conn.their_state is not h11.DONE:
                    return
                conn.start_next_cycle()
        except h11.RemoteProtocolError as exc:
            status = exc.error_status_hint
            self._refuse(client, conn, status, HTTPStatus(status).phrase,
                         f"worktree-proxy: bad request: {exc}\n")
        except TimeoutError:
            if conn.their_state is not h11.IDLE or conn.trailing_data[0]:
                self._refuse(client, conn, 408, "Request Timeout",
                             "worktree-proxy: request timed out\n")
        except (OSError, h11.LocalProtocolError):
            pass
        finally:
            self._untrack(client)

    def _respond(self, client: socket.socket, conn: h11.Connection, status: int,
                 reason: str, body: str) -> None:
        data = body.encode("utf-8")
        client.sendall(conn.send(h11.Response(
            status_code=status, reason=reason.encode(),
            headers=[("Content-Type", "text/plain"), ("Content-Length", str(len(data)))])))
        client.sendall(conn.send(h11.Data(data=data)))
        client.sendall(conn.send(h11.EndOfMessage()))

    def _refuse(self, client: socket.socket, conn: h11.Connection, status: int,
                reason: str, body: str) -> None:
        """Best effort: answer with an error if the protocol still allows one."""
        if conn.our_state not in (h11.IDLE, h11.SEND_RESPONSE):
            return
        with contextlib.suppress(OSError, h11.LocalProtocolError):
            self._respond(client, conn, status, reason, body)

    def _unknown_host(self, host: str | None) -> str:
        known = self.table.hosts()
        listing = ("known hosts:\n" + "".join(f"  {name}\n" for name in known)
                   if known else "no services registered\n")
        return f'worktree-proxy: no service for host "{host or "(none)"}"\n{listing}'

    def _answer_locally(self, client: socket.socket, conn: h11.Connection, body: str) -> None:
        """A 502 from the proxy itself. The request body is read first, unless the client
        waits for ``100 Continue`` (then the connection closes after the answer)."""
        if not conn.client_is_waiting_for_100_continue:
            while not isinstance(_next_event(conn, client), h11.EndOfMessage):
                pass
        self._respond(client, conn, 502, "Bad Gateway", body)

    def _exchange(self, client: socket.socket, conn: h11.Connection,
                  request: h11.Request) -> None:
        """Forward one request and relay its response (errors become a 502 if possible)."""
        host = _header(request, b"host")
        port = self.table.resolve(host)
        if port is None:
            self._answer_locally(client, conn, self._unknown_host(host))
            return
        try:
            upstream = _no_delay(socket.create_connection((_TARGET, port),
                                                          timeout=self.upstream_timeout))
        except OSError as exc:
            self._answer_locally(client, conn, f"worktree-proxy: upstream error: {exc}\n")
            return
        if not self._track(upstream):
            _destroy(upstream)
            return
        try:
            _Exchange(client, conn, upstream).run(request)
        except _Failed as failure:
            self._refuse(client, conn, failure.status, failure.reason, failure.body)
            if conn.their_state is not h11.DONE:
                raise ConnectionAbortedError from failure
        finally:
            self._untrack(upstream)

    def _tunnel(self, client: socket.socket, conn: h11.Connection,
                request: h11.Request) -> None:
        """Replay an upgrade request on a raw connection and pipe both ways until one side
        closes or fails; unknown hosts get ``HTTP/1.1 502 Bad Gateway``."""
        body = bytearray()
        while isinstance(event := _next_event(conn, client), h11.Data):
            body += event.data
        port = self.table.resolve(_header(request, b"host"))
        try:
            upstream = None if port is None else socket.create_connection(
                (_TARGET, port), timeout=self.upstream_timeout)
        except OSError:
            upstream = None
        if upstream is None:
            client.sendall(b"HTTP/1.1 502 Bad Gateway\r\n\r\n")
            return
        if not self._track(upstream):
            _destroy(upstream)
            return
        head = [f"{request.method.decode('latin-1')} {request.target.decode('latin-1')} "
                "HTTP/1.1"]
        head += [f"{name.decode('latin-1')}: {value.decode('latin-1')}"
                 for name, value in request.headers.raw_items()]
        try:
            upstream.sendall(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + bytes(body)
                             + conn.trailing_data[0])
            client.settimeout(None)
            upstream.settimeout(None)
            pump = threading.Thread(target=_pipe, args=(upstream, client), daemon=True)
            pump.start()
            _pipe(client, upstream)
            pump.join()
        finally:
            self._untrack(upstream)


class _Exchange:
    """One request forwarded to a service and its response relayed back, over h11.

    Failures talking to the client propagate as they are; failures talking to the service
    become a 502 (:class:`_Failed`) while no response has started, else abort the connection.
    """

    def __init__(self, client: socket.socket, conn: h11.Connection,
                 upstream: socket.socket) -> None:
        self.client, self.conn, self.upstream = client, conn, upstream
        self.up = h11.Connection(h11.CLIENT, max_incomplete_event_size=MAX_HEAD_BYTES)
        self.responded = False

    def _to_client(self, event: h11.InformationalResponse | h11.Response | h11.Data
                   | h11.EndOfMessage) -> None:
        self.client.sendall(self.conn.send(event))

    def _to_upstream(self, event: h11.Request | h11.Data | h11.EndOfMessage) -> None:
        try:
            self.upstream.sendall(self.up.send(event))
        except (OSError, h11.ProtocolError) as exc:
            raise self._upstream_failed(exc) from exc

    def _from_upstream(self) -> object:
        try:
            event = _next_event(self.up, self.upstream)
        except (OSError, h11.ProtocolError) as exc:
            raise self._upstream_failed(exc) from exc
        if isinstance(event, h11.ConnectionClosed):
            raise self._upstream_failed(ConnectionError("connection closed"))
        return event

    def _upstream_failed(self, exc: BaseException) -> Exception:
        if self.responded:
            return ConnectionAbortedError(f"upstream failed mid-response: {exc}")
        detail = "timed out" if isinstance(exc, TimeoutError) else str(exc)
        return _Failed(502, "Bad Gateway", f"worktree-proxy: upstream error: {detail}\n")

    def run(self, request: h11.Request) -> None:
        self._to_upstream(h11.Request(method=request.method, target=request.target,
                                      headers=request.headers.raw_items()))
        if self.conn.client_is_waiting_for_100_continue:
            self._to_client(h11.InformationalResponse(status_code=100, headers=[]))
        while not isinstance(event := _next_event(self.conn, self.client), h11.EndOfMessage):
            if isinstance(event, h11.Data):
                self._to_upstream(event)
        self._to_upstream(h11.EndOfMessage(headers=event.headers.raw_items()))
        while True:
            reply = self._from_upstream()
            if isinstance(reply, h11.InformationalResponse):
                self._to_client(h11.InformationalResponse(
                    status_code=reply.status_code, reason=reply.reason,
                    headers=reply.headers.raw_items()))
            elif isinstance(reply, h11.Response):
                self.responded = True
                self._to_client(h11.Response(status_code=reply.status_code,
                                             reason=reply.reason,
                                             headers=reply.headers.raw_items()))
            elif isinstance(reply, h11.Data):
                self._to_client(h11.Data(data=reply.data))
            elif isinstance(reply, h11.EndOfMessage):
                self._to_client(h11.EndOfMessage(headers=reply.headers.raw_items()))
                return


def start_proxy(port: int = 0, table: ProxyTable | None = None, host: str = "127.0.0.1", *,
                timeout: float = DEFAULT_TIMEOUT,
                upstream_timeout: float = DEFAULT_UPSTREAM_TIMEOUT) -> ProxyServer:
    """Start a proxy over ``table`` (default: the process-wide :data:`proxy_table`).

    ``port=0`` lets the OS pick; read it from ``.port``. Call ``.close()`` when done.
    """
    return ProxyServer(table if table is not None else proxy_table, port=port, host=host,
                       timeout=timeout, upstream_timeout=upstream_timeout)
