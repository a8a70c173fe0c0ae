"""Every kind of source a cockpit runs, in one place: how each starts with
the cockpit, and how it joins a running one.

A kind is a :class:`SourceKind`, declared by its own module next to its
factory. ``start`` has one shape, ``(config, registry, session) ->
Iterable[Source]``: it reads what it needs from the config (the sampling
period is ``config.ui.sample_interval``), the hosts from the registry, and
emits into the session. A kind that can join at run time (from the palette)
also names the word its ``cockpit.added`` event records (``joins``) and how
it is made from what the person typed (``join``); a continued investigation
starts it again from that same event (``Cockpit.resume``). Nothing else names
a kind: :data:`SOURCE_KINDS` lists them in the order the cockpit starts
them, so a new kind of source is one module and one line here.
"""

from __future__ import annotations

from perftriage.core.model.events import Growable
from perftriage.services.sources.base import SourceKind
from perftriage.services.sources.checks import CHECKS
from perftriage.services.sources.counters import COUNTERS
from perftriage.services.sources.engine_metrics import ENGINE
from perftriage.services.sources.fleet import FLEET
from perftriage.services.sources.gap_monitor import GAP
from perftriage.services.sources.samplers import SAMPLERS

SOURCE_KINDS: tuple[SourceKind, ...] = (
    SAMPLERS,  # per host: its sampler, and its SSH connection (Hosts pane)
    COUNTERS,  # per host: GPU bandwidth counters (NVML GPM / nvidia-smi dmon)
    GAP,  # the live gap recorder over those counters
    CHECKS,  # hypotheses' checks against the signals, once a second
    ENGINE,  # engine /metrics of hosts and server profiles (metrics_url); joins: "engine"
    FLEET,  # the Fleet view's Prometheus reads ([fleet] prometheus); joins: "prometheus"
)


def joining(what: Growable) -> SourceKind | None:
    """The kind that joins as ``what`` (a ``cockpit.added`` word), if any."""
    return next((k for k in SOURCE_KINDS if k.joins == what), None)
