"""A hostile HTTP server on 127.0.0.1, for the read-policy tests.

Paths: ``/endless`` sends a body that never ends (no Content-Length,
64 KiB chunks as fast as they go), ``/drip`` sends one byte a second,
``/big/N`` sends N bytes at once with a Content-Length, ``/silent`` accepts
and never answers. Anything else is a small 200. Stop it with ``stop()``;
threads are daemons, so a slow client never blocks the test's exit.
"""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        path = self.path.split("?")[0]
        try:
            if path.startswith("/endless"):
                self._head()
                chunk = b"x" * 65536
                while not self.server.stopping:  # type: ignore[attr-defined]
                    self.wfile.write(chunk)
            elif path.startswith("/drip"):
                self._head()
                while not self.server.stopping:  # type: ignore[attr-defined]
                    self.wfile.write(b"#")
                    self.wfile.flush()
                    time.sleep(1.0)
            elif path.startswith("/big/"):
                n = int(path.split("/")[2])
                self._head(n)
                block = b"y" * min(n, 1 << 20)
                left = n
                while left > 0:
                    self.wfile.write(block[:left])
                    left -= len(block)
            elif path.startswith("/silent"):
                while not self.server.stopping:  # type: ignore[attr-defined]
                    time.sleep(0.1)
            else:
                self._head(2)
                self.wfile.write(b"ok")
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _head(self, length: int | None = None) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        if length is not None:
            self.send_header("Content-Length", str(length))
        self.end_headers()

    def log_message(self, *args) -> None:
        pass


class HostileHttp:
    def __init__(self) -> None:
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.server.daemon_threads = True
        self.server.stopping = False  # type: ignore[attr-defined]
        self.port = self.server.server_address[1]
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def stop(self) -> None:
        self.server.stopping = True  # type: ignore[attr-defined]
        self.server.shutdown()
        self.server.server_close()
