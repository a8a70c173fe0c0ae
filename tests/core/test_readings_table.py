"""The table of readings (core/compare/readings.py) is what the recording
feeds and the triage reads: every row's field is a field of its event (and
of the transcript loader's lighter struct), every witness a field of the
triage's Witnesses, and a reading fed as an event reaches its witness."""

from __future__ import annotations

import dataclasses

from perftriage.core.compare import load
from perftriage.core.compare.readings import GPU_FIELDS, READINGS, WITNESSED
from perftriage.core.compare.recording import Recording
from perftriage.core.model import events as ev
from perftriage.core.parse.gpu_sample import GpuSample
from perftriage.core.triage.witnesses import Witnesses, witnesses

EVENTS = {"gap.sample": ev.GapSample, "host.sample": ev.HostSample}


def test_every_row_names_real_fields():
    witness_fields = {f.name for f in dataclasses.fields(Witnesses)}
    assert {r.witness for r in WITNESSED} <= witness_fields
    for r in READINGS:
        if r.gpus:  # a field of each GPU of the sample (and what it is a share of)
            assert r.event == "host.sample", r
            assert {r.field, r.of} - {""} <= set(GpuSample.__struct_fields__), r
        elif r.field:
            assert r.field in EVENTS[r.event].__struct_fields__, r
    # the loader's light struct is read from the table: no field of it to keep by hand
    light = set(load._HostGpus.__struct_fields__)
    assert {r.field for r in READINGS if r.event == "host.sample" and r.field
            and not r.gpus} <= light
    assert set(GPU_FIELDS) <= set(load._Gpu.__struct_fields__)
    assert len({r.series for r in READINGS}) == len(READINGS)  # one row a series


def test_a_gpu_reading_reaches_its_witness_live_and_from_a_transcript(tmp_path):
    """NVML's memory used of the total: the fullest GPU's, whether the
    recording is fed the live event or loads the transcript's line through
    the loader's light struct."""
    from perftriage.core.store import transcript

    gpus = [GpuSample(index=0, util_pct=90.0, mem_used_mib=95000.0, mem_total_mib=97887.0),
            GpuSample(index=1, util_pct=70.0, mem_used_mib=80000.0, mem_total_mib=97887.0),
            GpuSample(index=2, util_pct=None, mem_used_mib=None, mem_total_mib=97887.0)]
    samples = [ev.HostSample(host="h", t=float(t), gpus=gpus) for t in range(5)]
    live = Recording()
    for e in samples:
        live.feed(e)
    path = tmp_path / "s.jsonl"
    w = transcript.TranscriptWriter(path, transcript.make_header(
        "2026-12-04T00:00:00+00:00", ["h"], name="s"), background=False)
    for e in samples:
        w.write(e)
    w.close()
    for rec in (live, load.load(path)):
        got = witnesses(rec, "h", 0.0, 5.0)
        assert got.gpu_mem_pct == 100.0 * 95000.0 / 97887.0
        assert got.gpu_util_pct == 80.0  # the mean of the GPUs read
    stale = Recording()
    stale.feed(ev.HostSample(host="h", t=1.0, gpus=gpus, gpu_age_s=12.0))
    assert witnesses(stale, "h", 0.0, 5.0).gpu_mem_pct is None  # stale readings: none


def test_the_engine_s_kv_usage_is_the_witness_without_a_log():
    """SGLang's ``sglang:token_usage`` (vLLM's ``kv_cache_usage_perc``) from
    /metrics: the KV usage the triage reads when no log line says it."""
    from perftriage.core.parse.engine_metrics import EngineSnapshot

    rec = Recording()
    for t in range(5):
        rec.feed(ev.EngineSample(host="h", source="e", t=float(t), snapshot=EngineSnapshot(
            engine="sglang", gauges={"running": 40.0, "queued": 0.0, "token_usage": 0.96})))
    got = witnesses(rec, "h", 0.0, 5.0)
    assert (got.token_usage, got.full_kv_share) == (0.96, 1.0)


def test_a_reading_fed_as_an_event_reaches_its_witness():
    rec = Recording()
    for t in range(5):
        rec.feed(ev.GapSample(host="h", t=float(t), gap=3.0, traffic_ratio=2.5, idle_pct=40.0))
        rec.feed(ev.HostSample(host="h", t=float(t), cpu_pct=55.0, cpu_psi_some=12.0))
    w = witnesses(rec, "h", 0.0, 5.0)
    assert (w.gap, w.traffic_ratio, w.dram_idle_pct) == (3.0, 2.5, 40.0)
    assert (w.cpu_pct, w.cpu_psi_some) == (55.0, 12.0)
    assert w.cpu_throttled_pct is None  # never read: none, never 0
