"""Records the live gap once a second as ``gap.sample`` events, for every
host whose bandwidth counters are flowing, once roofline inputs exist (the
G form). Replay and the Markdown report read these events; the Gap view
computes the same figures from the state with the same function.

A sample is taken at once when the gap is recorded (or its inputs change),
not a second later: until the first sample the triage still asks for the
gap, and Enter in the Triage view would open the form the user just filled.

Also asks each host once for its NVLink capacity (``nvidia-smi nvlink -s``)
and records it as host info (``nvlink_capacity_gbs``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

from perftriage.core.analysis import gap as gap_math
from perftriage.core.analysis.gap_live import live_gap
from perftriage.core.model.events import Event, GapComputed, GapSample, HostInfo
from perftriage.core.model.state import SessionState
from perftriage.services.sources.base import BaseSource, SourceKind
from perftriage.transport.base import TransportError

INTERVAL_S = 1.0


class GapMonitor(BaseSource):
    def __init__(self, state: SessionState, emit: Callable[[Event], object], registry,
                 interval: float = INTERVAL_S,
                 subscribe: Callable[[Callable[[Event], None]], object] | None = None) -> None:
        super().__init__()
        self.name, self.host = "gap", None
        self.session_state = state
        self.emit = emit
        self.registry = registry
        self.interval = max(INTERVAL_S, interval)
        self._seen: dict[str, object] = {}  # host -> the counters event last used
        self._asked: set[str] = set()
        if subscribe is not None:
            subscribe(self._on_event)

    def _on_event(self, event: Event) -> None:
        """The gap recorded (G): sample it now, with its new inputs, from the
        counters already read (after the emit that recorded it returns)."""
        if not isinstance(event, GapComputed):
            return
        self._seen.clear()
        with contextlib.suppress(RuntimeError):  # no loop: the next tick takes it
            asyncio.get_running_loop().call_soon(self.tick)

    async def run(self) -> None:
        self.set_state("up")
        while True:
            await asyncio.sleep(self.interval)
            self.tick()

    def tick(self) -> list[GapSample]:
        out: list[GapSample] = []
        if not self.session_state.gaps:
            return out
        for name, hs in self.session_state.hosts.items():
            c = hs.counters
            if c is None or not c.gpus or self._seen.get(name) is c:
                continue
            self._seen[name] = c
            if name not in self._asked and any(g.nvlink_rx_gbs for g in c.gpus):
                self._asked.add(name)
                asyncio.get_running_loop().create_task(self._nvlink(name))
            r = live_gap(self.session_state, name)
            if r is not None:
                sample = GapSample(host=name, **r.event_fields())
                self.emit(sample)
                out.append(sample)
        return out

    async def _nvlink(self, name: str) -> None:
        try:
            transport = self.registry.get(name).transport
            res = await transport.run("nvidia-smi nvlink -s 2>&1", timeout=20)
        except (TransportError, KeyError):
            return
        capacity = gap_math.parse_nvlink_status(res.stdout)
        if capacity:
            self.emit(HostInfo(host=name, info={"nvlink_capacity_gbs":
                                                {str(k): v for k, v in capacity.items()}}))


def gap_sources(config, registry, session) -> list[GapMonitor]:
    """Source factory: the one live gap recorder."""
    return [GapMonitor(session.state, session.emit, registry, subscribe=session.subscribe)]


GAP = SourceKind("gap", gap_sources)
