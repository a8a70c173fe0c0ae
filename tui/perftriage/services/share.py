"""``perftriage share NAME``: ``perftriage watch NAME`` in a browser.

textual-serve runs a Textual app behind a web page, one app process per
visitor, and has no authentication of its own. So this server

- binds 127.0.0.1 only (a colleague comes in through ``ssh -L``), on a
  random free port unless one is given (the socket is bound first and
  handed to aiohttp: no window in which another process takes the port);
- asks for a 128-bit token (``secrets.token_urlsafe(16)``) on every path:
  in the printed URL (``?token=...``) the first time, then in an HttpOnly,
  SameSite=Strict cookie, so the page's own requests (static files, the
  websocket) carry it; any request without it gets 403, whatever its path;
- serves one fixed command, ``perftriage watch NAME``: the read-only
  player of the (redacted at recording) transcript. No cockpit, no shell,
  no download route, and nothing from the request reaches the command.
"""

from __future__ import annotations

import hmac
import re
import secrets
import shlex
import socket
import sys
from dataclasses import dataclass
from pathlib import Path

import aiohttp_jinja2
import jinja2
from aiohttp import web
from textual_serve.server import Server

BIND_HOST = "127.0.0.1"
COOKIE = "perftriage_share"
TOKEN_BYTES = 16  # 128 bits
_HOST = re.compile(r"(?:127\.0\.0\.1|localhost|\[::1\]):[0-9]{1,5}")


@dataclass(frozen=True)
class Share:
    url: str  # with the token: what to open
    port: int
    token: str

    def ssh_line(self, server_host: str = "THIS-HOST") -> str:
        """What a colleague runs on their machine to reach it."""
        return f"ssh -N -L {self.port}:{BIND_HOST}:{self.port} {server_host}"


def watch_command(name: str, sessions_dir: Path, config_path: Path | None = None) -> str:
    """The one command every visitor gets: the read-only watcher of ``name``."""
    argv = [sys.executable, "-m", "perftriage", "--sessions-dir", str(sessions_dir)]
    if config_path is not None:
        argv += ["--config", str(config_path)]
    argv += ["watch", name]
    return shlex.join(argv)


def bind(port: int | None) -> socket.socket:
    """A listening socket on 127.0.0.1 (``port`` 0 or None: a free one)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((BIND_HOST, port or 0))
    sock.listen(128)
    return sock


class ShareServer(Server):
    """textual-serve's server with a token in front of every path."""

    def __init__(self, command: str, sock: socket.socket, *, title: str,
                 token: str | None = None) -> None:
        port = sock.getsockname()[1]
        super().__init__(command, host=BIND_HOST, port=port, title=title)
        self.sock = sock
        self.token = token or secrets.token_urlsafe(TOKEN_BYTES)
        self.share = Share(url=f"http://{BIND_HOST}:{port}/?token={self.token}", port=port,
                           token=self.token)

    def _allowed(self, request: web.Request) -> bool:
        given = request.query.get("token") or request.cookies.get(COOKIE) or ""
        return hmac.compare_digest(given.encode(), self.token.encode())

    @web.middleware
    async def _require_token(self, request: web.Request, handler):
        if not self._allowed(request):
            return web.Response(status=403, text="403: this share needs its token (see the URL "
                                                 "perftriage share printed)\n")
        if request.query.get("token") is not None and request.path == "/":
            # keep the token out of the address bar and history: a cookie from now on
            response = web.HTTPFound("/")
            response.set_cookie(COOKIE, self.token, httponly=True, samesite="Strict", path="/")
            raise response
        response = await handler(request)
        return response

    async def _make_app(self) -> web.Application:
        # textual-serve's routes less its download route (the player offers
        # none), and the token in front of all of them
        app = web.Application(middlewares=[self._require_token])
        aiohttp_jinja2.setup(app, loader=jinja2.FileSystemLoader(self.templates_path))
        app.add_routes([
            web.get("/", self.handle_index, name="index"),
            web.get("/ws", self.handle_websocket, name="websocket"),
            web.static("/static", self.statics_path, show_index=False, name="static"),
        ])
        return app

    async def handle_index(self, request: web.Request):
        # the page names its websocket by absolute URL: the address the
        # browser used (a colleague's ssh -L may use another local port)
        if _HOST.fullmatch(request.host or ""):
            self.public_url = f"http://{request.host}"
        return await super().handle_index(request)

    async def on_startup(self, app: web.Application) -> None:
        pass  # the command prints its own lines (textual-serve's logo would print the token)

    async def start(self) -> web.AppRunner:
        """Serve on the bound socket; stop with ``await runner.cleanup()``."""
        self.initialize_logging()
        runner = web.AppRunner(await self._make_app(), handle_signals=False, access_log=None)
        await runner.setup()
        await web.SockSite(runner, self.sock).start()
        return runner
