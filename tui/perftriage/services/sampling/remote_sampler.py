"""Samples a remote host without spawning a process per sample.

Two long-running commands per host, each over one channel of the host's
transport (``Transport.stream_batches``):

- ``nvidia-smi --query-gpu=<QUERY_FIELDS> --format=csv,noheader,nounits -lms <period>``
  whose lines are grouped into samples by :class:`perftriage.core.parse.nvsmi.QueryStream`;
- a bash loop of builtins only (``mapfile``, ``read``, ``printf``; it sleeps
  with ``read -t`` on a pipe it holds itself) that prints the ``cpu`` lines of
  ``/proc/stat``, the head of ``/proc/meminfo`` and ``/proc/loadavg`` each
  period, framed by ``@@proc`` / ``@@end``; python3 is the fallback where
  bash is missing.

Either is restarted (with back-off) when it exits or stalls (no line for
``stall_s``). Every ``interval`` the sampler emits one :class:`HostSample`
combining the latest of both; GPU readings older than ``stall_s`` are sent
with ``gpu_age_s`` so the pane greys them and history is not padded with
stale values. Connection failures become :class:`HostStatus` events.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shlex
import time
from collections.abc import AsyncGenerator, Callable, Sequence

from perftriage.core.parse import nvsmi
from perftriage.core.model.host_snapshot import parse_snapshot
from perftriage.core.parse.host_output import parse_info
from perftriage.core.parse.proc import (
    ProcFrame, ProcFrames, cpu_pct, throttled_pct, throttled_time_pct,
)
from perftriage.core.model.events import Event, GpuSample, HostConnState, HostInfo, HostSample, HostStatus
from perftriage.transport.base import MaintainsConnection, Transport, TransportError

log = logging.getLogger(__name__)


# Builtins only: after the start this loop never forks. $1 = period (s).
PROC_FRAME_BASH = r"""
frame() {
  printf '@@proc\n'
  mapfile -t a < /proc/stat
  for l in "${a[@]}"; do [[ $l == cpu* ]] && printf '%s\n' "$l"; done
  mapfile -t -n 5 m < /proc/meminfo
  printf '%s\n' "${m[@]}"
  read -r l < /proc/loadavg
  printf 'loadavg %s\n' "$l"
  [[ -r /proc/pressure/cpu ]] && read -r l < /proc/pressure/cpu && printf 'psi %s\n' "$l"
  [[ -r /sys/fs/cgroup/cpu.pressure ]] && read -r l < /sys/fs/cgroup/cpu.pressure && printf 'cgpsi %s\n' "$l"
  if [[ -r /sys/fs/cgroup/cpu.stat ]]; then
    read -r l _ < /proc/uptime && printf 'uptime %s\n' "$l"
    mapfile -t c < /sys/fs/cgroup/cpu.stat
    for l in "${c[@]}"; do [[ $l == nr_periods* || $l == nr_throttled* || $l == throttled_usec* ]] && printf 'cg %s\n' "$l"; done
  fi
  printf '@@end\n'
}
"""

PROC_LOOP_BASH = PROC_FRAME_BASH + r"""
p=$1
exec {z}<> <(:)
while :; do
  frame
  read -r -t "$p" -u "$z" _
done
"""

PROC_LOOP_PY = r"""
import sys, time
p = float(sys.argv[1])
while True:
    out = ['@@proc']
    with open('/proc/stat') as f:
        out += [l.rstrip('\n') for l in f if l.startswith('cpu')]
    with open('/proc/meminfo') as f:
        out += [next(f).rstrip('\n') for _ in range(5)]
    with open('/proc/loadavg') as f:
        out.append('loadavg ' + f.read().strip())
    try:
        with open('/proc/pressure/cpu') as f:
            out.append('psi ' + f.readline().strip())
    except OSError:
        pass
    try:
        with open('/sys/fs/cgroup/cpu.pressure') as f:
            out.append('cgpsi ' + f.readline().strip())
    except OSError:
        pass
    try:
        with open('/sys/fs/cgroup/cpu.stat') as f:
            out.append('uptime %.3f' % time.monotonic())
            out += ['cg ' + l.strip() for l in f
                    if l.startswith(('nr_periods', 'nr_throttled', 'throttled_usec'))]
    except OSError:
        pass
    out.append('@@end')
    sys.stdout.write('\n'.join(out) + '\n')
    sys.stdout.flush()
    time.sleep(p)
