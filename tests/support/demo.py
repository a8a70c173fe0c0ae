"""The demo's cockpit as the tests drive it: built like ``perftriage demo``
(the SIMULATED SGLang server) with a short start-up, so a test waits
seconds, not the simulator's realistic load time."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

from perftriage.cli.commands.demo import DEMO_SERVER, build, simulated_host, start_demo
from perftriage.cli.globals import Globals
from perftriage.services.cockpit import Cockpit

# the engine source the demo's server feeds
DEMO_ENGINE = f"engine:{DEMO_SERVER}"


def fast_demo(tmp_path: Path, scenario: str | None = None) -> Cockpit:
    """The demo's cockpit, sessions under ``tmp_path``, the simulator ready in
    0.05 s (``scenario``: ``perftriage demo --scenario NAME``)."""
    cockpit = build(Globals(sessions_dir=tmp_path / "sessions"), 40.0, tmp_path, scenario)
    cockpit.config.servers[0].args["startup"] = "0.05"
    return cockpit


@contextlib.asynccontextmanager
async def running_demo(tmp_path: Path, scenario: str | None = None) -> AsyncIterator[Cockpit]:
    """The demo's cockpit started, without a UI, its server launched;
    stopped (and the simulator with it) on the way out. With a scenario its
    GPUs and CPU contention are the simulated server's (NVML, PSI and the
    cgroup's counters answered by it) until then."""
    cockpit = fast_demo(tmp_path, scenario)
    with simulated_host(cockpit):
        await cockpit.start()
        try:
            await start_demo(cockpit)
            yield cockpit
        finally:
            await cockpit.stop()
