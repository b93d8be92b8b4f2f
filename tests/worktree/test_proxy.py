"""The reverse proxy on h11: framing errors, chunked bodies, pipelining, slow
clients, WebSockets and a burst of concurrent requests, all over real sockets on 127.0.0.1."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tavernlab.worktree import ProxyServer
from tavernlab.worktree._ports import ephemeral_port
from tavernlab.worktree._proxy import start_proxy
from tavernlab.worktree._proxy_table import ProxyTable

from .netclient import dechunk, http_request, recv_until, wait_listening, websocket_echo

ECHO = Path(__file__).with_name("echo_service.py")
HOST = "web--app.localhost"


@pytest.fixture
def echo_port() -> Iterator[int]:
    port = ephemeral_port()
    child = subprocess.Popen([sys.executable, str(ECHO), str(port)])
    try:
        wait_listening(port)
        yield port
    finally:
        child.kill()
        child.wait()


@pytest.fixture
def table(echo_port: int) -> ProxyTable:
    routes = ProxyTable()
    routes.set(HOST, echo_port)
    return routes


@pytest.fixture
def proxy(table: ProxyTable) -> Iterator[ProxyServer]:
    server = start_proxy(table=table)
    yield server
    server.close()


def raw_exchange(port: int, data: bytes, until: bytes = b"") -> bytes:
    """Send raw bytes, half-close, read until the proxy closes (or ``until`` appears)."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(data)
        if not until:
            sock.shutdown(socket.SHUT_WR)
            return recv_until(sock, b"\0never\0")
        return recv_until(sock, until)


def test_conflicting_content_length_is_400(proxy: ProxyServer) -> None:
    reply = raw_exchange(proxy.port, f"POST / HTTP/1.1\r\nHost: {HOST}\r\nContent-Length: 3\r\n"
                         "Content-Length: 5\r\n\r\nabcde".encode())
    head, _, body = reply.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400 Bad Request\r\n")
    assert body == b"worktree-proxy: bad request: conflicting Content-Length headers\n"


@pytest.mark.parametrize("order", ["length first", "encoding first"])
def test_content_length_with_transfer_encoding_is_400(proxy: ProxyServer, order: str) -> None:
    framing = ["Content-Length: 4", "Transfer-Encoding: chunked"]
    if order == "encoding first":
        framing.reverse()
    reply = raw_exchange(proxy.port, (f"POST / HTTP/1.1\r\nHost: {HOST}\r\n"
                                      + "".join(f"{line}\r\n" for line in framing)
                                      + "\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\n"
                                      f"Host: {HOST}\r\n\r\n").encode())
    head, _, body = reply.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400 Bad Request\r\n")
    assert body == (b"worktree-proxy: bad request: both Content-Length and "
                    b"Transfer-Encoding\n")
    assert reply.count(b"HTTP/1.1") == 1  # the connection closed: nothing else was answered


def test_malformed_request_line_is_400(proxy: ProxyServer) -> None:
    reply = raw_exchange(proxy.port, b"NOT HTTP AT ALL\r\n\r\n")
    assert reply.startswith(b"HTTP/1.1 400 Bad Request\r\n")
    assert b"worktree-proxy: bad request: " in reply


def test_chunked_request_and_response_bodies(proxy: ProxyServer) -> None:
    request = (f"POST /c HTTP/1.1\r\nHost: {HOST}\r\nTransfer-Encoding: chunked\r\n"
               "Connection: close\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n").encode()
    reply = raw_exchange(proxy.port, request)
    head, _, body = reply.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 OK\r\n")
    assert b"transfer-encoding: chunked" in head.lower()
    assert dechunk(body) == b"echo:hello world"


def test_pipelined_requests_are_answered_in_order(proxy: ProxyServer, table: ProxyTable,
                                                  echo_port: int) -> None:
    table.set("api--app.localhost", echo_port)
    batch = b"".join(
        f"GET /{index} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode()
        for index, host in enumerate([HOST, "api--app.localhost", HOST]))
    batch += f"GET /last HTTP/1.1\r\nHost: {HOST}\r\nConnection: close\r\n\r\n".encode()
    reply = raw_exchange(proxy.port, batch)
    assert reply.count(b"HTTP/1.1 200 OK\r\n") == 4
    paths = [part.split(b'"path": "')[1].split(b'"')[0] for part in reply.split(b'"host"')[1:]]
    assert paths == [b"/0", b"/1", b"/2", b"/last"]
    assert b'"host": "api--app.localhost"' in reply


