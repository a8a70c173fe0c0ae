"""HTTP GET of an endpoint *as the host sees it*, without opening a port.

For a remote host the TCP connection is a ``direct-tcpip`` channel of the
host's existing SSH connection (what ``ssh -L`` uses): the server side
connects to ``host:port`` of the URL, so ``http://127.0.0.1:30000/metrics``
means the engine listening on the GPU host's loopback. For a local host it is
a plain TCP connection. HTTP/1.1 itself is spoken by ``h11`` (a maintained,
sans-I/O implementation), over whichever pair of streams we have.

One :class:`HttpGetter` keeps its connection alive between requests
(``Connection: keep-alive``), so a once-a-second scrape costs one request,
not a channel open + a TCP handshake each time; a connection the server
closed while idle is reopened once, transparently.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from typing import Protocol

import h11

from perftriage.core.http_limits import ENGINE_METRICS, BodyCap, HttpLimitError, HttpLimits
from perftriage.core.parse.http_url import BadUrl, HttpTarget, parse_http_url
from perftriage.transport.base import OTHER, REFUSED, TIMEOUT, TransportError

__all__ = ["BadUrl", "HttpGetter", "HttpResponse", "HttpTarget", "open_stream", "parse_http_url"]

READ_CHUNK = 64 * 1024
DEFAULT_MAX_BYTES = ENGINE_METRICS.max_bytes


@dataclass
class HttpResponse:
    status: int
    reason: str
    headers: dict[str, str]
    body: bytes


class StreamReader(Protocol):
    """What we read from: asyncio's StreamReader or asyncssh's SSHReader."""

    async def read(self, n: int = -1) -> bytes: ...


class StreamWriter(Protocol):
    """What we write to: asyncio's StreamWriter or asyncssh's SSHWriter."""

    def write(self, data: bytes) -> None: ...

    async def drain(self) -> None: ...

    def close(self) -> None: ...

    async def wait_closed(self) -> None: ...


async def open_stream(transport, host: str, port: int) -> tuple[StreamReader, StreamWriter]:
    """(reader, writer) to ``host:port`` as seen from ``transport``'s host."""
    connection = getattr(transport, "connection", None)
    where = f"{host}:{port}"
    if connection is None:  # the local transport: a plain socket
        try:
            return await asyncio.open_connection(host, port)
        except ConnectionRefusedError:
            raise TransportError(f"connection refused by {where}", REFUSED,
                                 transport.name) from None
        except OSError as exc:
            raise TransportError(f"cannot connect to {where}: {exc.strerror or exc}", OTHER,
                                 transport.name) from None
    import asyncssh  # noqa: PLC0415 - only for SSH transports

    conn = await connection()  # TransportError when the host is unreachable
    try:
        return await conn.open_connection(host, port)
    except asyncssh.ChannelOpenError as exc:
        kind = REFUSED if exc.code == asyncssh.OPEN_CONNECT_FAILED else OTHER
        raise TransportError(f"{where} unreachable from {transport.name}: {exc.reason}", kind,
                             transport.name) from None
    except (asyncssh.Error, OSError) as exc:
        raise TransportError(f"SSH channel to {where} failed: {exc}", OTHER,
                             transport.name) from None


