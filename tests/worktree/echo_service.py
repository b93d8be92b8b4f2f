"""A tiny HTTP + WebSocket echo service used behind the worktree proxy in tests and the demo.

``GET`` answers JSON ``{"host": <Host header>, "path", "env": {AGENTPROTO_* variables}}``;
``POST`` answers ``echo:<body>`` chunked (the request body may be sent with a length or
chunked); a WebSocket upgrade is accepted and every text frame is echoed back. The port comes
from ``AGENTPROTO_PORT`` (or the first argument). Standard library only.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import socket
import struct
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


def read_frame(sock: socket.socket) -> tuple[int, bytes] | None:
    def exact(size: int) -> bytes:
        data = b""
        while len(data) < size:
            chunk = sock.recv(size - len(data))
            if not chunk:
                raise ConnectionError
            data += chunk
        return data

    try:
        first, second = exact(2)
        length = second & 0x7F
        if length == 126:
            length = struct.unpack(">H", exact(2))[0]
        elif length == 127:
            length = struct.unpack(">Q", exact(8))[0]
        mask = exact(4) if second & 0x80 else b""
        payload = exact(length)
    except (ConnectionError, OSError):
        return None
    if mask:
        payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    return first & 0x0F, payload


def frame(opcode: int, payload: bytes) -> bytes:
    header = bytes([0x80 | opcode])
    if len(payload) < 126:
        header += bytes([len(payload)])
    else:
        header += bytes([126]) + struct.pack(">H", len(payload))
    return header + payload


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        if self.headers.get("Upgrade", "").lower() == "websocket":
            self.websocket()
            return
        body = json.dumps({
            "host": self.headers.get("Host"),
            "path": self.path,
            "env": {k: v for k, v in os.environ.items() if k.startswith("AGENTPROTO_")},
        }).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() != "chunked":
            return self.rfile.read(int(self.headers.get("Content-Length", "0")))
        body = b""
        while True:
            size = int(self.rfile.readline().split(b";")[0].strip(), 16)
            if size == 0:
                while self.rfile.readline() not in (b"\r\n", b""):
                    pass  # trailers
                return body
            body += self.rfile.read(size)
            self.rfile.readline()

    def do_POST(self) -> None:
        body = self.read_body()
        self.send_response(200)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for piece in (b"echo:", body):
            self.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
        self.wfile.write(b"0\r\n\r\n")

    def websocket(self) -> None:
        key = self.headers["Sec-WebSocket-Key"]
        accept = base64.b64encode(hashlib.sha1((key + GUID).encode()).digest()).decode()
        self.send_response(101, "Switching Protocols")
        self.send_header("Upgrade", "websocket")
        self.send_header("Connection", "Upgrade")
        self.send_header("Sec-WebSocket-Accept", accept)
        self.end_headers()
        self.wfile.flush()
        sock = self.connection
        while True:
            received = read_frame(sock)
            if received is None or received[0] == 0x8:
                break
            opcode, payload = received
            if opcode in (0x1, 0x2):
                sock.sendall(frame(opcode, payload))
        self.close_connection = True


def main() -> None:
    port = int(os.environ.get("AGENTPROTO_PORT") or sys.argv[1])
    ThreadingHTTPServer.request_queue_size = 512  # bursts of concurrent proxied requests
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    server.serve_forever()


if __name__ == "__main__":
    main()