"""

# One-off facts: peak memory bandwidth needs the bus width, which only NVML
# gives (nvidia-smi has no query field for it).
NVML_INFO_PY = r"""
import json, pynvml
pynvml.nvmlInit()
out = {}
for i in range(pynvml.nvmlDeviceGetCount()):
    h = pynvml.nvmlDeviceGetHandleByIndex(i)
    try:
        w = int(pynvml.nvmlDeviceGetMemoryBusWidth(h))
    except Exception:
        w = None
    try:
        m = pynvml.nvmlDeviceGetMaxClockInfo(h, pynvml.NVML_CLOCK_MEM)
    except Exception:
        m = None
    out[str(i)] = [w, m]
print(json.dumps(out))
"""


def proc_command(period_s: float) -> str:
    p = shlex.quote(f"{period_s:g}")
    return (
        "if command -v bash >/dev/null 2>&1; then "
        f"exec bash -c {shlex.quote(PROC_LOOP_BASH)} perftriage-proc {p}; "
        f"else exec python3 -u -c {shlex.quote(PROC_LOOP_PY)} {p}; fi"
    )


def gpu_command(period_s: float, fields: Sequence[str] = nvsmi.QUERY_FIELDS) -> str:
    return "exec " + nvsmi.query_command(fields, period_ms=max(50, round(period_s * 1000)))


def info_command() -> str:
    return (
        "echo @@topo; nvidia-smi topo -m 2>&1; "
        "echo @@nvml; python3 -c " + shlex.quote(NVML_INFO_PY) + " 2>/dev/null; echo @@end"
    )


def detail_command() -> str:
    return nvsmi.compute_apps_command() + " 2>&1"


# --- /proc parsing (pure) --------------------------------------------------------


async def fetch_info(transport: Transport) -> dict:
    """Topology and bandwidth of a host (one command); {} when unreachable."""
    try:
        res = await transport.run(info_command(), timeout=30)
    except TransportError:
        return {}
    return parse_info(res.stdout)


async def fetch_processes(transport: Transport, gpus: list[GpuSample]) -> dict[str, list[dict]]:
    """``{gpu index: [{pid, name, used_mib}]}`` from ``--query-compute-apps``."""
    res = await transport.run(detail_command(), timeout=15)
    by_uuid = {g.uuid: g.index for g in gpus}
    per_gpu: dict[str, list[dict]] = {}
    for uuid, p in nvsmi.parse_compute_apps(res.stdout):
        idx = by_uuid.get(uuid or "")
        per_gpu.setdefault(str(idx if idx is not None else uuid), []).append(
            {"pid": p.pid, "name": p.name, "used_mib": p.used_mib}
        )
    return per_gpu


# --- the sampler -----------------------------------------------------------------


class StreamWatch:
    """One long-running command: state for restarts and staleness."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.starts = 0
        self.last_line_t: float | None = None
        self.last_error: str | None = None
        self.running = False


