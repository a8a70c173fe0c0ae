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
  no download route, and nothing from the request reaches the command;
- answers only requests whose ``Host`` is the loopback address it is bound
  to (``127.0.0.1`` or ``localhost``, any port: a colleague's ``ssh -L`` may
  use another local port), so a page whose own name resolves to 127.0.0.1
  (DNS rebinding) gets 403; a request that names an ``Origin`` must name
  this same address, and the websocket must name one (a page elsewhere
  cannot drive a visitor's app with the visitor's cookie);
- runs at most ``max_visitors`` apps at once (one per open websocket): the
  next visitor gets a page that says the cap and to try again later (503),
  and a visitor's app and everything it started end within 2 s of its
  websocket closing (:mod:`perftriage.services.investigation.share_visitor`);
- closes a visitor from whom no whole websocket frame has come for
  ``idle_s`` (a browser answers every ping, sent each ``heartbeat_s`` of
  quiet, with a pong: a page that only watches is never idle; one that
  drips a frame that never ends is, and aiohttp's own heartbeat is reset by
  any byte);
- keeps the connections that have not shown the token below the open-file
  limit (``max_pending``, the oldest closed first when more come) and
  closes one whose request is not whole within ``header_timeout_s``, so
  half-sent requests never use up the files a visitor needs to connect.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import re
import resource
import secrets
import shlex
import socket
import sys
from dataclasses import dataclass
from pathlib import Path

import aiohttp_jinja2
import jinja2
from aiohttp import web
from textual_serve.server import Server, to_int

from perftriage.services.investigation.share_visitor import VisitorApp

BIND_HOST = "127.0.0.1"
COOKIE = "perftriage_share"
TOKEN_BYTES = 16  # 128 bits
MAX_VISITORS = 4  # apps at once (each a Textual process, ~40 MiB)
HEARTBEAT_S = 10.0  # a visitor gone without closing (network lost) is noticed by then
IDLE_S = 30.0  # no whole frame from a visitor (not even a pong) for this long: closed
HEADER_TIMEOUT_S = 15.0  # a connection's request not whole by then (or idle between): closed
MAX_PENDING = 256  # connections without the token at once, at most (fewer under a low limit)
# the names this share answers to: its bound loopback address, any port (ssh -L)
_HOST = re.compile(r"(?:127\.0\.0\.1|localhost):[0-9]{1,5}")
log = logging.getLogger("perftriage.share")


@dataclass(frozen=True)
class Share:
    url: str  # with the token: what to open
    port: int
    token: str

    def ssh_line(self, server_host: str = "THIS-HOST") -> str:
        """What a colleague runs on their machine to reach it."""
        return f"ssh -N -L {self.port}:{BIND_HOST}:{self.port} {server_host}"


def watch_command(name: str, sessions_dir: Path, config_path: Path | None = None) -> list[str]:
    """The one command every visitor gets: the read-only watcher of ``name``
    (an argv, run without a shell)."""
    argv = [sys.executable, "-m", "perftriage", "--sessions-dir", str(sessions_dir)]
    if config_path is not None:
        argv += ["--config", str(config_path)]
    argv += ["watch", name]
    return argv


