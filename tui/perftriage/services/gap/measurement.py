"""Measure the gap on one host for S seconds (``perftriage gap``).

GPM counters come from the host's counter source (local NVML GPM, else one
``nvidia-smi dmon`` stream); the token rate and batch size from the decode
lines the server log gained during the same window. The peak comes from the
host's NVML (bus width x clock), else the table by GPU name; NVLink capacity
from ``nvidia-smi nvlink -s``.

The gap measures; what it means is the triage's (:func:`judge`): the
window's readings go into a recording as the cockpit would have recorded
them, and the triage's phase of it is the diagnosis, so ``perftriage gap``
and ``perftriage triage`` cannot disagree.
"""

from __future__ import annotations

import asyncio
import shlex
import statistics
from dataclasses import dataclass
from typing import Any

import msgspec

from perftriage.core.analysis import gap as gap_math
from perftriage.core.compare.recording import Recording
from perftriage.core.gpus import peak_bandwidth
from perftriage.core.model.events import GapSample, GpuCounters, GpuCountersSample
from perftriage.core.triage.phase import Phase
from perftriage.core.triage.phases import host_phases
from perftriage.core.parse import logparse
from perftriage.services.sources.gpm_snapshot import is_local
from perftriage.services.sources.gpm_remote import RemoteGpmSource, table_peaks
from perftriage.services.sources.gpm_local import LocalGpmSource
from perftriage.services.sampling.remote_sampler import fetch_info
from perftriage.transport.base import Transport, TransportError

LOG_READ_CAP = 4 * 1024 * 1024  # bytes of log read per window


@dataclass
class LogWindow:
    """Where a log stood when the window opened (its size in bytes)."""

    transport: Transport
    path: str
    start: int = 0

    async def size(self) -> int:
        res = await self.transport.run(f"wc -c < {shlex.quote(self.path)}", timeout=15)
        if res.exit_status != 0:
            raise FileNotFoundError(f"{self.path}: {(res.stderr or res.stdout).strip()[:200]}")
        return int(res.stdout.strip() or 0)

    async def open(self) -> None:
        self.start = await self.size()

    async def new_lines(self) -> list[str]:
        """The lines written since :meth:`open` (the last 200 lines if none were)."""
        q = shlex.quote(self.path)
        cmd = f"tail -c +{self.start + 1} {q} | head -c {LOG_READ_CAP}"
        lines = (await self.transport.run(cmd, timeout=30)).stdout.splitlines()
        if not any(_decode(line) for line in lines):
            lines = (await self.transport.run(f"tail -n 200 {q}", timeout=30)).stdout.splitlines()
        return lines


def _decode(line: str) -> logparse.Metric | None:
    rec = logparse.parse_line(line)
    if isinstance(rec, logparse.Metric) and rec.kind != "prefill" and rec.gen_tps:
        return rec
    return None


def token_rate(lines: list[str]) -> tuple[float | None, int | None]:
    """Median generation tok/s and batch size of the decode lines. With
    data-parallel engines (vLLM ``Engine NNN``, SGLang ``DPn``) each
    engine's median is taken and the engines are summed, never averaged."""
    recs = [r for r in map(_decode, lines) if r is not None]
    if not recs:
        return None, None
    by_engine: dict[int | None, list[logparse.Metric]] = {}
    for r in recs:
        by_engine.setdefault(r.engine_index, []).append(r)
    tps = sum(statistics.median(r.gen_tps for r in rs if r.gen_tps is not None)  # all: see _decode
              for rs in by_engine.values())
    running = [statistics.median(r.running for r in rs if r.running is not None)
               for rs in by_engine.values() if any(r.running is not None for r in rs)]
    return tps, (round(sum(running)) if running else None)


def log_estimates(lines: list[str]) -> tuple[float | None, float | None]:
    """(median engine read GB/s per GPU, median accept length) of the log's
    metric lines that carry them (SGLang MFU / spec parts, vLLM MFU and
    SpecDecoding lines); None where none does."""
    recs = [r for r in map(logparse.parse_line, lines) if isinstance(r, logparse.Metric)]
    reads = [r.engine_read_gbs for r in recs if r.engine_read_gbs is not None]
    accepts = [r.spec_accept_len for r in recs if r.spec_accept_len]
    return (statistics.median(reads) if reads else None,
            statistics.median(accepts) if accepts else None)


def mean_counters(samples: list[GpuCountersSample]) -> list[GpuCounters]:
    """Per GPU, the mean of every field over the window."""
    by_gpu: dict[int, list[GpuCounters]] = {}
    for s in samples:
        for c in s.gpus:
            by_gpu.setdefault(c.index, []).append(c)
    out = []
    for index, cs in sorted(by_gpu.items()):
        fields = {}
        for f in ("dram_busy_pct", "dram_bw_gbs", "sm_active_pct", "sm_occupancy_pct",
                  "tensor_active_pct", "nvlink_rx_gbs", "nvlink_tx_gbs", "util_pct"):
            vals = [getattr(c, f) for c in cs if getattr(c, f) is not None]
            fields[f] = round(statistics.fmean(vals), 2) if vals else None
        out.append(GpuCounters(index=index, name=cs[-1].name, peak_gbs=cs[-1].peak_gbs,
                               stuck=cs[-1].stuck, **fields))
    return out


async def gpu_names(transport) -> dict[int, str]:
    try:
        res = await transport.run("nvidia-smi --query-gpu=index,name --format=csv,noheader", timeout=20)
    except TransportError:
        return {}
    names = {}
    for line in res.stdout.splitlines():
        idx, _, name = line.partition(",")
        if idx.strip().isdigit():
            names[int(idx)] = name.strip()
    return names


