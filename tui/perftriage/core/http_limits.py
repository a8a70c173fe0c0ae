"""One read policy for every HTTP answer the project takes in.

Prometheus answers, an engine's ``/metrics`` page, the ``http`` probe and a
profile capture's control endpoints are all read under one
:class:`HttpLimits`: a cap on the body's size and an overall deadline for
the whole exchange (connect, headers and body), not a timeout per read: a
server that drips one byte a second never times out a single read, and one
that never stops sending never fails one. Going past either limit is an
:class:`HttpLimitError` whose message names the URL and the limit.

The API, for any HTTP client:

* ``async with within_deadline(url, limits): ...`` - the whole exchange;
* ``cap = BodyCap(url, limits)`` then ``cap.add(chunk)`` per chunk and
  ``cap.body()`` at the end; or ``await read_capped(chunks, url, limits)``
  over an async iterator of chunks (httpx's ``aiter_bytes()``).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterable, AsyncIterator
from dataclasses import dataclass
from typing import Literal

MiB = 1024 * 1024


@dataclass(frozen=True)
class HttpLimits:
    max_bytes: int  # the body (after content decoding) may be at most this long
    deadline_s: float  # the whole exchange must be over within this many seconds

    def __post_init__(self) -> None:
        if not (self.max_bytes > 0 and 0 < self.deadline_s < float("inf")):
            raise ValueError(f"bad HTTP limits: {self.max_bytes} bytes, {self.deadline_s} s")


# the presets; a caller may build its own HttpLimits
PROMETHEUS = HttpLimits(max_bytes=32 * MiB, deadline_s=10.0)
ENGINE_METRICS = HttpLimits(max_bytes=16 * MiB, deadline_s=5.0)
PROBE = HttpLimits(max_bytes=4 * MiB, deadline_s=10.0)
PROFILE_CONTROL = HttpLimits(max_bytes=1 * MiB, deadline_s=60.0)


def size_text(n: int) -> str:
    return f"{n / MiB:g} MiB" if n >= MiB and n % (MiB // 16) == 0 else f"{n} bytes"


class HttpLimitError(Exception):
    """An answer went past its size cap or its deadline."""

    def __init__(self, url: str, which: Literal["size", "deadline"], limits: HttpLimits) -> None:
        self.url, self.which, self.limits = url, which, limits
        if which == "size":
            reason = f"answer larger than the {size_text(limits.max_bytes)} limit"
        else:
            reason = f"no complete answer within the {limits.deadline_s:g} s limit"
        self.reason = f"{url}: {reason}"
        super().__init__(self.reason)


class BodyCap:
    """Collects a body's chunks, failing as soon as they pass the size cap."""

    def __init__(self, url: str, limits: HttpLimits) -> None:
        self.url, self.limits = url, limits
        self._chunks: list[bytes] = []
        self.size = 0

    def add(self, chunk: bytes) -> None:
        self.size += len(chunk)
        if self.size > self.limits.max_bytes:
            self._chunks.clear()
            raise HttpLimitError(self.url, "size", self.limits)
        self._chunks.append(chunk)

    def body(self) -> bytes:
        return b"".join(self._chunks)


@contextlib.asynccontextmanager
async def within_deadline(url: str, limits: HttpLimits) -> AsyncIterator[None]:
    """The block must finish within ``limits.deadline_s`` or it is cancelled
    and :class:`HttpLimitError` raised in its place."""
    import asyncio  # here: what reads a transcript imports this module, never awaits

    try:
        async with asyncio.timeout(limits.deadline_s):
            yield
    except TimeoutError:
        raise HttpLimitError(url, "deadline", limits) from None


async def read_capped(chunks: AsyncIterable[bytes], url: str, limits: HttpLimits) -> bytes:
    """The whole body from ``chunks``, under the size cap (the caller holds the deadline)."""
    cap = BodyCap(url, limits)
    async for chunk in chunks:
        cap.add(chunk)
    return cap.body()