def bind(port: int | None) -> socket.socket:
    """A listening socket on 127.0.0.1 (``port`` 0 or None: a free one)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((BIND_HOST, port or 0))
    sock.listen(128)
    return sock


class ShareServer(Server):
    """textual-serve's server with a token in front of every path."""

    def __init__(self, argv: list[str], sock: socket.socket, *, title: str,
                 token: str | None = None, max_visitors: int = MAX_VISITORS,
                 max_pending: int | None = None, header_timeout_s: float = HEADER_TIMEOUT_S,
                 idle_s: float = IDLE_S, heartbeat_s: float = HEARTBEAT_S) -> None:
        port = sock.getsockname()[1]
        super().__init__(shlex.join(argv), host=BIND_HOST, port=port, title=title)
        self.argv = argv
        self.max_visitors = max_visitors
        self.max_pending = max_pending or pending_cap()
        self.header_timeout_s = header_timeout_s
        self.idle_s, self.heartbeat_s = idle_s, heartbeat_s
        # connections that have not shown the token yet (oldest first): handler -> transport
        self._pending: dict[object, asyncio.Transport] = {}
        self.visitors: set[VisitorApp] = set()  # one per open websocket
        self._slots = 0  # websockets being served (their apps count until ended)
        self.sock = sock
        self.token = token or secrets.token_urlsafe(TOKEN_BYTES)
        self.share = Share(url=f"http://{BIND_HOST}:{port}/?token={self.token}", port=port,
                           token=self.token)

    def _allowed(self, request: web.Request) -> bool:
        given = request.query.get("token") or request.cookies.get(COOKIE) or ""
        return hmac.compare_digest(given.encode(), self.token.encode())

    @web.middleware
    async def _require_token(self, request: web.Request, handler):
        if not _HOST.fullmatch(request.headers.get("Host", "")):
            return web.Response(status=403, text=f"403: this share answers only to "
                                                 f"{BIND_HOST} or localhost\n")
        origin = request.headers.get("Origin")
        if (origin is not None or request.path == "/ws") and origin != f"http://{request.host}":
            return web.Response(status=403, text="403: a page from another origin cannot "
                                                 "use this share\n")
        if not self._allowed(request):
            return web.Response(status=403, text="403: this share needs its token (see the URL "
                                                 "perftriage share printed)\n")
        self._pending.pop(request.protocol, None)  # shown the token: no longer capped
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
        app.on_shutdown.append(self.on_shutdown)
        aiohttp_jinja2.setup(app, loader=jinja2.FileSystemLoader(self.templates_path))
        app.add_routes([
            web.get("/", self.handle_index, name="index"),
            web.get("/ws", self.visitor, name="websocket"),
            web.static("/static", self.statics_path, show_index=False, name="static"),
        ])
        return app

    async def handle_index(self, request: web.Request):
        if self._slots >= self.max_visitors:
            return self._full()
        # the page names its websocket by absolute URL: the address the
        # browser used (a colleague's ssh -L may use another local port)
        self.public_url = f"http://{request.host}"
        return await super().handle_index(request)

    def _full(self) -> web.Response:
        n = self.max_visitors
        text = (f"{n} visitor{'s are' if n != 1 else ' is'} watching this share already: "
                f"it serves at most {n} at once (perftriage share --max-visitors). "
                "Try again when one of them closes their page.")
        page = (f"<!doctype html><title>perftriage share: full</title>"
                f"<body style='font-family:sans-serif;margin:2em'><h1>Share full</h1>"
                f"<p>{text}</p></body>")
        return web.Response(status=503, text=page, content_type="text/html",
                            headers={"Retry-After": "30"})

    async def visitor(self, request: web.Request) -> web.StreamResponse:
        """One visitor: its app runs while its websocket is open and ends
        (bounded, with all it started) when the websocket closes."""
        if self._slots >= self.max_visitors:
            return self._full()
        self._slots += 1
        app: VisitorApp | None = None
        # receive_timeout: each wait for a whole frame (a pong counts) ends by then
        websocket = web.WebSocketResponse(heartbeat=self.heartbeat_s, receive_timeout=self.idle_s)
        try:
            await websocket.prepare(request)
            app = VisitorApp(self.argv, write_bytes=websocket.send_bytes,
                             write_str=websocket.send_str, close=websocket.close,
                             download_manager=self.download_manager)
            self.visitors.add(app)
            await app.start(to_int(request.query.get("width", "80"), 80),
                            to_int(request.query.get("height", "24"), 24))
            await self._process_messages(websocket, app)
        except asyncio.CancelledError:  # the server stops
            raise
        except asyncio.TimeoutError:  # no whole frame for idle_s: a slow or stalled visitor
            log.info("visitor closed: no whole websocket frame in %.0f s", self.idle_s)
        except Exception:  # a malformed message from the page ends this visitor only
            log.exception("visitor websocket")
        finally:
            try:
                if app is not None:
                    await asyncio.shield(app.end())
            finally:
                self.visitors.discard(app)  # type: ignore[arg-type]
                self._slots -= 1
                if not websocket.closed:
                    await websocket.close()
        return websocket

    async def on_startup(self, app: web.Application) -> None:
        pass  # the command prints its own lines (textual-serve's logo would print the token)

    async def on_shutdown(self, app: web.Application) -> None:
        await asyncio.gather(*(visitor.end() for visitor in list(self.visitors)))

    async def start(self) -> web.AppRunner:
        """Serve on the bound socket; stop with ``await runner.cleanup()``."""
        self.initialize_logging()
        # keepalive_timeout is aiohttp's timer from a connection's start (and after each
        # response): a request not whole by then is closed (a half-sent one)
        runner = web.AppRunner(await self._make_app(), handle_signals=False, access_log=None,
                               keepalive_timeout=self.header_timeout_s)
        await runner.setup()
        self._watch_connections(runner.server)
        await web.SockSite(runner, self.sock).start()
        return runner

    def _watch_connections(self, server) -> None:
        """Count the connections that have not shown the token (aiohttp's
        server tells its own hooks of each one opened and lost)."""
        made, lost = server.connection_made, server.connection_lost

        def connection_made(handler, transport) -> None:
            made(handler, transport)
            self._pending[handler] = transport
            while len(self._pending) > self.max_pending:  # the oldest goes
                oldest = next(iter(self._pending))
                self._pending.pop(oldest).abort()

        def connection_lost(handler, exc=None) -> None:
            self._pending.pop(handler, None)
            lost(handler, exc)

        server.connection_made, server.connection_lost = connection_made, connection_lost


def pending_cap() -> int:
    """:data:`MAX_PENDING`, or a quarter of the open-file limit when that is lower
    (the rest for the visitors: their connections, their apps' pipes)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return MAX_PENDING
    return max(8, min(MAX_PENDING, soft // 4))