async def nvlink_capacity(transport) -> dict[int, float]:
    try:
        res = await transport.run("nvidia-smi nvlink -s 2>&1", timeout=20)
    except TransportError:
        return {}
    return gap_math.parse_nvlink_status(res.stdout)


async def collect(host, seconds: float, *, nvml=None, warmup_s: float = 15.0,
                  on_window_open=None) -> tuple[list[GpuCountersSample], str | None]:
    """Counter samples over ``seconds`` once the source gives values
    (GPM needs a sample pair; dmon prints '-' twice first)."""
    got: list[GpuCountersSample] = []
    src: LocalGpmSource | RemoteGpmSource
    if is_local(host):
        src = LocalGpmSource(host.name, got.append, nvml=nvml)
    else:
        info = await fetch_info(host.transport)
        names = await gpu_names(host.transport)
        src = RemoteGpmSource(host.name, host.transport, got.append,
                              table_peaks(names, info.get("bandwidth_gbs")),
                              python=host.config.python)
    task = asyncio.create_task(src.run())
    try:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + warmup_s
        while not got and not task.done() and loop.time() < deadline:
            await asyncio.sleep(0.05)
        if not got or got[-1].source == "unavailable":
            return [], (got[-1].error if got else src.reason or "no GPM reading within "
                        f"{warmup_s:g}s")
        got.clear()
        if on_window_open is not None:
            await on_window_open()
        await asyncio.sleep(seconds)
        while not got and not task.done():  # at least one interval inside the window
            await asyncio.sleep(0.05)
        return list(got), None
    finally:
        await src.stop()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


@dataclass
class Measured:
    """The gap's figures over the window, and the triage of the window."""

    gap: gap_math.GapResult
    triage: Phase | None

    def public(self) -> dict[str, Any]:
        """``perftriage gap --json``: the figures, and ``triage`` (the phase's
        ``top`` cause and its findings, as ``perftriage triage --json``).
        ``verdict`` / ``verdict_kind`` are the top finding's line and cause,
        kept for a release (deprecated: read ``triage``)."""
        top = self.triage.top if self.triage is not None else None  # the one top()
        cause = top.cause if top is not None else ""
        out: dict[str, Any] = {}
        for key, value in self.gap.public().items():
            out[key] = value
            if key == "gpus":  # where the documented shape has had it
                out["verdict"] = top.line() if top is not None else ""
        out["verdict_kind"] = cause
        out["triage"] = None if self.triage is None else {
            "from": round(self.triage.start, 3), "to": round(self.triage.end, 3),
            "top": cause, "findings": [f.public() for f in self.triage.findings]}
        return out


def judge(host: str, result: gap_math.GapResult, samples: list[GpuCountersSample],
          tps: float | None, batch: int | None) -> Phase | None:
    """The triage of the window: one reading a second of the gap's figures,
    the counters (and NVML's utilisation beside them: the GPU's busy share)
    and the log's decode rate, as the cockpit records them, through the
    triage's own phases."""
    rec = Recording(name=f"gap {host}")
    figures = result.event_fields()
    n = max(1, len(samples))
    for i in range(n):
        t = float(i)
        rec.feed(GapSample(t=t, host=host, **figures))
        if i < len(samples):
            rec.feed(msgspec.structs.replace(samples[i], t=t))
            utils = [c.util_pct for c in samples[i].gpus if c.util_pct is not None]
            if utils:
                rec.add("gpu_util", host, t, sum(utils) / len(utils))
        rec.add("decode_tps", host, t, tps)
        rec.add("running", host, t, batch)
    phases = host_phases(rec, host, 0.0, float(n - 1))
    return phases[-1] if phases else None


async def measure(host, *, bytes_gb: float, seconds: float = 5.0, n_gpus: int | None = None,
                  log_host=None, log_path: str | None = None, nvml=None) -> Measured:
    """The gap on ``host`` over ``seconds`` and the triage of it; raises
    FileNotFoundError for a missing log."""
    if not is_local(host):  # unreachable is its own failure (exit 3), not "no counters"
        res = await host.transport.run("true", timeout=30)
        if res.timed_out:
            raise TransportError(f"no answer within 30s from {host.name}")
    window = LogWindow(log_host.transport, log_path) if log_host and log_path else None
    if window is not None:
        await window.size()  # a missing log is bad input: fail before sampling
    samples, error = await collect(host, seconds, nvml=nvml,
                                   on_window_open=window.open if window else None)
    tps = batch = read = accept = None
    if window is not None:
        lines = await window.new_lines()
        tps, batch = token_rate(lines)
        read, accept = log_estimates(lines)
    counters = mean_counters(samples)
    capacity = await nvlink_capacity(host.transport) if any(
        c.nvlink_rx_gbs for c in counters) else {}
    peak = statistics.fmean([c.peak_gbs for c in counters if c.peak_gbs]) if any(
        c.peak_gbs for c in counters) else None
    if peak is None and not counters:
        names = await gpu_names(host.transport)
        peak = peak_bandwidth(names.get(0)).gbs if names else None
        n_gpus = n_gpus or len(names) or None
    source = samples[-1].source if samples else "unavailable"
    result = gap_math.compute(
        bytes_gb=bytes_gb, counters=counters, peak_gbs=peak, n_gpus=n_gpus, tokens_per_s=tps,
        batch=batch, nvlink_capacity_gbs=min(capacity.values()) if capacity else None,
        source=source, error=error, engine_read_gbs=read, accept_len=accept)
    return Measured(result, judge(host.name, result, samples, tps, batch))
