"""A helper process that triages log lines during a flood.

Parsing was the app thread's largest cost in a log flood (the RE2 prefilter
and the SGLang decode-line regex, about 1 us a line in the app), and the
app has one thread. During a flood, :class:`ScanWorker` sends each batch to
a helper process (:mod:`perftriage.services.flood.scan_helper`) that runs
:func:`~perftriage.core.parse.batch_scan.triage` on the other core and
answers with the plain result; the app thread then only finishes the scan
(the few lines the general parser must see) and applies it. The helper runs
the same pure function as the app, so a batch's scan is the same either
way, and replay (which parses in the app) reduces to the same state.

The helper is started at the first flood, not before (a quiet log never
needs it), and while it starts, batches are parsed in the app as before; it
is stopped after ``IDLE_S`` without a batch, and the next flood starts
another. If it cannot start or dies, batches waiting for it are parsed in
the app and no new helper is started: the app works as it does without one.

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
from perftriage.services.flood.scan_helper import FRAME

PIPE_BYTES = 1 << 20
IDLE_S = 60.0  # a helper with no batch for this long is stopped
COMMAND = (sys.executable, "-m", "perftriage.services.flood.scan_helper")


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
    """The app's side of the helper: :meth:`submit` a batch, await its triage.

    A helper that has had no batch for ``idle_s`` seconds is stopped (it
    holds ~25 MB); the next flood starts a new one."""

    def __init__(self, command: tuple[str, ...] = COMMAND, idle_s: float = IDLE_S) -> None:
        self._command = command
        self._idle_s = idle_s
        self._proc: asyncio.subprocess.Process | None = None
        self._starting: asyncio.Task | None = None
        self._reader: asyncio.Task | None = None
        self._retiring: asyncio.Task | None = None
        self._idle_timer: asyncio.TimerHandle | None = None
        self._last_use = 0.0
        self._waiting: deque[asyncio.Future[Triage]] = deque()
        self._decode = msgspec.msgpack.Decoder(Triage).decode
        self.failed: str | None = None  # why there is no helper (then none is started again)
        self.batches = 0  # batches the helper triaged
        self.started = 0  # helpers started

    @property
    def running(self) -> bool:
        return self._proc is not None and self.failed is None

    def submit(self, lines: list[str]) -> asyncio.Future[Triage] | None:
        """The future triage of ``lines`` from the helper, or None when there is
        no helper now (it is started by the first call: parse this batch here)."""
        loop = asyncio.get_running_loop()
        self._last_use = loop.time()
        if not self.running:
            if self.failed is None and self._starting is None:
                self._starting = loop.create_task(self._start())
            return None
        assert self._proc is not None and self._proc.stdin is not None
        body = "\n".join(lines).encode("utf-8", "surrogatepass")
        fut: asyncio.Future[Triage] = loop.create_future()
        self._waiting.append(fut)
        self._proc.stdin.write(FRAME.pack(len(body)) + body)
        return fut

    async def _start(self) -> None:
        try:
            proc = await asyncio.create_subprocess_exec(
                *self._command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.DEVNULL)
        except (OSError, ValueError) as exc:
            self.failed = f"cannot start the parse helper: {exc}"
            return
        finally:
            self._starting = None
        self._proc = proc
        self.started += 1
        for pipe in (proc.stdin, proc.stdout):
            _widen(pipe)
        loop = asyncio.get_running_loop()
        self._reader = loop.create_task(self._read(proc))
        self._idle_timer = loop.call_later(self._idle_s, self._check_idle)

    def _check_idle(self) -> None:
        """Stop the helper after ``idle_s`` without a batch (see the class doc)."""
        self._idle_timer = None
        if self._proc is None:
            return
        loop = asyncio.get_running_loop()
        left = self._last_use + self._idle_s - loop.time()
        if left > 0 or self._waiting:
            self._idle_timer = loop.call_later(max(left, 0.1), self._check_idle)
            return
        self._retiring = loop.create_task(self._stop(self._detach()))

    def _detach(self) -> tuple[asyncio.subprocess.Process | None, asyncio.Task | None]:
        """The current helper and its reader, no longer the worker's."""
        proc, reader = self._proc, self._reader
        self._proc = self._reader = None
        if self._idle_timer is not None:
            self._idle_timer.cancel()
            self._idle_timer = None
        return proc, reader

    async def _read(self, proc: asyncio.subprocess.Process) -> None:
        """``proc``'s replies, in the order of the requests, until its stdout
        ends (read to the end even after a stop: that closes the pipe)."""
        assert proc.stdout is not None
        out = proc.stdout
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
            if proc is self._proc:  # (a helper stopped on purpose is no failure)
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

    @staticmethod
    async def _stop(helper: tuple[asyncio.subprocess.Process | None, asyncio.Task | None]) -> None:
        """EOF on the helper's stdin ends it (killed if it lingers); then its
        stdout's EOF ends its reader, and the pipes are closed."""
        proc, reader = helper
        if proc is None:
            return
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), 2)
        except asyncio.TimeoutError:
            proc.kill()
            await proc.wait()
        if reader is not None:
            try:
                await asyncio.wait_for(reader, 2)
            except (asyncio.TimeoutError, asyncio.CancelledError):
                pass

    async def close(self) -> None:
        """Stop the helper for good (the app is stopping)."""
        if self._starting is not None:
            with contextlib.suppress(BaseException):
                await self._starting
        helper = self._detach()
        self._fail("closed")
        await self._stop(helper)
        if self._retiring is not None:
            with contextlib.suppress(BaseException):
                await self._retiring