class HttpGetter:
    """GETs one URL through one transport, again and again, on one connection."""

    def __init__(self, transport, url: str, *, timeout: float = ENGINE_METRICS.deadline_s,
                 max_bytes: int = DEFAULT_MAX_BYTES, limits: HttpLimits | None = None) -> None:
        """``timeout`` is the overall deadline of one ``get`` (both retries
        included); ``limits`` replaces ``timeout`` and ``max_bytes``."""
        self.transport = transport
        self.target = parse_http_url(url)
        self.limits = limits or HttpLimits(max_bytes, timeout)
        self.timeout = self.limits.deadline_s
        self.max_bytes = self.limits.max_bytes
        self._reader: StreamReader | None = None
        self._writer: StreamWriter | None = None
        self._h11: h11.Connection | None = None

    @property
    def name(self) -> str:
        return getattr(self.transport, "name", "?")

    async def close(self) -> None:
        writer, self._writer, self._reader, self._h11 = self._writer, None, None, None
        if writer is not None:
            with contextlib.suppress(Exception):
                writer.close()
            with contextlib.suppress(Exception):
                async with asyncio.timeout(1.0):
                    await writer.wait_closed()

    async def get(self) -> HttpResponse:
        try:
            async with asyncio.timeout(self.timeout):
                reused = self._writer is not None
                try:
                    return await self._exchange()
                except (h11.RemoteProtocolError, ConnectionError, ClosedEarly):
                    await self.close()
                    if not reused:
                        raise
                return await self._exchange()  # the idle connection was closed: once more
        except TimeoutError:
            await self.close()
            raise TransportError(HttpLimitError(self.target.url, "deadline", self.limits).reason,
                                 TIMEOUT, self.name) from None
        except HttpLimitError as exc:
            await self.close()
            raise TransportError(exc.reason, OTHER, self.name) from None
        except ClosedEarly:
            await self.close()
            raise TransportError(f"{self.target.url}: connection closed before a response",
                                 OTHER, self.name) from None
        except h11.RemoteProtocolError as exc:
            await self.close()
            raise TransportError(f"{self.target.url}: not an HTTP response ({exc})", OTHER,
                                 self.name) from None
        except ConnectionError as exc:
            await self.close()
            raise TransportError(f"{self.target.url}: connection lost ({exc})", OTHER,
                                 self.name) from None
        except TransportError:
            await self.close()
            raise
        except Exception as exc:  # noqa: BLE001 - e.g. asyncssh's channel errors: one line
            await self.close()
            text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise TransportError(f"{self.target.url}: connection failed ({text})", OTHER,
                                 self.name) from None
        except BaseException:
            await self.close()
            raise

    async def _exchange(self) -> HttpResponse:
        conn, reader, writer = self._h11, self._reader, self._writer
        if conn is None or reader is None or writer is None:  # all three or none: see close()
            reader, writer = await open_stream(self.transport, self.target.host, self.target.port)
            conn = h11.Connection(h11.CLIENT)
            self._reader, self._writer, self._h11 = reader, writer, conn
        request = h11.Request(method="GET", target=self.target.target, headers=[
            ("Host", self.target.host_header), ("User-Agent", "perftriage"),
            ("Accept", "text/plain"), ("Connection", "keep-alive")])
        writer.write(conn.send(request) + conn.send(h11.EndOfMessage()))
        await writer.drain()
        response, body = await read_response(conn, reader, BodyCap(self.target.url, self.limits))
        if conn.our_state is h11.DONE and conn.their_state is h11.DONE:
            conn.start_next_cycle()
        else:
            await self.close()
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in response.headers}
        return HttpResponse(response.status_code, response.reason.decode("latin-1"), headers,
                            body)


class ClosedEarly(Exception):
    """The server closed the connection before answering."""


async def read_response(conn: h11.Connection, reader: StreamReader,
                        body: BodyCap) -> tuple[h11.Response, bytes]:
    """One response read off ``reader`` through ``conn``, its body under the
    size cap (HttpLimitError past it); :class:`ClosedEarly` when the server
    closes before a response."""
    response: h11.Response | None = None
    while True:
        event = conn.next_event()
        if event is h11.NEED_DATA:
            data = await reader.read(READ_CHUNK)
            if not data and response is None:
                raise ClosedEarly
            conn.receive_data(data)
        elif isinstance(event, h11.Response):
            response = event
        elif isinstance(event, h11.Data):
            body.add(event.data)
        elif isinstance(event, (h11.EndOfMessage, h11.ConnectionClosed)):
            break
    if response is None:
        raise ClosedEarly
    return response, body.body()
