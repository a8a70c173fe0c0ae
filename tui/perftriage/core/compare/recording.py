"""One pass over a recording's events: what a before/after comparison reads.

:class:`Recording` is fed events one at a time (a transcript streamed by
:func:`perftriage.core.compare.load.load`, or the live session's events
for the cockpit's baseline) and keeps

- a time series per metric, host and GPU (:data:`METRICS`): each reading
  with its session time, read from the same parsers the reducer uses (a log
  batch's scan through :class:`LogMetrics`, engine scrapes through
  ``engine_window.derive``), so the figures are the ones the cockpit showed;
- the timelines of what else may differ between two slices: runs, server
  starts with their command, version probes, ``/get_server_info`` answers,
  hypothesis statuses and check verdicts, profile captures, GPU models.

Readings become per-second readings when a slice is cut
(:meth:`Series.per_second`): the median of each whole second that has any.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from typing import Any

from perftriage.core.compare.readings import GPU_READINGS, fields, host_value
from perftriage.core.compare.series import MAX_READING, Series  # noqa: F401 (re-exported)
from perftriage.core.compare.stats import Better
from perftriage.core.model import events as ev
from perftriage.core.model.check_state import Verdict
from perftriage.core.model.engine_window import derive, measured_ms_per_token
from perftriage.core.parse.engine_metrics import EngineSnapshot
from perftriage.core.parse.log_metrics import LogMetrics


@dataclass(frozen=True)
class MetricDef:
    id: str
    label: str
    unit: str
    better: Better
    per_gpu: str = ""  # how GPUs make the host's reading: "mean" / "sum" ("": per host only)
    # what the slices ran under (load, power): a change is "changed", never better or worse
    context: bool = False


METRICS: dict[str, MetricDef] = {m.id: m for m in (
    MetricDef("decode_tps", "decode throughput", "tok/s", "higher"),
    MetricDef("engine_gen_tps", "decode throughput (engine)", "tok/s", "higher"),
    MetricDef("ms_per_token", "ms/token (engine ITL mean)", "ms", "lower"),
    MetricDef("itl_p50", "ITL p50", "ms", "lower"),
    MetricDef("itl_p90", "ITL p90", "ms", "lower"),
    MetricDef("itl_p99", "ITL p99", "ms", "lower"),
    MetricDef("ttft_p50", "TTFT p50", "ms", "lower"),
    MetricDef("ttft_p90", "TTFT p90", "ms", "lower"),
    MetricDef("running", "running requests", "req", "higher", context=True),
    MetricDef("queued", "queued requests", "req", "lower", context=True),
    MetricDef("engine_running", "running requests (engine)", "req", "higher", context=True),
    MetricDef("engine_queued", "queued requests (engine)", "req", "lower", context=True),
    MetricDef("gap", "gap to the floor", "×", "lower"),
    # the host's from the live gap; per GPU from the GPM counters
    MetricDef("dram_gbs", "achieved DRAM GB/s", "GB/s", "higher", per_gpu="sum"),
    MetricDef("useful_gbs", "useful GB/s", "GB/s", "higher"),
    MetricDef("traffic_ratio", "traffic ratio", "×", "lower"),
    MetricDef("idle_pct", "GPU idle (gap)", "%", "lower"),
    MetricDef("sm_active_pct", "SM active", "%", "higher", per_gpu="mean"),
    MetricDef("power_w", "power", "W", "lower", per_gpu="sum", context=True),
)}
# a host sample's CPU readings kept as series (the triage's witnesses read them)
CPU_METRICS = tuple(series for series, _ in fields("host.sample"))
GAP_READINGS = fields("gap.sample")
HOST_READINGS = fields("host.sample")
# readings kept for the comparability checks only, never judged
CONTEXT_ONLY = {"context_tokens": "context (#token)", "batch": "batch"}

_TOKENS = re.compile(r"Decode batch[.,] .*?#token: ([0-9]{1,15})(?![0-9])")
# SGLang's common decode line (batch_scan's shape, no data-parallel tag) as
# (running, #token, gen tok/s, queued), over many batches joined: a busy
# server's log is read by one findall per :data:`_QUEUED_LINES` lines. At most
# 12 whole digits, so every value it reads is below series.MAX_READING (1e12)
# and goes in unchecked; a longer number (up to logparse.MAX_DIGITS) takes the
# general parse, which checks it
_DECODE_ROWS = re.compile(
    r"^\[[0-9]{4}-[0-9][0-9]-[0-9][0-9] [0-9][0-9]:[0-9][0-9]:[0-9][0-9](?:\.[0-9]+)?"
    r"(?: (?:TP|PP|EP|CP)[0-9]+)*\] Decode batch[.,] "
    r"#running-req: ([0-9]{1,12}), #token: ([0-9]{1,12}), token usage: ([0-9]{1,12}(?:\.[0-9]{1,15})?), "
    r"(?:cuda graph: (?:True|False), )?"
    r"gen throughput \(token/s\): ([0-9]{1,12}(?:\.[0-9]{1,15})?), #queue-req: ([0-9]{1,12})(?:, )?$",
    re.M)
_QUEUED_LINES = 512
_MODEL_ARG = re.compile(r"(?:^|\s)(?:--model-path|--model|--served-model-name)[ =](\S+)")

# NVML clock-event reasons that slow a busy GPU (not gpu_idle, not a clocks setting)
SLOWDOWNS = frozenset({"sw_power_cap", "hw_slowdown", "sw_thermal_slowdown",
                       "hw_thermal_slowdown", "hw_power_brake_slowdown"})

SeriesKey = tuple[str, str, int]  # (metric id, host, GPU index or -1 for the host)


@dataclass(frozen=True)
class Stamped:
    t: float
    value: Any


@dataclass
class _ProbeSeen:
    kind: str
    host: str
    args: list[str]


@dataclass
class _HostSlots:
    """What a host's samples re-read: the series its readings went to (by
    series name; made at a host's first reading, as :meth:`Recording._series`
    would), and its GPUs as (index, name, UUID) as last seen."""

    series: dict[str, Series] = field(default_factory=dict)
    gpu_ids: list[tuple[int, str, str]] | None = None


@dataclass
class Recording:
    """Everything a comparison reads, fed event by event (see the module doc)."""

    name: str = ""
    # read through the ``series`` property: it reads the queued log batches first, so
    # a loop over the series never sees one appear under it (a live report crashed so)
    _all: dict[SeriesKey, Series] = field(default_factory=dict)
    duration: float = 0.0
    segments: list[tuple[int, float]] = field(default_factory=list)  # (run, start t)
    servers: list[ev.ServerEvent] = field(default_factory=list)
    profiles: list[ev.ProfileCaptured] = field(default_factory=list)
    # (t, host, {package: version}) of each finished version probe
    versions: list[tuple[float, str, dict[str, str | None]]] = field(default_factory=list)
    server_info: list[tuple[float, str, dict[str, Any]]] = field(default_factory=list)
    # hypothesis id -> [(t, title, status)]; "deleted" once removed
    hypotheses: dict[str, list[tuple[float, str, str]]] = field(default_factory=dict)
    # hypothesis id -> [(t, scope, verdict)]
    checks: dict[str, list[tuple[float, str, Verdict]]] = field(default_factory=dict)
    # host -> [(t, (GPU names...))] on each change
    gpus: dict[str, list[tuple[float, tuple[str, ...]]]] = field(default_factory=dict)
    # host -> its GPUs' UUIDs as last read (hosts of one machine: core/triage/same_machine.py)
    gpu_uuids: dict[str, frozenset[str]] = field(default_factory=dict)
    # log source id -> host
    log_hosts: dict[str, str] = field(default_factory=dict)
    # finished stacks and ncu probes: (t, host, probe id, detail), what the triage reads
    stacks: list[tuple[float, str, str, dict[str, Any]]] = field(default_factory=list)
    ncu: list[tuple[float, str, str, dict[str, Any]]] = field(default_factory=list)
    # host -> [(t, GPU index, clock-event reasons, SM clock / its max or None)]
    # while a GPU was slowed
    throttles: dict[str, list[tuple[float, int, tuple[str, ...], float | None]]] = field(
        default_factory=dict)
    # the latest baseline.marked (None once cleared)
    baseline: ev.BaselineMarked | None = None
    _logs: dict[str, LogMetrics] = field(default_factory=dict, repr=False)
    _engines: dict[str, tuple[float, EngineSnapshot]] = field(default_factory=dict, repr=False)
    _probes: dict[str, _ProbeSeen] = field(default_factory=dict, repr=False)
    _memo: dict[tuple, tuple[list[float], list[float]]] = field(default_factory=dict, repr=False)
    # read a transcript's log batches many at a time by one regex (False: batch
    # by batch from their scans, as the live session has them)
    bulk_logs: bool = True
    # fed live: a source's batches are read at most this often (0: every one)
    log_every_s: float = 0.0
    _log_read_t: dict[str, float] = field(default_factory=dict, repr=False)
    _log_queue: list[ev.LogLines] = field(default_factory=list, repr=False)
    _queued_lines: int = 0
    # host -> [(t, GPU indexes, power W)] not yet in the series
    _power: dict[str, list[tuple[float, tuple[int, ...], tuple[float, ...]]]] = field(
        default_factory=dict, repr=False)
    _pending_power: int = 0
    # host -> what its samples keep re-reading (see :class:`_HostSlots`)
    _slots: dict[str, _HostSlots] = field(default_factory=dict, repr=False)

    # --- reading --------------------------------------------------------------

    def add(self, metric: str, host: str, t: float, value: float | None, gpu: int = -1) -> None:
        if value is None or value != value:
            return
        self._series(metric, host, gpu).add(t, float(value))

    @property
    def series(self) -> dict[SeriesKey, Series]:
        """Every series, the queued log batches read first."""
        self.flush()
        return self._all

    def _series(self, metric: str, host: str, gpu: int = -1) -> Series:
        key = (metric, host, gpu)
        s = self._all.get(key)
        if s is None:
            s = self._all[key] = Series()
        return s

    def hosts(self) -> list[str]:
        self.flush()
        return list(dict.fromkeys(h for _, h, _ in self.series))

    def readings(self, metric: str, host: str, start: float, end: float,
                 gpu: int = -1) -> tuple[list[float], list[float]]:
        """Per-second readings in ``[start, end]`` (remembered until the series grows)."""
        self.flush()
        s = self._all.get((metric, host, gpu))
        if s is None:
            return [], []
        memo_key = (metric, host, gpu, start, end, len(s.t))
        found = self._memo.get(memo_key)
        if found is None:
            if len(self._memo) > 4096:
                self._memo.clear()
            found = self._memo[memo_key] = s.per_second(start, end)
        return found

    def prune(self, before: float) -> None:
        """Forget the readings older than ``before`` (a live recording keeps a few minutes)."""
        self.flush()
        for key, s in list(self._all.items()):
            i = bisect_left(s.t, before)
            if i:
                del s.t[:i]
                del s.v[:i]
            if not s.t:
                del self._all[key]
        self._slots.clear()  # (they hold series just deleted)
        for host, rows in self.throttles.items():
            self.throttles[host] = [r for r in rows if r[0] >= before]
        self._memo.clear()

    def has_readings(self, metric: str, host: str, start: float, end: float,
                     gpu: int = -1) -> bool:
        self.flush()
        s = self._all.get((metric, host, gpu))
        return s is not None and bisect_left(s.t, start) < bisect_right(s.t, end)

    # --- feeding --------------------------------------------------------------

    def feed(self, e: ev.Event) -> None:
        if e.t > self.duration:
            self.duration = e.t
        handler = _FEEDERS.get(type(e))
        if handler is not None:
            handler(self, e)

    def _log_lines(self, e: ev.LogLines) -> None:
        """Queued: read with the batches around it (:meth:`flush`); fed live
        (``bulk_logs`` False), at once from the batch's own scan, which the
        reducer has made already."""
        if not e.lines:
            return
        if not self.bulk_logs:
            if e.t - self._log_read_t.get(e.source_id, -1e9) < self.log_every_s:
                return  # a flood: a few batches a second make the per-second readings
            self._log_read_t[e.source_id] = e.t
            self._parse_batch(e)
            return
        self._log_queue.append(e)
        self._queued_lines += len(e.lines)
        if self._queued_lines >= _QUEUED_LINES:
            self.flush()

    def flush(self) -> None:
        """Read the queued log batches: one findall over all of them when
        every line is a common decode line (what a busy server writes), else
        each batch through the reducer's parse (:meth:`_parse_batch`)."""
        if self._power:
            self._flush_power()
        queue, n = self._log_queue, self._queued_lines
        if not queue:
            return
        self._log_queue, self._queued_lines = [], 0
        rows = _decode_rows(queue, n)
        if rows is not None:
            self._decode_lines(queue, rows)
            return
        # a batch holds another line (an error, a prefill): that batch through the
        # full parse, the runs of decode-only batches around it still read in bulk
        run: list[ev.LogLines] = []
        run_rows: list[tuple[str, ...]] = []
        for e in queue:
            mine = _decode_rows([e], len(e.lines))
            if mine is not None:
                run.append(e)
                run_rows += mine
                continue
            if run:
                self._decode_lines(run, run_rows)
                run, run_rows = [], []
            self._parse_batch(e)
        if run:
            self._decode_lines(run, run_rows)

    def _decode_lines(self, queue: list[ev.LogLines], rows: list[tuple[str, ...]]) -> None:
        """Batches of common decode lines alone, read from their ``rows``
        (:func:`_decode_rows`) into the per-host series."""
        columns = list(zip(*rows))  # running, #token, usage, gen, queued
        sources = {e.source_id for e in queue}
        for source in sources:
            mine = queue if len(sources) == 1 else [e for e in queue if e.source_id == source]
            picked = columns if len(sources) == 1 else list(zip(*[
                row for e, first in _offsets(queue) if e.source_id == source
                for row in rows[first:first + len(e.lines)]]))
            times = [e.t for e in mine for _ in e.lines]
            ordered = times == sorted(times)  # (once for the five series)
            host = self.log_hosts.get(source, "?")
            for metric, col in (("decode_tps", 3), ("running", 0), ("queued", 4),
                                ("context_tokens", 1), ("token_usage", 2)):
                self._series(metric, host).extend_at(times, map(float, picked[col]),
                                                     bounded=True, ordered=ordered)

    def _parse_batch(self, e: ev.LogLines) -> None:
        lm = self._logs.get(e.source_id)
        if lm is None:
            lm = self._logs[e.source_id] = LogMetrics()
        retracted = lm.retractions
        lm.feed(e.lines, 1, e.scan())
        host = self.log_hosts.get(e.source_id, "?")
        if lm.retractions > retracted:  # the triage's kv-pressure reads these
            self.add("retractions", host, e.t, lm.retractions - retracted)
        for metric, values in (("decode_tps", lm.gen_tps), ("running", lm.running),
                               ("queued", lm.queued), ("token_usage", lm.token_usage)):
            if values:
                self._series(metric, host).extend(e.t, values)
                values.clear()  # the reducer's parse, drained: the next batch's readings only
        lm.input_tps.clear()
        if "#token" in e.lines[-1]:
            found = _TOKENS.findall("\n".join(e.lines))
            if found:
                self._series("context_tokens", host).extend(e.t, map(float, found))

    def _engine(self, e: ev.EngineSample) -> None:
        prev = self._engines.get(e.source)
        self._engines[e.source] = (e.t, e.snapshot)
        host = e.host
        gauges = e.snapshot.gauges
        self.add("engine_running", host, e.t, gauges.get("running"))
        self.add("engine_queued", host, e.t, gauges.get("queued"))
        # KV cache usage, 0-1: SGLang's sglang:token_usage, vLLM's kv_cache_usage_perc
        self.add("engine_token_usage", host, e.t, gauges.get("token_usage"))
        if prev is None or e.t <= prev[0]:
            return
        window = [prev, (e.t, e.snapshot)]
        fig = derive(window)
        if fig.gen_tps is not None and fig.gen_tps > 0:
            self.add("engine_gen_tps", host, e.t, fig.gen_tps)
            self.add("ms_per_token", host, e.t, measured_ms_per_token(window))
        for metric, q in (("itl", fig.itl_s), ("ttft", fig.ttft_s)):
            for name in ("p50", "p90", "p99"):
                value = getattr(q, name)
                if value is not None and f"{metric}_{name}" in METRICS:
                    self.add(f"{metric}_{name}", host, e.t, value * 1000.0)

    def _gap(self, e: ev.GapSample) -> None:
        for metric, name in GAP_READINGS:  # core/compare/readings.py
            self.add(metric, e.host, e.t, getattr(e, name))

    def _counters(self, e: ev.GpuCountersSample) -> None:
        sm: list[float] = []
        for g in e.gpus:
            if g.dram_bw_gbs is not None and not g.stuck:
                self.add("dram_gbs", e.host, e.t, g.dram_bw_gbs, gpu=g.index)
            if g.sm_active_pct is not None and not g.stuck:
                self.add("sm_active_pct", e.host, e.t, g.sm_active_pct, gpu=g.index)
                sm.append(g.sm_active_pct)
        if sm:
            self.add("sm_active_pct", e.host, e.t, sum(sm) / len(sm))

    def _host_sample(self, e: ev.HostSample) -> None:
        self.host_reading(e.host, e.t, e.gpu_age_s is not None, e.gpus, e)

    def host_reading(self, host: str, t: float, stale: bool, gpus: list[Any], cpu: Any) -> None:
        """A host sample: ``gpus`` have ``index, name, uuid, power_w,
        throttle`` and the fields of the GPU readings, ``cpu`` the host.sample
        fields of the readings (core/compare/readings.py; a HostSample, or the
        transcript loader's lighter struct). A long transcript holds ~100k of
        these: what does not change from one to the next (the GPUs, the
        series) is looked up once per host (:class:`_HostSlots`)."""
        slots = self._slots.get(host)
        if slots is None:
            slots = self._slots[host] = _HostSlots()
        series = slots.series
        if gpus:
            ids = [(g.index, g.name, g.uuid) for g in gpus]
            if ids != slots.gpu_ids:  # the first sample, or other GPUs
                slots.gpu_ids = ids
                if uuids := frozenset(u for _, _, u in ids if u):
                    self.gpu_uuids[host] = uuids
                names = tuple(n for _, n, _ in ids)
                seen = self.gpus.setdefault(host, [])
                if not seen or seen[-1][1] != names:
                    seen.append((t, names))
            if not stale:
                self._gpu_power(host, t, gpus)
                for r in GPU_READINGS:  # gpu_util, gpu_mem_pct
                    if (value := host_value(r, gpus)) is not None:
                        if (one := series.get(r.series)) is None:
                            one = series[r.series] = self._series(r.series, host, -1)
                        one.add(t, value)
                for g in gpus:
                    if g.throttle and (slow := tuple(r for r in g.throttle if r in SLOWDOWNS)):
                        clock, top = getattr(g, "sm_clock_mhz", None), getattr(
                            g, "sm_clock_max_mhz", None)
                        ratio = clock / top if clock and top else None
                        self.throttles.setdefault(host, []).append((t, g.index, slow, ratio))
        for metric, name in HOST_READINGS:  # core/compare/readings.py
            if (value := getattr(cpu, name)) is not None:
                if (one := series.get(metric)) is None:
                    one = series[metric] = self._series(metric, host, -1)
                one.add(t, value)

    def _gpu_power(self, host: str, t: float, gpus: list[Any]) -> None:
        """The GPUs' power readings, queued (added in bulk by :meth:`flush`)."""
        powers = [g.power_w for g in gpus]
        if None in powers:
            index = tuple(g.index for g in gpus if g.power_w is not None)
            powers = [p for p in powers if p is not None]
        else:
            index = tuple(g.index for g in gpus)
        if index:
            self._power.setdefault(host, []).append((t, index, tuple(powers)))
            self._pending_power += 1
            if self._pending_power >= 4096:
                self._flush_power()

    def _flush_power(self) -> None:
        pending, self._power, self._pending_power = self._power, {}, 0
        for host, rows in pending.items():
            i = 0
            while i < len(rows):  # runs of samples with the same GPUs
                j = i + 1
                while j < len(rows) and rows[j][1] == rows[i][1]:
                    j += 1
                times = [r[0] for r in rows[i:j]]
                powers = [r[2] for r in rows[i:j]]
                for k, column in zip(rows[i][1], zip(*powers)):
                    self._series("power_w", host, k).extend_at(times, column)
                self._series("power_w", host).extend_at(times, map(sum, powers))
                i = j

    def _probe_queued(self, e: ev.ProbeQueued) -> None:
        self._probes[e.probe_id] = _ProbeSeen(e.kind, e.host, list(e.args))

    def _probe_finished(self, e: ev.ProbeFinished) -> None:
        seen = self._probes.get(e.probe_id)
        if seen is None or e.status not in ("ok", "failed"):
            return
        detail = e.detail or {}
        if seen.kind in ("stacks", "ncu") and e.status == "ok" and detail:
            (self.stacks if seen.kind == "stacks" else self.ncu).append(
                (e.t, seen.host, e.probe_id, detail))
        elif seen.kind == "version" and isinstance(detail.get("versions"), dict):
            found = {str(k): (None if v is None else str(v))
                     for k, v in detail["versions"].items()}
            self.versions.append((e.t, seen.host, found))
        elif seen.kind == "http" and detail.get("endpoint") in ("server_info", "get_server_info") \
                and isinstance(detail.get("json"), dict):
            info = {str(k): v for k, v in detail["json"].items()
                    if isinstance(v, (str, int, float, bool)) or v is None}
            self.server_info.append((e.t, seen.host, info))

    def _hyp(self, hyp_id: str, t: float, title: str | None, status: str | None) -> None:
        rows = self.hypotheses.setdefault(hyp_id, [])
        last_title, last_status = (rows[-1][1], rows[-1][2]) if rows else ("", "open")
        rows.append((t, title if title is not None else last_title,
                     status if status is not None else last_status))

    def models(self, start: float, end: float) -> set[str]:
        """Models the servers serving ``[start, end]`` were started with: the
        latest start up to a second after ``start``, and any later one."""
        out: set[str] = set()
        latest = None
        for s in self.servers:
            if not s.command or s.state != "starting":
                continue
            if s.t <= start + 1.0:
                latest = s
            elif s.t <= end:
                out |= set(_MODEL_ARG.findall(s.command))
        if latest is not None:
            out |= set(_MODEL_ARG.findall(latest.command))
        return out


