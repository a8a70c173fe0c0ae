"""A real HTTP server on 127.0.0.1 serving a /metrics page that tests change.

Stdlib ``http.server`` speaking HTTP/1.1 with keep-alive (as uvicorn does),
in a thread; it counts requests and TCP connections so tests can check that
the scraper reuses its connection.
"""

from __future__ import annotations

import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class MetricsServer:
    def __init__(self, text: str = "", status: int = 200,
                 content_type: str = "text/plain; version=0.0.4; charset=utf-8",
                 port: int = 0, pages: list[str] | None = None) -> None:
        self.text = text
        self.pages = list(pages or [])  # served in turn (the last one again and again)
        self.status = status
        self.content_type = content_type
        self.requests = 0
        self.connections = 0
        self.paths: list[str] = []
        self.host_headers: list[str] = []
        self.sockets: list = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                owner.connections += 1
                owner.sockets.append(self.connection)

            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                owner.requests += 1
                owner.paths.append(self.path)
                owner.host_headers.append(self.headers.get("Host", ""))
                if owner.pages:
                    owner.text = owner.pages.pop(0) if len(owner.pages) > 1 else owner.pages[0]
                body = owner.text.encode()
                self.send_response(owner.status)
                self.send_header("Content-Type", owner.content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/metrics"

    def start(self) -> MetricsServer:
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        for sock in self.sockets:  # keep-alive connections die with the server
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        if self.thread is not None:
            self.thread.join(5)

    def __enter__(self) -> MetricsServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
