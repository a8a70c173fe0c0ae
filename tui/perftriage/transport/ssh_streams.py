"""Who holds the plain (stream) channels of one SSH connection, and a
bounded wait for one.

A stream (``tail -F``, nvidia-smi, the /proc sampler, GPM counters, a
server started from the cockpit) holds its channel for as long as it runs.
A GPU host's cockpit keeps four of them open; with a followed log that made
four, and a server started from the cockpit waited, without a word, for a
fifth that only the cockpit's exit gave back. The transport
now gives a stream a channel of the shell pool when the streams have none
left (a pool of one shell still runs every command, one at a time), and
a stream that still finds none fails after :data:`STREAM_WAIT_S` naming
what holds the channels, instead of waiting for ever.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from perftriage.transport.base import CHANNEL_LIMIT, TransportError

STREAM_WAIT_S = 10.0


def stream_label(command: str) -> str:
    """A short name for a stream whose caller gave none (for messages only)."""
    if "perftriage-proc" in command:
        return "the /proc sampler"
    if "dmon" in command:
        return "GPM counters"
    if "nvidia-smi" in command:
        return "nvidia-smi"
    if "tail -n +" in command:
        return "tail -F"
    words = command.split()
    return words[0][:40] if words else "a stream"


class StreamSlots:
    """The streams of one connection by label; :meth:`take` waits for room."""

    def __init__(self, host: str) -> None:
        self.host = host
        self.held: dict[int, str] = {}
        self._next = 0
        self._freed: asyncio.Event | None = None

    async def take(self, label: str, room: Callable[[], bool], wait_s: float,
                   why: Callable[[str, float], str]) -> int:
        """A key for ``label`` once ``room()`` says a channel is free; a
        CHANNEL_LIMIT TransportError (``why(label, wait_s)``) after ``wait_s``."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait_s
        while not room():
            left = deadline - loop.time()
            if left <= 0:
                raise TransportError(why(label, wait_s), CHANNEL_LIMIT, self.host)
            if self._freed is None:
                self._freed = asyncio.Event()
            freed = self._freed
            try:
                async with asyncio.timeout(left):
                    await freed.wait()
            except TimeoutError:
                pass
        self._next += 1
        self.held[self._next] = label
        return self._next

    def give(self, key: int) -> None:
        self.held.pop(key, None)
        if self._freed is not None:
            self._freed.set()
            self._freed = None

    def labels(self) -> str:
        return ", ".join(self.held.values()) or "none"
