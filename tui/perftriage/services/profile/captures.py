"""Profiler captures as part of the session: run a capture through a host of
the cockpit (or read trace files already here), keep the rank files next to
the transcript (``<transcript>.profiles/<id>/``, directory 0700, files 0600)
and emit one ``profile.captured`` event with the summary (never the trace)."""

from __future__ import annotations

import asyncio
import os
import re
import tempfile
from pathlib import Path

from perftriage.core.model.events import NoteAdded, ProfileCaptured
from perftriage.core.sanitize import visible
from perftriage.core.view.targets import default_capture_host
from perftriage.core.profile.reader import TraceLimits, open_trace
from perftriage.services.profile.worker import summarize_in_child
from perftriage.services.profile.capture import (
    ENGINE_EXITED,
    CaptureFailed,
    CaptureRequest,
    Progress,
    capture,
    exited_text,
)
from perftriage.transport.base import TransportError
from perftriage.transport.http_request import endpoint

KEEP_KERNELS = 100  # kernels kept in the event: the rest is in the trace files


def _private(path: str, flags: int) -> int:
    return os.open(path, flags, 0o600)


class ProfileCaptures:
    def __init__(self, session, registry, config) -> None:
        self.session = session
        self.registry = registry
        self.config = config
        self._scratch: Path | None = None  # no transcript (a test, --no-record): a temp dir

    def _root(self) -> Path:
        path = self.session.path
        if path is not None:
            return path.with_name(path.name + ".profiles")
        if self._scratch is None:
            self._scratch = Path(tempfile.mkdtemp(prefix="perftriage-profiles-"))
        return self._scratch

    def _new_id(self) -> str:
        """``prof<n>`` not taken yet: a continued investigation already has
        the captures of its earlier segments (the session counts from 1)."""
        taken = {p.capture_id for p in self.session.state.profiles}
        while (capture_id := self.session.new_id("prof")) in taken:
            pass
        return capture_id

    def dest(self, capture_id: str) -> Path:
        root = self._root()
        root.mkdir(mode=0o700, parents=True, exist_ok=True)
        return root / capture_id

    def _engine_url(self, host: str) -> str | None:
        """``host``'s ``metrics_url``, or a server profile's on that host (the
        one the Engine view reads); None when neither is configured."""
        hc = self.registry.get(host).config if host in self.registry.names else None
        url = getattr(hc, "metrics_url", None)
        if not url:
            url = next((p.metrics_url for p in self.config.servers
                        if p.metrics_url and p.host == host), None)
        return url

    def default_url(self, host: str) -> str:
        """The engine's base URL for ``host`` (configured), else SGLang's default port."""
        url = self._engine_url(host)
        return endpoint(url, "") if url else "http://127.0.0.1:30000"

    def default_host(self, state, selected: str | None = None) -> str:
        """The host a capture goes through unless the user picks another: the
        probe target chosen, else the host whose engine URL is configured,
        else the first with GPUs, else localhost (never merely the first host)."""
        names = self.registry.names
        engines = [h for h in names if self._engine_url(h)]
        return default_capture_host(state, names, selected, engines)

    def request(self, url: str, steps: int | None) -> CaptureRequest:
        pc = self.config.profile
        return CaptureRequest(url=url, steps=steps, timeout=pc.timeout,
                              vllm_dir=pc.vllm_trace_dir, max_trace_mb=pc.max_trace_mb,
                              rules=[(r.bucket, r.pattern) for r in pc.rules])

    async def capture(self, host: str, url: str, steps: int | None,
                      progress: Progress = lambda _m: None) -> ProfileCaptured:
        """Capture through ``host``'s transport; CaptureFailed / TransportError
        on failure, said first in a note (``profile capture prof3 of URL on
        HOST failed: why``); an engine that died: its pid and, when
        perftriage started it, its exit status."""
        capture_id = self._new_id()
        transport = self.registry.get(host).transport
        began = self.session.state.last_t
        try:
            result = await capture(transport, self.request(url, steps), self.dest(capture_id),
                                   progress)
        except (CaptureFailed, TransportError) as exc:
            # the attempt is kept in the investigation, with its real failure
            why = str(exc)
            if isinstance(exc, CaptureFailed) and exc.kind == ENGINE_EXITED:
                status = await self._exit_status(host, began)
                why = exited_text(exc.pid, status)
                exc = CaptureFailed(why, ENGINE_EXITED, exc.pid)
            self.session.emit(NoteAdded(host=host, text=visible(
                f"profile capture {capture_id} of {url} on {host} failed: {why}")))
            raise exc from None
        event = ProfileCaptured(
            capture_id=capture_id, host=host, url=url, engine=result.engine, steps=result.steps,
            files=[str(f) for f in result.files], missing=result.missing, via=result.via,
            refused=[f"{n}: {what}" for n, what in sorted(result.refused.items())],
            summary=result.summary.top(KEEP_KERNELS))
        self.session.emit(event)
        return event

    async def _exit_status(self, host: str, since: float, wait_s: float = 3.0) -> str | None:
        """``exit status S`` of a server perftriage started on ``host`` that
        ended after ``since`` (its launcher says so a moment after the
        connection broke: waited for up to ``wait_s``), else None."""
        for _ in range(int(wait_s * 10) + 1):
            for e in reversed(self.session.state.server_events):
                if e.host == host and e.t >= since and e.state in ("exited", "failed"):
                    m = re.search(r"exit status -?[0-9]{1,6}", e.detail)
                    return m.group(0) if m else None
            await asyncio.sleep(0.1)
        return None

    async def import_files(self, paths: list[Path], host: str = "localhost") -> ProfileCaptured:
        """Trace files already here (from nsys, a colleague, an earlier run):
        copied next to the transcript and summarised like a capture."""
        capture_id = self._new_id()
        dest = self.dest(capture_id)
        dest.mkdir(mode=0o700, exist_ok=True)
        limits = TraceLimits(max_mb=self.config.profile.max_trace_mb)
        kept = []
        for p in paths:
            target = dest / Path(p).name
            # a regular file within the cap only: a FIFO or a link to /dev/zero
            # would never finish copying
            with open_trace(str(p), limits) as src, \
                    open(target, "wb", opener=_private) as out:
                left = limits.max_bytes + 1  # a file that grows while copied stops here
                while left > 0 and (piece := src.read(min(1 << 20, left))):
                    out.write(piece)
                    left -= len(piece)
            kept.append(target)
        rules = [(r.bucket, r.pattern) for r in self.config.profile.rules]
        summary = await summarize_in_child(kept, rules, limits.max_mb)
        event = ProfileCaptured(capture_id=capture_id, host=host, engine="file",
                                files=[str(f) for f in kept], summary=summary.top(KEEP_KERNELS))
        self.session.emit(event)
        return event
