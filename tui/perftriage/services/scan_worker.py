"""A helper process that triages log lines during a flood.

Parsing is the app thread's largest cost in a log flood (the RE2 prefilter
and the SGLang decode-line regex, about 1 us a line in the app), and the
app has one thread. During a flood, :class:`ScanWorker` sends each batch to
a helper process (:mod:`perftriage.services.scan_helper`) that runs
:func:`~perftriage.core.parse.batch_scan.triage` on the other core and
answers with the plain result; the app thread then only finishes the scan
(the few lines the general parser must see) and applies it. The helper runs
the same pure function as the app, so a batch's scan is the same either
way, and replay (which parses in the app) reduces to the same state.

The helper is started at the first flood, not before (a quiet log never
needs it), and while it starts, batches are parsed in the app as before. If
it cannot start or dies, batches waiting for it are parsed in the app and
no new helper is started: the app works as it does without one.

Both directions are frames of a 4-byte big-endian length and a body: a
request is the batch's lines joined by ``\\n`` (UTF-8, surrogates passed
through), a reply the msgpack of its :class:`Triage`. The helper's stderr
goes nowhere: the terminal belongs to the app.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import sys
from collections import deque

import msgspec

from perftriage.core.parse.batch_scan import Triage
from perftriage.services.scan_helper import FRAME

PIPE_BYTES = 1 << 20
COMMAND = (sys.executable, "-m", "perftriage.services.scan_helper")


def _widen(stream: object) -> None:
    """Give a pipe to the helper room for several batches (Linux: 1 MiB, not
    64 KiB), so one write takes a whole batch instead of a trickle of partial
    writes from the transport's buffer."""
    transport = getattr(stream, "transport", None)
    pipe = transport.get_extra_info("pipe") if transport is not None else None
    set_size = getattr(fcntl, "F_SETPIPE_SZ", None)
    if pipe is None or set_size is None:
        return
    with contextlib.suppress(OSError):
        fcntl.fcntl(pipe.fileno(), set_size, PIPE_BYTES)


class ScanWorker:
    """The app's side of the helper: :meth:`submit` a batch, await its triage."""

    def __init__(self, command: tuple[str, ...] = COMMAND) -> None:
        self._command = command
        self._proc: asyncio.subprocess.Process | None = None
        self._starting: asyncio.Task | None = None
        self._reader: asyncio.Task | None = None
        self._waiting: deque[asyncio.Future[Triage]] = deque()
        self._decode = msgspec.msgpack.Decoder(Triage).decode
        self.failed: str | None = None  # why there is no helper (then none is started again)
        self.batches = 0  # batches the helper triaged

    @property
    def running(self) -> bool:
        return self._proc is not None and self.failed is None

    def submit(self, lines: list[str]) -> asyncio.Future[Triage] | None:
        """The future triage of ``lines`` from the helper, or None when there is
        no helper now (it is started by the first call: parse this batch here)."""
        if not self.running:
            if self.failed is None and self._starting is None:
                self._starting = asyncio.get_running_loop().create_task(self._start())
            return None
        assert self._proc is not None and self._proc.stdin is not None
        body = "\n".join(lines).encode("utf-8", "surrogatepass")
        fut: asyncio.Future[Triage] = asyncio.get_running_loop().create_future()
        self._waiting.append(fut)
        self._proc.stdin.write(FRAME.pack(len(body)) + body)
        return fut

    async def _start(self) -> None:
        try:
            self._proc = await asyncio.create_subprocess_exec(
                *self._command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.DEVNULL)
        except (OSError, ValueError) as exc:
            self.failed = f"cannot start the parse helper: {exc}"
            return
        for pipe in (self._proc.stdin, self._proc.stdout):
            _widen(pipe)
        self._reader = asyncio.get_running_loop().create_task(self._read())

    async def _read(self) -> None:
        """Replies, in the order of the requests, until the helper's stdout
        ends (read to the end even after close: that closes the pipe)."""
        assert self._proc is not None and self._proc.stdout is not None
        proc, out = self._proc, self._proc.stdout
        try:
            while True:
                (size,) = FRAME.unpack(await out.readexactly(FRAME.size))
                body = await out.readexactly(size)
                if not self._waiting:  # (closed: a reply nobody waits for)
                    continue
                fut = self._waiting.popleft()
                tri = self._decode(body)
                self.batches += 1
                if not fut.done():  # (its batch was emitted without it)
                    fut.set_result(tri)
        except asyncio.IncompleteReadError:
            self._fail("the parse helper stopped")
        except (msgspec.DecodeError, OSError) as exc:
            self._fail(f"the parse helper answered nonsense ({exc})")
            with contextlib.suppress(ProcessLookupError):
                proc.kill()

    def _fail(self, why: str) -> None:
        self.failed = self.failed or why
        while self._waiting:
            fut = self._waiting.popleft()
            if not fut.done():
                fut.set_exception(RuntimeError(why))
                # (marked as seen: a batch emitted without its triage never awaits it)
                fut.exception()

    async def close(self) -> None:
        """Stop the helper: EOF on its stdin ends it (killed if it lingers),
        then its stdout's EOF ends the reader, and the pipes are closed."""
        if self._starting is not None:
            with contextlib.suppress(BaseException):
                await self._starting
        proc, self._proc = self._proc, None
        self._fail("closed")
        if proc is None:
            return
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), 2)
        except asyncio.TimeoutError:
            proc.kill()
            await proc.wait()
        if self._reader is not None:
            try:
                await asyncio.wait_for(self._reader, 2)
            except (asyncio.TimeoutError, asyncio.CancelledError):
                pass