class RemoteSampler:
    """Streams GPU and /proc samples of one host; ``run()`` until cancelled."""

    def __init__(
        self,
        name: str,
        transport: Transport,
        emit: Callable[[Event], object],
        interval: float = 1.0,
        *,
        stall_s: float | None = None,
        backoff_max_s: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.name = name
        self.transport = transport
        self.emit = emit
        self.interval = interval
        self.stall_s = stall_s if stall_s is not None else max(5.0, 3 * interval)
        self.backoff_max_s = backoff_max_s
        self.clock = clock
        self.gpu = StreamWatch("nvidia-smi")
        self.proc = StreamWatch("proc")
        self.gpus: list[GpuSample] = []
        self.gpu_t: float | None = None
        self.gpu_error: str | None = None
        self.frame: ProcFrame | None = None
        self.prev_frame: ProcFrame | None = None
        self.proc_t: float | None = None
        self._cpu_pct: float | None = None
        self._throttled: float | None = None
        self._throttled_time: float | None = None
        self._per_cpu: list[float] = []
        self.info: dict = {}
        self._emitted_gpu_t: float | None = None
        self._emitted_proc_t: float | None = None
        self.status: str | None = None
        self.samples = 0
        self.fields = nvsmi.QueryFields()  # minus what this host's nvidia-smi refuses
        self._qs = nvsmi.QueryStream(self.fields.fields)
        self._pf = ProcFrames()
        # An SSH transport that keeps its own connection up reports connecting /
        # down itself (the cockpit records it); then only stalls are ours to say.
        self.owns_connection_state = not isinstance(transport, MaintainsConnection)

    # -- life cycle --

    async def run(self) -> None:
        if self.owns_connection_state:
            self._set_status("connecting")
        tasks = [
            asyncio.create_task(self._keep(
                self.gpu, lambda: gpu_command(self.interval, self.fields.fields), self._on_gpu_lines)),
            asyncio.create_task(self._keep(self.proc, proc_command(self.interval), self._on_proc_lines)),
            asyncio.create_task(self._fetch_info()),
        ]
        try:
            while True:
                await asyncio.sleep(self.interval)
                self.tick()
        finally:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    def _set_status(self, state: HostConnState, reason: str | None = None) -> None:
        key = f"{state}:{reason}"
        if key != self.status:
            self.status = key
            self.emit(HostStatus(host=self.name, state=state, reason=reason))

    async def _keep(self, watch: StreamWatch, command: str | Callable[[], str], on_lines) -> None:
        """Run ``command`` for ever: restart when it exits or stalls."""
        backoff = 1.0
        while True:
            watch.starts += 1
            if watch is self.gpu:  # a fresh process: drop any half-read sample
                self._qs = nvsmi.QueryStream(self.fields.fields)
            else:
                self._pf = ProcFrames()
            started = self.clock()
            got = 0
            reason = "exited"
            stream: AsyncGenerator[list[str], None] = self.transport.stream_batches(
                command() if callable(command) else command)
            watch.running = True
            try:
                while True:
                    # the first line may take a while (channel open, a cold nvidia-smi)
                    wait = self.stall_s if got else max(15.0, 3 * self.stall_s)
                    try:
                        async with asyncio.timeout(wait):
                            batch = await anext(stream)
                    except StopAsyncIteration:
                        break
                    except TimeoutError:
                        reason = f"stalled (no output for {wait:.0f}s)"
                        break
                    watch.last_line_t = self.clock()
                    got += len(batch)
                    on_lines(batch)
            except TransportError as exc:
                reason = exc.reason
                if self.owns_connection_state:
                    self._set_status("retrying" if self.samples else "down", exc.reason)
            finally:
                watch.running = False
                with contextlib.suppress(Exception):
                    await stream.aclose()  # kills the remote command
            watch.last_error = f"{watch.name} {reason}"
            if watch is self.gpu and self.fields.drop_refused([self._qs.last_error or ""]):
                self.gpu_error = self.fields.note  # the other fields, at once
                log.info("%s: %s", self.name, self.gpu_error)
                continue
            log.info("%s: %s %s after %d lines; restarting", self.name, watch.name, reason, got)
            if watch is self.gpu and got == 0:
                await self._explain_no_gpu()
            if self.clock() - started > 10 * self.stall_s:
                backoff = 1.0
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, self.backoff_max_s)

    async def _explain_no_gpu(self) -> None:
        """The GPU stream gave nothing: say why (no nvidia-smi, no driver)."""
        try:
            res = await self.transport.run("command -v nvidia-smi || echo MISSING", timeout=10)
        except TransportError as exc:
            self.gpu_error = f"nvidia-smi: {exc.reason}"
            return
        if "MISSING" in res.stdout or not res.stdout.strip():
            self.gpu_error = "no NVIDIA GPU (nvidia-smi not found)"
        elif self.gpu_error is None:
            self.gpu_error = f"nvidia-smi {self.gpu.last_error or 'gave no samples'}"

    def _on_gpu_lines(self, lines: list[str]) -> None:
        for batch in self._qs.feed(lines):
            bw = self.info.get("bandwidth_gbs") or {}
            widths = self.info.get("bus_width_bits") or {}
            for g in batch:
                g.bandwidth_gbs = bw.get(str(g.index))
                g.bus_width_bits = widths.get(str(g.index))
            self.gpus = batch
            self.gpu_t = self.clock()
            self.gpu_error = self.fields.note
        if self._qs.last_error and not self.gpus:
            self.gpu_error = f"nvidia-smi: {self._qs.last_error}"

    def _on_proc_lines(self, lines: list[str]) -> None:
        for frame in self._pf.feed(lines):
            prev = self.frame
            self.frame = frame
            self.proc_t = self.clock()
            self._throttled = throttled_pct(prev, frame)
            self._throttled_time = throttled_time_pct(prev, frame)
            if prev is not None:
                self._cpu_pct = cpu_pct(prev.cpu, frame.cpu)
                self._per_cpu = [
                    p for p in (cpu_pct(a, b) for a, b in zip(prev.per_cpu, frame.per_cpu, strict=False))
                    if p is not None
                ]

    async def _fetch_info(self) -> None:
        """Topology and bandwidth, once (retried a few times while unreachable)."""
        for attempt in range(5):
            try:
                res = await self.transport.run(info_command(), timeout=30)
            except TransportError:
                await asyncio.sleep(5 * (attempt + 1))
                continue
            info = parse_info(res.stdout)
            if info:
                self.info.update(info)
                self.emit(HostInfo(host=self.name, info=info))
            return

    async def refresh_detail(self) -> dict:
        """Compute processes per GPU (for the detail view), as a HostInfo."""
        info = {"processes": await fetch_processes(self.transport, self.gpus)}
        if "topo" not in self.info and "topo_error" not in self.info:
            with contextlib.suppress(TransportError):
                got = parse_info((await self.transport.run(info_command(), timeout=30)).stdout)
                self.info.update(got)
                info.update(got)
        self.emit(HostInfo(host=self.name, info=info))
        return info

    # -- emitting --

    def tick(self) -> HostSample | None:
        """Emit a HostSample if anything new arrived since the last one."""
        now = self.clock()
        new_gpu = self.gpu_t is not None and self.gpu_t != self._emitted_gpu_t
        new_proc = self.proc_t is not None and self.proc_t != self._emitted_proc_t
        if not new_gpu and not new_proc:
            if self.samples and self.status and self.status.startswith("up"):
                latest = max(t for t in (self.gpu_t, self.proc_t, 0.0) if t is not None)
                if now - latest > self.stall_s:
                    self._set_status("retrying", f"no samples for {now - latest:.0f}s")
            return None
        self._emitted_gpu_t, self._emitted_proc_t = self.gpu_t, self.proc_t
        gpu_age = now - self.gpu_t if self.gpu_t is not None else None
        stale = gpu_age is not None and gpu_age > self.stall_s
        f = self.frame
        mem_used = None
        if f is not None and f.mem_total is not None:
            avail = f.mem_available if f.mem_available is not None else f.mem_free
            mem_used = f.mem_total - avail if avail is not None else None
        sample = HostSample(
            host=self.name,
            cpu_pct=self._cpu_pct,
            per_cpu_pct=list(self._per_cpu),
            mem_used_bytes=mem_used,
            mem_total_bytes=f.mem_total if f else None,
            load1=f.load[0] if f and f.load else None,
            load5=f.load[1] if f and f.load else None,
            load15=f.load[2] if f and f.load else None,
            cpu_psi_some=f.psi_some if f else None,
            cpu_throttled_pct=self._throttled,
            cpu_psi_some_cgroup=f.cg_psi_some if f else None,
            cpu_throttled_time_pct=self._throttled_time,
            gpus=list(self.gpus),
            gpu_error=self.gpu_error or (
                f"nvidia-smi: no samples for {gpu_age:.0f}s" if stale and gpu_age else None
            ),
            gpu_age_s=round(gpu_age, 1) if stale and gpu_age is not None else None,
        )
        self.samples += 1
        self._set_status("up")
        self.emit(sample)
        return sample


