"""The table of readings (core/compare/readings.py) is what the recording
feeds and the triage reads: every row's field is a field of its event (and
of the transcript loader's lighter struct), every witness a field of the
triage's Witnesses, and a reading fed as an event reaches its witness."""

from __future__ import annotations

import dataclasses

from perftriage.core.compare import load
from perftriage.core.compare.readings import READINGS, WITNESSED
from perftriage.core.compare.recording import Recording
from perftriage.core.model import events as ev
from perftriage.core.triage.witnesses import Witnesses, witnesses

EVENTS = {"gap.sample": ev.GapSample, "host.sample": ev.HostSample}


def test_every_row_names_real_fields():
    witness_fields = {f.name for f in dataclasses.fields(Witnesses)}
    assert {r.witness for r in WITNESSED} <= witness_fields
    for r in READINGS:
        if r.field:
            assert r.field in EVENTS[r.event].__struct_fields__, r
    light = set(load._HostGpus.__struct_fields__)
    assert {r.field for r in READINGS if r.event == "host.sample" and r.field} <= light
    assert len({r.series for r in READINGS}) == len(READINGS)  # one row a series


def test_a_reading_fed_as_an_event_reaches_its_witness():
    rec = Recording()
    for t in range(5):
        rec.feed(ev.GapSample(host="h", t=float(t), gap=3.0, traffic_ratio=2.5, idle_pct=40.0))
        rec.feed(ev.HostSample(host="h", t=float(t), cpu_pct=55.0, cpu_psi_some=12.0))
    w = witnesses(rec, "h", 0.0, 5.0)
    assert (w.gap, w.traffic_ratio, w.dram_idle_pct) == (3.0, 2.5, 40.0)
    assert (w.cpu_pct, w.cpu_psi_some) == (55.0, 12.0)
    assert w.cpu_throttled_pct is None  # never read: none, never 0
