"""Serving one page on 127.0.0.1 until interrupted (``tavernlab view`` without ``-o``)."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Callable


class PageServer:
    """An HTTP server on ``127.0.0.1`` (a free port) that answers every ``GET`` with one
    page. :meth:`close` stops it."""

    def __init__(self, page: str, *, port: int = 0) -> None:
        body = page.encode("utf-8")

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                return

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        name="tavernlab-view", daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        """Where the page is served."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/"

    def close(self) -> None:
        """Stop serving and release the port."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


def serve_until_interrupted(page: str, announce: Callable[[str], None]) -> None:
    """Serve ``page``, tell ``announce`` the URL, and serve until Ctrl-C (the
    ``KeyboardInterrupt`` goes on to the caller once the server stopped)."""
    server = PageServer(page)
    try:
        announce(server.url)
        threading.Event().wait()
    finally:
        server.close()
