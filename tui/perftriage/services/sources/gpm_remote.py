"""Per-GPU bandwidth counters of a remote host as a Source: ONE long-lived
command per host, read as it streams (no process per sample after start).

The command first tries the host's own pynvml with the configured python (a
small loop printing one ``@@gpm {json}`` line per interval: GPM metrics,
utilisation, and bus width + max memory clock for the peak). Where that
python has no usable pynvml (exit 3) it becomes ``nvidia-smi dmon
--gpm-metrics 10,2,3,5 -d 1`` in the same shell, parsed by
:class:`perftriage.core.parse.dmon.DmonStream`. Restarted with back-off when
it exits; unavailable counters are reported with the reason, never as 0.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shlex
import time
from collections.abc import Callable

from perftriage.core.analysis import counters as cnt
from perftriage.core.gpus import Peak, peak_bandwidth
from perftriage.core.model.events import GpuCountersSample
from perftriage.core.parse import dmon
from perftriage.core.sanitize import visible
from perftriage.services.sources.gpm_local import MIN_INTERVAL_S, nvml_reason_name
from perftriage.services.sources.base import BaseSource
from perftriage.transport.base import Transport, TransportError

PeakLookup = Callable[[int], tuple[str, Peak]]

# Runs on the host. Exit 3: no usable pynvml (the shell falls back to dmon).
PYNVML_GPM_PY = r"""
import json, sys, time
try:
    import pynvml as nv
    nv.nvmlInit()
except Exception:
    sys.exit(3)
IDS = {"dram": 10, "sm": 2, "occ": 3, "tensor": 5, "nvrx": 60, "nvtx": 61}
def q(f):
    try:
        return f()
    except Exception:
        return None
devs, skipped = [], {}
for i in range(nv.nvmlDeviceGetCount()):
    h = nv.nvmlDeviceGetHandleByIndex(i)
    try:
        mig = q(lambda: nv.nvmlDeviceGetMigMode(h)[0])
        if mig == 1:
            skipped[i] = "MIG"
            continue
        if not nv.nvmlGpmQueryDeviceSupport(h).isSupportedDevice:
            skipped[i] = "NVMLError_NotSupported"
            continue
        s = [nv.nvmlGpmSampleAlloc(), nv.nvmlGpmSampleAlloc()]
    except Exception as e:
        skipped[i] = type(e).__name__
        continue
    n = q(lambda: nv.nvmlDeviceGetName(h))
    n = n.decode() if isinstance(n, bytes) else n
    devs.append([i, h, s, False, n, q(lambda: int(nv.nvmlDeviceGetMemoryBusWidth(h))),
                 q(lambda: nv.nvmlDeviceGetMaxClockInfo(h, nv.NVML_CLOCK_MEM))])
p = float(sys.argv[1])
while True:
    out = []
    for d in devs:
        i, h, s, primed = d[0], d[1], d[2], d[3]
        vals = {}
        try:
            nv.nvmlGpmSampleGet(h, s[1])
            if primed:
                mg = nv.c_nvmlGpmMetricsGet_t()
                mg.version = nv.NVML_GPM_METRICS_GET_VERSION
                mg.numMetrics = len(IDS)
                mg.sample1, mg.sample2 = s[0], s[1]
                for k, mid in enumerate(IDS.values()):
                    mg.metrics[k].metricId = mid
                nv.nvmlGpmMetricsGet(mg)
                vals = {key: (mg.metrics[k].value if mg.metrics[k].nvmlReturn == 0 else None)
                        for k, key in enumerate(IDS)}
            d[3] = True
            d[2] = [s[1], s[0]]
        except Exception as e:
            skipped[i] = type(e).__name__
        vals.update(i=i, name=d[4], bus=d[5], mclk=d[6], util=q(lambda: nv.nvmlDeviceGetUtilizationRates(h).gpu))
        out.append(vals)
    print("@@gpm " + json.dumps({"gpus": out, "skipped": {str(k): v for k, v in skipped.items()}}), flush=True)
    if not devs:
        sys.exit(4)
    time.sleep(p)
