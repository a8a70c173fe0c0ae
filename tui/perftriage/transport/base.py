"""What every transport (local subprocess, SSH) offers the services above.

``run`` returns a :class:`RunResult`; ``stream_batches`` yields lists of
lines read in large chunks (a batch per read, never one await per line);
``stream`` is the line-at-a-time convenience on top of it. Cancelling the
task that consumes a stream, or closing its iterator, kills the process.
Failures to reach a host raise :class:`TransportError` with a one-line
``reason`` and a machine-readable ``kind``.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

CHUNK_BYTES = 256 * 1024

# TransportError.kind values
HOST_KEY_UNKNOWN = "host_key_unknown"
HOST_KEY_CHANGED = "host_key_changed"
AUTH = "auth"
REFUSED = "refused"
DNS = "dns"
TIMEOUT = "timeout"
LOST = "lost"
CHANNEL_LIMIT = "channel_limit"
BAD_COMMAND = "bad_command"
OTHER = "other"


class TransportError(Exception):
    def __init__(self, reason: str, kind: str = OTHER, host: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.kind = kind
        self.host = host

    def __str__(self) -> str:
        return f"{self.host}: {self.reason}" if self.host else self.reason


def encode_command(command: str) -> bytes:
    """The bytes of a shell command, or a one-line :class:`TransportError`.

    A NUL byte cannot be carried by any command line (argv strings and shell
    variables end at NUL); it is refused rather than cut, so a command is run
    whole or not at all. Every other byte passes, including lone surrogates
    that stand for undecodable file-name bytes (``surrogateescape``).
    """
    if "\0" in command:
        at = command.index("\0")
        raise TransportError(
            f"refused to run a command holding a NUL byte (0x00, at character {at}): "
            "no command line can carry it", BAD_COMMAND)
    try:
        return command.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError as exc:
        raise TransportError(f"refused to run a command that is not valid text ({exc.reason} "
                             f"at character {exc.start})", BAD_COMMAND) from None


@dataclass
class RunResult:
    exit_status: int | None
    stdout: str
    stderr: str
    duration_s: float
    timed_out: bool = False
    stdout_dropped: int = 0  # bytes not kept past ``run(limit=...)``
    stderr_dropped: int = 0

    @property
    def ok(self) -> bool:
        return self.exit_status == 0 and not self.timed_out


# ``run(limit=N)`` keeps a command's first N bytes per stream and its last
# OUTPUT_TAIL_BYTES (a result line printed last still arrives); the middle is
# counted, never held: a probe printing 100 MB costs N + tail bytes.
OUTPUT_TAIL_BYTES = 64 * 1024


def trim_middle(buf: bytearray, limit: int | None, dropped: int) -> int:
    """Drop the bytes of ``buf`` between ``limit`` and its last
    OUTPUT_TAIL_BYTES once they are worth a copy; returns the new total dropped."""
    if limit is None or len(buf) <= limit + 2 * OUTPUT_TAIL_BYTES:
        return dropped
    cut = len(buf) - OUTPUT_TAIL_BYTES
    del buf[limit:cut]
    return dropped + cut - limit


def capped_text(data: bytes | bytearray, limit: int | None, dropped: int) -> str:
    """Decoded output, with a visible note where the middle was dropped."""
    if not dropped or limit is None:
        return bytes(data).decode("utf-8", "replace")
    head = bytes(data[:limit]).decode("utf-8", "replace")
    tail = bytes(data[limit:]).decode("utf-8", "replace")
    return f"{head}\n[… {dropped:,} bytes not kept …]\n{tail}"


class Transport(Protocol):
    name: str

    async def run(
        self, command: str, timeout: float | None = None, stdin: str | None = None,
        limit: int | None = None,
    ) -> RunResult: ...

    # a generator, not just an iterator: aclose() ends the command early
    def stream_batches(self, command: str, *,
                       label: str | None = None) -> AsyncGenerator[list[str], None]: ...

    def stream(self, command: str) -> AsyncIterator[str]: ...

    async def close(self) -> None: ...


@runtime_checkable
class MaintainsConnection(Protocol):
    """A transport that keeps one connection up itself (SSH): ``maintain()``
    reconnects with backoff until closed and reports each state change."""

    on_state: Callable[[str, str | None], None] | None

    async def maintain(self) -> None: ...


@runtime_checkable
class ChecksConnection(Protocol):
    """A transport with a connection to check (SSH): ``check()`` connects and
    runs ``true``, returns the seconds it took, raises TransportError."""

    async def check(self) -> float: ...


# A streamed line longer than this is cut (and says how much): a remote file
# with a 100 MB line and no newline must not be held, nor copied per chunk.
MAX_LINE_CHARS = 64 * 1024


def _cut(line: str, extra: int = 0) -> str:
    over = len(line) - MAX_LINE_CHARS + extra
    return line if over <= 0 else f"{line[:MAX_LINE_CHARS]} […{over:,} chars cut]"


class Lines(list[str]):
    """A batch of complete lines, and ``text``: one string that holds every
    one of them (the chunk they were cut from), so that a test of the whole
    batch ("any heartbeat?") is one C-level search instead of a call per
    line. ``text`` may hold more than the lines (a partial last line): a
    search of it can say "maybe", and never misses."""

    __slots__ = ("text",)

    def __init__(self, lines: list[str], text: str) -> None:
        super().__init__(lines)
        self.text = text


def batch_holds(batch: list[str], needle: str) -> bool:
    """Whether some line of ``batch`` may hold ``needle`` (exact for a plain
    list; for :class:`Lines`, one search of its text)."""
    if isinstance(batch, Lines):
        return needle in batch.text
    return any(map(operator.contains, batch, itertools.repeat(needle)))  # (C-level per line)


class LineSplitter:
    """Turns arbitrary chunks into complete lines, keeping the partial tail
    (at most MAX_LINE_CHARS of it: the rest of an overlong line is counted)."""

    __slots__ = ("_tail", "_skipped")

    def __init__(self) -> None:
        self._tail = ""
        self._skipped = 0  # chars of the current overlong line not kept

    def feed(self, chunk: str) -> list[str]:
        if not chunk:
            return []
        if self._skipped:
            nl = chunk.find("\n")
            if nl < 0:
                self._skipped += len(chunk)
                return []
            ended = f"{self._tail} […{self._skipped + nl:,} chars cut]"
            self._tail, self._skipped = "", 0
            return [ended, *self.feed(chunk[nl + 1:])]
        text = self._tail + chunk
        lines = text.split("\n")
        self._tail = lines.pop()
        if len(self._tail) > MAX_LINE_CHARS:
            self._skipped = len(self._tail) - MAX_LINE_CHARS
            self._tail = self._tail[:MAX_LINE_CHARS]
        if lines and max(map(len, lines)) > MAX_LINE_CHARS:  # rare: cut per line only then
            return [_cut(ln) for ln in lines]
        return Lines(lines, text)

    def flush(self) -> list[str]:
        tail, skipped = self._tail, self._skipped
        self._tail, self._skipped = "", 0
        if skipped:
            return [f"{tail} […{skipped:,} chars cut]"]
        return [tail] if tail else []


async def lines_of(batches: AsyncIterator[list[str]]) -> AsyncIterator[str]:
    async for batch in batches:
        for line in batch:
            yield line
