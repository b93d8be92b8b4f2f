"""Minimal HTTP/1.1 and WebSocket clients over raw sockets, so tests control every header."""

from __future__ import annotations

import base64
import json
import os
import socket
import struct
from typing import Any


def recv_until(sock: socket.socket, marker: bytes) -> bytes:
    data = b""
    while marker not in data:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    return data


def http_request(port: int, host: str | None, method: str = "GET", path: str = "/",
                 body: bytes = b"", headers: dict[str, str] | None = None,
                 version: str = "HTTP/1.1") -> tuple[int, dict[str, str], bytes]:
    """Send one request with ``Connection: close`` and read the whole response."""
    lines = [f"{method} {path} {version}"]
    if host is not None:
        lines.append(f"Host: {host}")
    for name, value in (headers or {}).items():
        lines.append(f"{name}: {value}")
    if body:
        lines.append(f"Content-Length: {len(body)}")
    lines.append("Connection: close")
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
        data = b""
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    parsed = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        parsed[name.strip().lower()] = value.strip()
    if parsed.get("transfer-encoding") == "chunked":
        rest = dechunk(rest)
    return int(status_line.split(" ")[1]), parsed, rest


def dechunk(data: bytes) -> bytes:
    out = b""
    while data:
        size_line, _, data = data.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0:
            break
        out += data[:size]
        data = data[size + 2:]
    return out


def get_json(port: int, host: str) -> Any:
    status, _, body = http_request(port, host)
    assert status == 200, body
    return json.loads(body)


def websocket_echo(port: int, host: str, message: str) -> tuple[bytes, str]:
    """Open a WebSocket through ``port`` with ``Host: host``, send ``message``, return
    (the handshake status line, the echoed text)."""
    key = base64.b64encode(os.urandom(16)).decode()
    request = (f"GET /socket HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\n"
               f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
               "Sec-WebSocket-Version: 13\r\n\r\n")
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(request.encode())
        head = recv_until(sock, b"\r\n\r\n")
        status_line = head.split(b"\r\n", 1)[0]
        if b" 101 " not in status_line:
            return status_line, ""
        leftover = head.split(b"\r\n\r\n", 1)[1]
        payload = message.encode()
        mask = os.urandom(4)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        sock.sendall(bytes([0x81, 0x80 | len(payload)]) + mask + masked)
        data = leftover
        while len(data) < 2 or len(data) < 2 + (data[1] & 0x7F):
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
        length = data[1] & 0x7F
        assert length < 126
        echoed = data[2:2 + length].decode()
        sock.sendall(bytes([0x88, 0x80]) + struct.pack(">I", 0))
        return status_line, echoed


def wait_listening(port: int) -> None:
    """Wait (bounded) until something accepts connections on 127.0.0.1:<port>."""
    import time

    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            assert time.monotonic() < deadline, f"nothing listens on {port}"
            time.sleep(0.02)