# --- one-shot snapshot (perftriage status) ------------------------------------------

SNAPSHOT_BASH = PROC_FRAME_BASH + r"""
frame; sleep "$1"; frame
printf '@@gpu\n'
if command -v nvidia-smi >/dev/null 2>&1; then "$2" "$3" "$4" 2>&1; else printf '@@nogpu\n'; fi
"""

GPU_JSON_FIELDS = ("index", "name", "uuid", "util_pct", "mem_used_mib", "mem_total_mib", "power_w",
                   "power_limit_w", "temp_c", "sm_clock_mhz", "mem_clock_mhz")
GPU_JSON_EXTRA = ("mem_util_pct", "sm_clock_max_mhz", "mem_clock_max_mhz", "pstate",
                  "bandwidth_gbs")


def snapshot_command(cpu_window_s: float = 0.5, fields: Sequence[str] = nvsmi.QUERY_FIELDS) -> str:
    args = [f"{cpu_window_s:g}", "nvidia-smi", f"--query-gpu={','.join(fields)}",
            "--format=csv,noheader,nounits"]
    return f"bash -c {shlex.quote(SNAPSHOT_BASH)} perftriage-snapshot " + " ".join(
        shlex.quote(a) for a in args)


def host_json(name: str, sample: HostSample | None, error: str | None = None) -> dict:
    """The ``perftriage status --json`` shape for one host (public interface)."""
    s = sample
    out = {
        "host": name,
        "ok": error is None,
        "error": error,
        "cpu_pct": s.cpu_pct if s else None,
        "mem_used_bytes": s.mem_used_bytes if s else None,
        "mem_total_bytes": s.mem_total_bytes if s else None,
        "load1": s.load1 if s else None,
        "gpus": [
            {k: getattr(g, k) for k in (*GPU_JSON_FIELDS, *GPU_JSON_EXTRA)} for g in (s.gpus if s else [])
        ],
        "gpu_error": s.gpu_error if s else None,
    }
    return out