def _segment(r: Recording, e: ev.SegmentStarted) -> None:
    r.segments.append((e.segment, e.t))


def _log_opened(r: Recording, e: ev.LogSourceOpened) -> None:
    r.log_hosts[e.source_id] = e.host


def _server(r: Recording, e: ev.ServerEvent) -> None:
    r.servers.append(e)


def _profile(r: Recording, e: ev.ProfileCaptured) -> None:
    r.profiles.append(e)


def _hyp_added(r: Recording, e: ev.HypothesisAdded) -> None:
    if e.hyp_id not in r.hypotheses:
        r._hyp(e.hyp_id, e.t, e.title, e.status)


def _hyp_updated(r: Recording, e: ev.HypothesisUpdated) -> None:
    if e.hyp_id in r.hypotheses and (e.status is not None or e.title is not None):
        r._hyp(e.hyp_id, e.t, e.title, e.status)


def _hyp_deleted(r: Recording, e: ev.HypothesisDeleted) -> None:
    if e.hyp_id in r.hypotheses:
        r._hyp(e.hyp_id, e.t, None, "deleted")


def _check(r: Recording, e: ev.CheckVerdict) -> None:
    r.checks.setdefault(e.hyp_id, []).append((e.t, e.scope, e.verdict))


def _baseline(r: Recording, e: ev.BaselineMarked) -> None:
    r.baseline = e