def test_slow_client_gets_408_and_others_are_served(table: ProxyTable) -> None:
    with start_proxy(table=table, timeout=0.5) as proxy, \
            socket.create_connection(("127.0.0.1", proxy.port), timeout=30) as slow:
        slow.sendall(f"GET / HTTP/1.1\r\nHost: {HOST}\r\nX-Half".encode())  # then stalls
        code, _, _ = http_request(proxy.port, HOST)  # served while the slow one waits
        assert code == 200
        reply = recv_until(slow, b"\0never\0")
        assert reply.startswith(b"HTTP/1.1 408 Request Timeout\r\n")
        assert reply.endswith(b"worktree-proxy: request timed out\n")
        idle = socket.create_connection(("127.0.0.1", proxy.port), timeout=30)
        assert idle.recv(1024) == b""  # an idle connection is simply closed
        idle.close()


def test_stalled_service_gets_502(tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as mute:  # accepts, never answers
        routes = ProxyTable()
        routes.set("mute.localhost", mute.getsockname()[1])
        with start_proxy(table=routes, upstream_timeout=0.5) as proxy:
            code, _, body = http_request(proxy.port, "mute.localhost")
    assert code == 502
    assert body == b"worktree-proxy: upstream error: timed out\n"


def test_expect_100_continue(proxy: ProxyServer) -> None:
    with socket.create_connection(("127.0.0.1", proxy.port), timeout=30) as sock:
        sock.sendall(f"POST / HTTP/1.1\r\nHost: {HOST}\r\nContent-Length: 2\r\n"
                     "Expect: 100-continue\r\nConnection: close\r\n\r\n".encode())
        assert recv_until(sock, b"\r\n\r\n").startswith(b"HTTP/1.1 100 ")
        sock.sendall(b"ok")
        reply = recv_until(sock, b"\0never\0")
    while reply.startswith(b"HTTP/1.1 100 "):  # the service's own 100 is relayed as well
        reply = reply.split(b"\r\n\r\n", 1)[1]
    head, _, body = reply.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 ") and dechunk(body) == b"echo:ok"


def test_websocket_echo_through_a_raw_tunnel(proxy: ProxyServer) -> None:
    status_line, echoed = websocket_echo(proxy.port, HOST, "ping")
    assert b" 101 " in status_line and echoed == "ping"
    status_line, _ = websocket_echo(proxy.port, "nobody.localhost", "ping")
    assert status_line == b"HTTP/1.1 502 Bad Gateway"


def test_header_names_reach_the_service_unchanged(proxy: ProxyServer) -> None:
    code, _, body = http_request(proxy.port, HOST, headers={"X-MiXeD-Case": "1"})
    assert code == 200 and b'"host": "web--app.localhost"' in body


def test_two_hundred_concurrent_requests_none_lost(proxy: ProxyServer) -> None:
    def one(index: int) -> tuple[int, bytes]:
        code, _, body = http_request(proxy.port, HOST, path=f"/req-{index}")
        return code, body

    with ThreadPoolExecutor(max_workers=200) as pool:
        answers = list(pool.map(one, range(200)))
    assert [code for code, _ in answers] == [200] * 200
    assert all(f'"path": "/req-{index}"'.encode() in body
               for index, (_, body) in enumerate(answers))


def test_a_head_that_never_ends_is_431(proxy: ProxyServer) -> None:
    with socket.create_connection(("127.0.0.1", proxy.port), timeout=30) as sock:
        sock.sendall(f"GET / HTTP/1.1\r\nHost: {HOST}\r\nX-Big: ".encode() + b"a" * 70_000)
        reply = recv_until(sock, b"\0never\0")
    assert reply.startswith(b"HTTP/1.1 431 Request Header Fields Too Large\r\n")