async def snapshot_host(host, timeout: float = 20.0, cpu_window_s: float = 0.5) -> dict:
    """One snapshot of ``host`` (a :class:`perftriage.services.hosts.registry.Host`) as status JSON."""
    if host.local and host.config.preamble is None:
        from perftriage.services.sampling.local_sampler import LocalSampler  # noqa: PLC0415

        sampler = await asyncio.to_thread(LocalSampler, host.name)
        await asyncio.sleep(cpu_window_s)
        sample = await asyncio.to_thread(sampler.sample)
        return host_json(host.name, sample)
    fields = nvsmi.QueryFields()
    while True:
        try:
            async with asyncio.timeout(timeout + 5):
                res = await host.transport.run(
                    snapshot_command(cpu_window_s, fields.fields), timeout=timeout)
        except TransportError as exc:
            return host_json(host.name, None, one_line(exc.reason))
        except TimeoutError:
            return host_json(host.name, None, f"no answer within {timeout:g}s")
        if res.timed_out:
            return host_json(host.name, None, f"no answer within {timeout:g}s")
        sample = parse_snapshot(host.name, res.stdout, fields.fields)
        # a refused field blanks every GPU: drop it and ask again (once per field)
        if sample.gpus or not fields.drop_refused(res.stdout.splitlines()):
            break
    if sample.mem_total_bytes is None and sample.cpu_pct is None:
        why = (res.stderr.strip() or res.stdout.strip() or f"exit {res.exit_status}").splitlines()
        return host_json(host.name, None, one_line(f"no /proc data: {why[0] if why else ''}"))
    if fields.note and sample.gpus:
        sample.gpu_error = fields.note
    return host_json(host.name, sample)


def one_line(text: str) -> str:
    return " ".join(str(text).split())[:300]
