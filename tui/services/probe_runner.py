"""Runs probes: per-host FIFO queues with a concurrency cap.

``enqueue`` emits ProbeQueued at once; a worker per host takes probes in
order, emits ProbeStarted / ProbeOutput / ProbeFinished. Cancelling a probe
cancels its task, which kills the (remote) process.
"""

from __future__ import annotations

import asyncio
import contextlib
import time

from tui.core import events as ev
from tui.core import probes
from tui.services.hosts import HostRegistry
from tui.services.session import Session
from tui.transport.base import TransportError

DEFAULT_CONCURRENCY = 4
DEFAULT_TIMEOUT_S = 60.0


class ProbeRunner:
    def __init__(
        self, session: Session, hosts: HostRegistry, concurrency: int = DEFAULT_CONCURRENCY
    ) -> None:
        self.session = session
        self.hosts = hosts
        self.concurrency = concurrency
        self._sems: dict[str, asyncio.Semaphore] = {}
        self._tasks: dict[str, asyncio.Task] = {}

    def enqueue(
        self,
        host: str,
        kind: str,
        args: list[str],
        *,
        timeout: float | None = None,
        group: str | None = None,
        template: str | None = None,
    ) -> str:
        h = self.hosts.get(host)
        command = probes.build_command(kind, args, h.context)  # raises ProbeUsageError
        probe_id = self.session.new_id("p")
        self.session.emit(
            ev.ProbeQueued(
                probe_id=probe_id,
                host=host,
                kind=kind,
                args=list(args),
                command=command,
                group=group,
                timeout_s=timeout or DEFAULT_TIMEOUT_S,
                template=template,
            )
        )
        task = asyncio.get_running_loop().create_task(
            self._run(probe_id, host, kind, args, command, timeout or DEFAULT_TIMEOUT_S)
        )
        self._tasks[probe_id] = task
        task.add_done_callback(lambda _t: self._tasks.pop(probe_id, None))
        return probe_id

    def cancel(self, probe_id: str) -> bool:
        task = self._tasks.get(probe_id)
        if task is None or task.done():
            return False
        task.cancel()
        return True

    async def wait(self, probe_id: str | None = None) -> None:
        tasks = [self._tasks[probe_id]] if probe_id in self._tasks else list(self._tasks.values())
        if probe_id is not None and probe_id not in self._tasks:
            return
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _run(
        self, probe_id: str, host: str, kind: str, args: list[str], command: str, timeout: float
    ) -> None:
        sem = self._sems.setdefault(host, asyncio.Semaphore(self.concurrency))
        emit = self.session.emit
        start: float | None = None
        try:
            async with sem:
                emit(ev.ProbeStarted(probe_id=probe_id))
                start = time.perf_counter()
                result = await self.hosts.get(host).transport.run(command, timeout=timeout)
            if result.stdout:
                emit(ev.ProbeOutput(probe_id=probe_id, stream="stdout", data=result.stdout))
            if result.stderr:
                emit(ev.ProbeOutput(probe_id=probe_id, stream="stderr", data=result.stderr))
            if result.timed_out:
                emit(ev.ProbeFinished(probe_id=probe_id, status="timeout",
                                      duration_s=result.duration_s,
                                      summary=f"timed out after {timeout:g}s"))
                return
            verdict = probes.get(kind).interpret(
                args, result.exit_status, result.stdout, result.stderr
            )
            emit(ev.ProbeFinished(probe_id=probe_id, status=verdict.status,
                                  exit_status=result.exit_status,
                                  duration_s=round(result.duration_s, 6),
                                  summary=verdict.summary, detail=verdict.detail))
        except asyncio.CancelledError:
            dur = time.perf_counter() - start if start else None
            emit(ev.ProbeFinished(probe_id=probe_id, status="cancelled", duration_s=dur,
                                  summary="cancelled"))
            raise
        except TransportError as exc:
            emit(ev.ProbeFinished(probe_id=probe_id, status="error", summary=exc.reason,
                                  detail={"error_kind": exc.kind}))
        except Exception as exc:  # noqa: BLE001 - a probe bug must not kill the queue
            emit(ev.ProbeFinished(probe_id=probe_id, status="error",
                                  summary=f"{type(exc).__name__}: {exc}"))
