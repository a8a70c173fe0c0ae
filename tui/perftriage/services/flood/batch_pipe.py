"""A log source's batches, emitted in order, parsed in the helper during a flood.

A quiet log's batch is emitted at once, parsed in the app, as it always was.
A flood's batches (the slices of a backlog) are sent to the parse helper
(:class:`~perftriage.services.flood.scan_worker.ScanWorker`) as they are cut and
wait in a queue; a task emits them in order as their triage comes back,
with a yield to the event loop after each (keys and frames get through), so
the app thread splits and applies while the helper parses. A batch whose
triage cannot come (no helper yet, or it failed) is parsed in the app when
its turn comes: nothing is lost, nothing is reordered.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Callable

from perftriage.core.parse.batch_scan import Scan, Triage, finish
from perftriage.services.flood.scan_worker import ScanWorker

# lines queued (sent to the helper, not yet emitted) before the reader waits
MAX_QUEUED_LINES = 16 * 1024


class BatchPipe:
    def __init__(self, emit: Callable[[list[str], Scan | None], None],
                 worker: ScanWorker | None) -> None:
        """``emit(lines, found)``: ``found`` is the batch's scan finished from
        the helper's triage, or None (the caller parses it)."""
        self._emit = emit
        self._worker = worker
        self._queue: deque[tuple[list[str], asyncio.Future[Triage] | None]] = deque()
        self._queued_lines = 0
        self._task: asyncio.Task | None = None
        self._emitted = asyncio.Event()
        self._error: BaseException | None = None  # what emitting raised (raised to the source)

    def put(self, lines: list[str], *, flood: bool = False) -> None:
        """Emit ``lines`` after everything put before; during a ``flood``, with
        their triage from the helper."""
        fut = self._worker.submit(lines) if flood and self._worker is not None else None
        if fut is None and not self._queue:
            self._emit(lines, None)  # nothing ahead of it: now, parsed here
            return
        self._queue.append((lines, fut))
        self._queued_lines += len(lines)
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def room(self) -> None:
        """Wait while the queue holds more than MAX_QUEUED_LINES lines."""
        while self._queued_lines > MAX_QUEUED_LINES and self._task is not None:
            self._emitted.clear()
            await self._emitted.wait()
        self._raise()

    async def drained(self) -> None:
        """Wait until everything put has been emitted."""
        while self._task is not None:
            self._emitted.clear()
            await self._emitted.wait()
        self._raise()

    def _raise(self) -> None:
        """Emitting raised (a bug downstream): the source gets it, as it got
        it when it emitted itself, instead of waiting for a queue that
        nothing empties any more."""
        if self._error is not None:
            error, self._error = self._error, None
            raise error

    async def _run(self) -> None:
        try:
            while self._queue:
                lines, fut = self._queue[0]
                tri = None
                if fut is not None:
                    with contextlib.suppress(Exception):  # helper gone: parse here
                        tri = await fut
                self._emit_next(tri)
                await asyncio.sleep(0)
        except Exception as exc:  # noqa: BLE001 - handed to the source by room()/drained()
            self._error = exc
        finally:
            self._task = None
            self._emitted.set()

    def _emit_next(self, tri: Triage | None) -> None:
        lines, _fut = self._queue.popleft()
        self._queued_lines -= len(lines)
        self._emit(lines, finish(lines, tri) if tri is not None else None)
        self._emitted.set()

    def close_now(self) -> None:
        """Emit what is queued now, in order (the source is stopping): with
        the triages already back, the rest parsed here."""
        if self._task is not None:
            self._task.cancel()
            self._task = None
        while self._queue:
            fut = self._queue[0][1]
            back = fut is not None and fut.done() and not fut.cancelled() and fut.exception() is None
            self._emit_next(fut.result() if back and fut is not None else None)
