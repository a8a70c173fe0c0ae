"""Runs probes: per-host FIFO queues with a concurrency cap.

``enqueue`` emits ProbeQueued at once and returns the probe id; the probe
waits its turn on its host (at most ``cap`` run at once per host, in queue
order), then emits ProbeStarted, its ProbeOutput and ProbeFinished. All of
it goes through ``Session.emit``, so the transcript records command, host,
exit status, verdict and duration.

Cancelling a probe cancels its task: a queued one never starts, a running
one's transport kills the (remote) process. ``enqueue_all`` fans one probe
out to every host (one ProbeQueued per host sharing a ``group``);
``rerun`` queues a finished probe again.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import secrets
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from perftriage.core.model import events as ev
from perftriage.core import probes
from perftriage.core.store.paths import make_private_dirs
from perftriage.services.hosts.registry import HostRegistry
from perftriage.services.investigation.session import Session
from perftriage.transport import carry
from perftriage.transport.base import TransportError

DEFAULT_CONCURRENCY = 4
# Probes running at once across all hosts: a fan-out to 1000 hosts opens its
# connections through this window, not all at once (sshd's MaxStartups).
DEFAULT_WINDOW = 64
DEFAULT_TIMEOUT_S = 60.0
# Output recorded per stream and probe; the rest is dropped (and said so).
MAX_OUTPUT_CHARS = 1_000_000
# What the transport keeps while the probe runs (its first bytes plus a tail
# for the result line): the rest is counted, never buffered, so a probe that
# prints 100 MB costs about this much memory, not 100 MB.
TRANSPORT_LIMIT_BYTES = MAX_OUTPUT_CHARS // 2
# Extra time the runner grants the transport beyond the probe timeout
# (connecting) before it gives up on its own.
GRACE_S = 15.0


def _cap(text: str) -> tuple[str, int]:
    if len(text) <= MAX_OUTPUT_CHARS:
        return text, 0
    return text[:MAX_OUTPUT_CHARS], len(text) - MAX_OUTPUT_CHARS


class ProbeRunner:
    def __init__(
        self,
        session: Session,
        hosts: HostRegistry,
        concurrency: int = DEFAULT_CONCURRENCY,
        templates: Iterable[Any] = (),
        default_timeout: float = DEFAULT_TIMEOUT_S,
        window: int = DEFAULT_WINDOW,
    ) -> None:
        self.session = session
        self.hosts = hosts
        self.concurrency = concurrency
        self.templates = list(templates)
        self.default_timeout = default_timeout
        self._sems: dict[str, asyncio.Semaphore] = {}
        self._window = asyncio.Semaphore(window)
        self._tasks: dict[str, asyncio.Task] = {}
        self._removed: set[str] = set()  # removed while running: no ProbeFinished after

    # --- queueing ----------------------------------------------------------

    def cap(self, host: str) -> int:
        """How many probes may run at once on ``host`` (its channel limit)."""
        h = self.hosts.get(host)
        return max(1, min(self.concurrency, getattr(h.config, "max_channels", self.concurrency)))

    def enqueue(
        self,
        host: str,
        kind: str,
        args: Sequence[str],
        *,
        timeout: float | None = None,
        group: str | None = None,
        template: str | None = None,
    ) -> str:
        """Queue ``kind`` (a probe kind or a template name) on ``host``.
        Raises ProbeUsageError for bad arguments, KeyError for an unknown host."""
        h = self.hosts.get(host)
        r = probes.resolve(kind, list(args), self.templates)
        timeout = timeout or r.timeout or probes.get(r.kind).timeout_s or self.default_timeout
        command = probes.build_command(r.kind, r.args,
                                       dataclasses.replace(h.context, deadline_s=timeout))
        probe_id = self.session.new_id("p")
        self.session.emit(
            ev.ProbeQueued(
                probe_id=probe_id,
                host=host,
                kind=r.kind,
                args=r.args,
                command=command,
                group=group,
                timeout_s=timeout,
                template=template or r.template,
            )
        )
        task = asyncio.get_running_loop().create_task(
            self._run(probe_id, host, r.kind, r.args, command, timeout),
            name=f"probe {probe_id}",
        )
        self._tasks[probe_id] = task
        task.add_done_callback(lambda _t: self._tasks.pop(probe_id, None))
        return probe_id

    def enqueue_all(
        self,
        kind: str,
        args: Sequence[str],
        *,
        hosts: Sequence[str] | None = None,
        timeout: float | None = None,
    ) -> list[str]:
        """The same probe on every host (or ``hosts``), one group."""
        names = list(hosts) if hosts is not None else self.hosts.names
        probes.resolve(kind, list(args), self.templates)  # fail before queueing any
        group = self.session.new_id("g")
        return [self.enqueue(h, kind, args, timeout=timeout, group=group) for h in names]

    def rerun(self, probe_id: str) -> str:
        p = self.session.state.probes[probe_id]
        return self.enqueue(p.host, p.kind, p.args, timeout=p.timeout_s, template=p.template)

    def cancel(self, probe_id: str) -> bool:
        task = self._tasks.get(probe_id)
        if task is None or task.done():
            return False
        task.cancel()
        return True

    def remove(self, probe_id: str) -> bool:
        """Take a probe out of the session (a mistyped one): cancelled first
        if it is queued or running, then a ProbeRemoved event. False when
        there is no such probe."""
        if probe_id not in self.session.state.probes:
            return False
        self._removed.add(probe_id)
        self.cancel(probe_id)
        self.session.emit(ev.ProbeRemoved(probe_id=probe_id))
        return True

    def pending(self) -> list[str]:
        return list(self._tasks)

    async def wait(self, probe_id: str | Sequence[str] | None = None) -> None:
        if probe_id is None:
            tasks = list(self._tasks.values())
        else:
            ids = [probe_id] if isinstance(probe_id, str) else list(probe_id)
            tasks = [self._tasks[i] for i in ids if i in self._tasks]
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)

    async def close(self) -> None:
        for task in list(self._tasks.values()):
            task.cancel()
        await self.wait()

    # --- running -------------------------------------------------------------

    def _keep(self, probe_id: str, files: dict[str, str]) -> list[str]:
        """A verdict's files next to the transcript (``<transcript>.probes/<id>/``,
        directory 0700, files 0600); nothing without a transcript."""
        path = self.session.path
        if not files or path is None:
            return []
        probes_dir = path.with_name(path.name + ".probes")
        folder = probes_dir / probe_id
        make_private_dirs(folder)  # .probes/ too (mkdir(parents=True) made it 0755)
        try:
            if probes_dir.stat().st_mode & 0o077:
                probes_dir.chmod(0o700)  # one an earlier version made 0755
        except OSError:
            pass  # not ours to change: its files are 0600 anyway
        kept = []
        for name, text in files.items():
            safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in name).lstrip(".")
            target = folder / (safe or "file")
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
            kept.append(str(target))
        return kept

    async def _run(
        self, probe_id: str, host: str, kind: str, args: list[str], command: str, timeout: float
    ) -> None:
        sem = self._sems.get(host)
        if sem is None:
            sem = self._sems[host] = asyncio.Semaphore(self.cap(host))
        emit = self.session.emit
        start: float | None = None
        try:
            async with sem, self._window:
                emit(ev.ProbeStarted(probe_id=probe_id))
                start = time.perf_counter()
                h = self.hosts.get(host)
                transport = h.transport
                spec = probes.get(kind)
                # a nonce kind's result line carries this, sent on stdin (never argv)
                nonce = secrets.token_hex(16) if spec.nonce else None
                # a file of this machine the kind carries to a remote host (stacks --carry)
                local_file = spec.carries(args) if spec.carries and not h.local else None
                carried = None
                try:
                    async with asyncio.timeout(timeout + GRACE_S):
                        if local_file:
                            carried = await carry.carry(transport, Path(local_file),
                                                        "perftriage-carried-")
                            command = probes.build_command(kind, args, dataclasses.replace(
                                h.context, deadline_s=timeout,
                                carried=(carried.path, carried.sha256)))
                        result = await transport.run(command, timeout=timeout,
                                                     limit=TRANSPORT_LIMIT_BYTES,
                                                     stdin=None if nonce is None else nonce + "\n")
                except TimeoutError:
                    emit(ev.ProbeFinished(
                        probe_id=probe_id, status="timeout",
                        duration_s=round(time.perf_counter() - start, 6),
                        summary=f"no answer within {timeout + GRACE_S:g}s (host unresponsive?)",
                    ))
                    return
                finally:
                    if carried is not None:
                        await carry.remove(transport, carried)
            detail: dict[str, Any] = {}
            stdout = result.stdout if nonce is None else probes.authentic(result.stdout, nonce)
            shown = probes.shown_stdout(spec, args, stdout)
            outputs: tuple[tuple[ev.ProbeStream, str], ...] = (
                ("stdout", shown), ("stderr", result.stderr))
            for stream, text in outputs:
                kept, dropped = _cap(text)
                dropped += getattr(result, f"{stream}_dropped", 0)
                if kept:
                    emit(ev.ProbeOutput(probe_id=probe_id, stream=stream, data=kept))
                if dropped:
                    detail[f"{stream}_dropped_chars"] = dropped
            if result.timed_out:
                emit(ev.ProbeFinished(probe_id=probe_id, status="timeout",
                                      duration_s=round(result.duration_s, 6),
                                      summary=f"timed out after {timeout:g}s", detail=detail))
                return
            verdict = spec.interpret(args, result.exit_status, stdout, result.stderr)
            files = self._keep(probe_id, verdict.files)
            if files:
                detail["files"] = files
            emit(ev.ProbeFinished(probe_id=probe_id, status=verdict.status,
                                  exit_status=result.exit_status,
                                  duration_s=round(result.duration_s, 6),
                                  summary=verdict.summary, detail={**verdict.detail, **detail}))
        except asyncio.CancelledError:
            if probe_id in self._removed:
                raise
            dur = round(time.perf_counter() - start, 6) if start else None
            emit(ev.ProbeFinished(probe_id=probe_id, status="cancelled", duration_s=dur,
                                  summary="cancelled" if start else "cancelled before it ran"))
            raise
        except TransportError as exc:
            dur = round(time.perf_counter() - start, 6) if start else None
            emit(ev.ProbeFinished(probe_id=probe_id, status="error", duration_s=dur,
                                  summary=exc.reason,
                                  detail={"error_kind": exc.kind, "error": str(exc)}))
        except Exception as exc:  # noqa: BLE001 - a probe bug must not kill the queue
            dur = round(time.perf_counter() - start, 6) if start else None
            emit(ev.ProbeFinished(probe_id=probe_id, status="error", duration_s=dur,
                                  summary=f"{type(exc).__name__}: {exc}",
                                  detail={"error_kind": "internal"}))
