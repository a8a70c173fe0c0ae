"""Re-evaluates every hypothesis's check once a second and emits a
``check.verdict`` event for each scope whose verdict changed (the Hypotheses
pane, the transcript, replay and the report read those).

The evaluation reads only the in-memory state and plain values (no I/O), so
it runs on the event loop between frames; its cost is measured by
``tests/bench/bench_checks.py`` (200 checks over 64 GPUs: well under 2 % of
a core). A tick that somehow raises is reported once as a note and the
monitor keeps going: a check never takes the cockpit down.
"""

from __future__ import annotations

import asyncio
import time

from perftriage.core.checks.verdicts import Evaluator
from perftriage.core.model.events import CheckVerdict, NoteAdded
from perftriage.services.investigation.session import Session
from perftriage.services.sources.base import BaseSource, SourceKind

INTERVAL_S = 1.0


class CheckMonitor(BaseSource):
    def __init__(self, session: Session, interval: float = INTERVAL_S) -> None:
        super().__init__()
        self.name, self.host = "checks", None
        self.session = session
        self.interval = interval
        self.evaluator = Evaluator()
        self.tick_cpu_s = 0.0  # CPU time of the last tick (shown nowhere; for tests/diagnosis)
        self._failed = False

    async def run(self) -> None:
        self.set_state("up")
        while True:
            await asyncio.sleep(self.interval)
            self.tick()

    def tick(self) -> list[CheckVerdict]:
        state = self.session.state
        if not any(h.check for h in state.hypotheses):
            return []
        started = time.process_time()
        try:
            changes = self.evaluator.tick(state, self.session.elapsed)
        except Exception as exc:  # noqa: BLE001 - said once, visibly; the cockpit lives on
            if not self._failed:
                self._failed = True
                self.session.emit(NoteAdded(text=f"checks stopped evaluating: "
                                                 f"{type(exc).__name__}: {exc}"))
            return []
        for change in changes:
            self.session.emit(change)
        self.tick_cpu_s = time.process_time() - started
        return changes


def check_sources(config, registry, session: Session) -> list[CheckMonitor]:
    """Source factory: the hypotheses' checks, evaluated once a second."""
    return [CheckMonitor(session)]


CHECKS = SourceKind("checks", check_sources)