def _baseline_cleared(r: Recording, e: ev.BaselineCleared) -> None:
    r.baseline = None


_FEEDERS: dict[type, Any] = {
    ev.LogLines: Recording._log_lines,
    ev.EngineSample: Recording._engine,
    ev.GapSample: Recording._gap,
    ev.GpuCountersSample: Recording._counters,
    ev.HostSample: Recording._host_sample,
    ev.ProbeQueued: Recording._probe_queued,
    ev.ProbeFinished: Recording._probe_finished,
    ev.SegmentStarted: _segment,
    ev.LogSourceOpened: _log_opened,
    ev.ServerEvent: _server,
    ev.ProfileCaptured: _profile,
    ev.HypothesisAdded: _hyp_added,
    ev.HypothesisUpdated: _hyp_updated,
    ev.HypothesisDeleted: _hyp_deleted,
    ev.CheckVerdict: _check,
    ev.BaselineMarked: _baseline,
    ev.BaselineCleared: _baseline_cleared,
}


def _decode_rows(queue: list[ev.LogLines], n: int) -> list[tuple[str, ...]] | None:
    """The (running, #token, usage, gen, queued) of each of the ``n`` lines
    of ``queue``, one findall over them all; None when a line is not a
    common decode line (or a line holds a newline)."""
    blob = "\n".join(line for e in queue for line in e.lines)
    if "Decode batch" not in blob:
        return None
    rows = _DECODE_ROWS.findall(blob)
    return rows if len(rows) == n and blob.count("\n") == n - 1 else None


def _offsets(queue: list[ev.LogLines]):
    """(batch, index of its first line in the joined queue)."""
    first = 0
    for e in queue:
        yield e, first
        first += len(e.lines)


def at(rows: list[tuple[float, Any]] | list, t: float) -> Any:
    """The latest row of a time-ordered list at or before ``t`` (None before the first)."""
    found = None
    for row in rows:
        if row[0] > t:
            break
        found = row
    return found
