"""One bounded HTTP request (GET or POST with a JSON body) to a URL as the
host sees it: through the host's SSH connection (``direct-tcpip``) or a
plain socket for the local host, HTTP/1.1 by h11, ``Connection: close``.

Bounded on purpose: the whole exchange (connect, send, read) runs under one
deadline, and a body past ``max_bytes`` is refused, so a wedged or hostile
endpoint can neither hang a capture nor fill memory. Kept to this one
function so a shared HTTP policy can replace it in one place.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from urllib.parse import urlsplit, urlunsplit

import h11

from perftriage.transport.base import OTHER, TIMEOUT, TransportError
from perftriage.transport.http_get import READ_CHUNK, HttpResponse, open_stream, parse_http_url

MAX_BYTES = 1024 * 1024


def endpoint(base_url: str, path: str) -> str:
    """``http://h:p/any/thing`` + ``/start_profile`` -> ``http://h:p/start_profile``."""
    parts = urlsplit(base_url.strip())
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


async def http_request(transport, url: str, *, method: str = "GET", json_body=None,
                       timeout: float = 10.0, max_bytes: int = MAX_BYTES) -> HttpResponse:
    """One request; :class:`TransportError` (one line) when it cannot complete."""
    target = parse_http_url(url)
    name = getattr(transport, "name", "?")
    body = b"" if json_body is None else json.dumps(json_body).encode()
    headers = [("Host", target.host_header), ("User-Agent", "perftriage"),
               ("Accept", "*/*"), ("Connection", "close"), ("Content-Length", str(len(body)))]
    if json_body is not None:
        headers.append(("Content-Type", "application/json"))
    writer = None
    try:
        async with asyncio.timeout(timeout):
            reader, writer = await open_stream(transport, target.host, target.port)
            conn = h11.Connection(h11.CLIENT)
            data = conn.send(h11.Request(method=method, target=target.target, headers=headers))
            data += conn.send(h11.Data(data=body)) if body else b""
            writer.write(data + conn.send(h11.EndOfMessage()))
            await writer.drain()
            response: h11.Response | None = None
            got = bytearray()
            while True:
                event = conn.next_event()
                if event is h11.NEED_DATA:
                    conn.receive_data(await reader.read(READ_CHUNK))
                elif isinstance(event, h11.Response):
                    response = event
                elif isinstance(event, h11.Data):
                    got += event.data
                    if len(got) > max_bytes:
                        raise TransportError(f"{url}: response larger than {max_bytes} bytes",
                                             OTHER, name)
                elif isinstance(event, (h11.EndOfMessage, h11.ConnectionClosed)):
                    break
    except TimeoutError:
        raise TransportError(f"no answer from {url} within {timeout:g}s", TIMEOUT, name) from None
    except h11.RemoteProtocolError as exc:
        raise TransportError(f"{url}: not an HTTP response ({exc})", OTHER, name) from None
    except (ConnectionError, OSError) as exc:
        raise TransportError(f"{url}: connection lost ({exc})", OTHER, name) from None
    finally:
        if writer is not None:
            with contextlib.suppress(Exception):
                writer.close()
    if response is None:
        raise TransportError(f"{url}: connection closed before a response", OTHER, name)
    hdrs = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in response.headers}
    return HttpResponse(response.status_code, response.reason.decode("latin-1"), hdrs, bytes(got))