"""


def remote_command(python: str | None = "python3", period_s: float = 1.0) -> str:
    """pynvml on the host when its python has it, else ``nvidia-smi dmon``."""
    smi = f"exec {dmon.dmon_command()} 2>&1"
    if not python:
        return smi
    py = (f"{shlex.quote(python)} -u -c {shlex.quote(PYNVML_GPM_PY)} "
          f"{shlex.quote(f'{max(MIN_INTERVAL_S, period_s):g}')} 2>/dev/null")
    return f"{py}; rc=$?; if [ $rc -eq 3 ] || [ $rc -ge 126 ]; then {smi}; fi; exit $rc"


class RemoteGpmSource(BaseSource):
    """The counters of one remote host from one long-lived command; each complete
    interval (all GPUs) becomes one ``gpu.counters`` event."""

    def __init__(self, host: str, transport: Transport,
                 emit: Callable[[GpuCountersSample], object], peaks: PeakLookup, *,
                 python: str | None = "python3", backoff_max_s: float = 30.0,
                 stall_s: float = 15.0, min_interval_s: float = MIN_INTERVAL_S) -> None:
        super().__init__()
        self.name = f"gpm:{host}"
        self.host: str = host
        self.transport = transport
        self.emit = emit
        self._peaks = peaks
        self.python = python
        self.backoff_max_s = backoff_max_s
        self.stall_s = stall_s
        self.min_interval_s = min_interval_s
        self.starts = 0
        self.stuck = cnt.StuckDetector()
        self._last_emit = 0.0
        self._no_gpm: str | None = None  # the host's pynvml found no GPU with GPM: why

    async def run(self) -> None:
        backoff = 1.0
        while True:
            self.starts += 1
            self._no_gpm = None
            reason = await self._stream_once()
            unavailable = self._no_gpm or (dmon.unavailable_reason([reason]) if reason else None)
            if unavailable:
                self.set_state("down", unavailable)
                self.emit(GpuCountersSample(host=self.host, source="unavailable", error=unavailable))
                backoff = max(backoff, 60.0)  # it will not come back soon: ask rarely
            else:
                self.set_state("retrying", f"GPM stream {reason}")
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, max(self.backoff_max_s, backoff))

    async def _stream_once(self) -> str:
        stream = self.transport.stream_batches(remote_command(self.python))
        parser = dmon.DmonStream()
        got = 0
        try:
            while True:
                try:
                    async with asyncio.timeout(self.stall_s if got else 30.0):
                        batch = await anext(stream)
                except StopAsyncIteration:
                    return _why(parser, got, "exited")
                except TimeoutError:
                    return "stalled"
                got += len(batch)
                rows = []
                for line in batch:
                    if line.startswith("@@gpm "):
                        self._on_nvml_line(line[6:])
                    else:
                        rows.append(line)
                for sample in parser.feed(rows):
                    self._on_dmon_sample(sample)
        except TransportError as exc:
            return exc.reason
        finally:
            with contextlib.suppress(Exception):
                await stream.aclose()  # kills the remote loop

    def _due(self) -> bool:
        now = time.monotonic()
        if now - self._last_emit < self.min_interval_s * 0.9:
            return False
        self._last_emit = now
        return True

    def _on_nvml_line(self, text: str) -> None:
        """One interval from the host's pynvml (no GPU listed: none has GPM, say why)."""
        try:
            doc = json.loads(text)
        except ValueError:
            return
        skipped = {int(k): nvml_reason_name(str(v)) for k, v in (doc.get("skipped") or {}).items()
                   if str(k).isdigit()}
        rows = [g for g in doc.get("gpus") or [] if isinstance(g, dict)]
        if not rows:
            self._no_gpm = next(iter(skipped.values()), "no GPU with GPM counters")
            return
        if not any(g.get("dram") is not None for g in rows) or not self._due():
            return  # the first interval primes the sample pair
        gpus, source = [], None
        for g in rows:
            name = visible(str(g.get("name") or ""))[:80]
            peak = peak_bandwidth(name, _int(g.get("bus")), _num(g.get("mclk")))
            source = source or peak.source
            gpus.append(self.stuck.check(cnt.make_counters(
                int(g.get("i", 0)), name=name, peak_gbs=peak.gbs, dram_busy_pct=_num(g.get("dram")),
                sm_active_pct=_num(g.get("sm")), sm_occupancy_pct=_num(g.get("occ")),
                tensor_active_pct=_num(g.get("tensor")),
                nvlink_rx_gbs=cnt.mibs_to_gbs(_num(g.get("nvrx"))),
                nvlink_tx_gbs=cnt.mibs_to_gbs(_num(g.get("nvtx"))), util_pct=_num(g.get("util")))))
        error = "; ".join(f"GPU {i}: {why}" for i, why in sorted(skipped.items())) or None
        self.set_state("up")
        self.emit(GpuCountersSample(host=self.host, source="nvml-gpm", gpus=gpus, error=error,
                                    peak_source=source))

    def _on_dmon_sample(self, sample: list[dmon.GpmReading]) -> None:
        if not any(r.has_gpm for r in sample) or not self._due():
            return  # dmon's first two intervals: '-' while GPM primes
        gpus, source = [], None
        for r in sample:
            name, peak = self._peaks(r.index)
            source = source or peak.source
            gpus.append(self.stuck.check(cnt.make_counters(
                r.index, name=name, peak_gbs=peak.gbs, dram_busy_pct=r.dram_busy_pct,
                sm_active_pct=r.sm_active_pct, sm_occupancy_pct=r.sm_occupancy_pct,
                tensor_active_pct=r.tensor_active_pct,
                nvlink_rx_gbs=cnt.mibs_to_gbs(r.nvlink_rx_mibs),
                nvlink_tx_gbs=cnt.mibs_to_gbs(r.nvlink_tx_mibs), util_pct=r.util_pct)))
        self.set_state("up")
        self.emit(GpuCountersSample(host=self.host, source="nvidia-smi-dmon", gpus=gpus,
                                    peak_source=source))


def _num(v) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _int(v) -> int | None:
    return int(v) if isinstance(v, int) and not isinstance(v, bool) else None


def _why(parser: dmon.DmonStream, got: int, default: str) -> str:
    if parser.errors:  # remote text: made visible-safe before it is shown or recorded
        return dmon.unavailable_reason(parser.errors) or visible(parser.errors[-1])[:200]
    return default if got else "gave no output"


def table_peaks(names: dict[int, str], nvml_gbs: dict[str, float | None] | None = None) -> PeakLookup:
    """Peak per GPU index for dmon rows: the host's NVML figure when known, else the table."""
    def lookup(index: int) -> tuple[str, Peak]:
        name = names.get(index, "")
        return name, peak_bandwidth(name, measured_gbs=(nvml_gbs or {}).get(str(index)))
    return lookup
