"""``nvidia-smi dmon --gpm-metrics ...`` output -> per-GPU counter readings.

The format (real captures in tests/fixtures/dmon/): two ``#`` header lines
(column names, then units), then one row per GPU per interval, with the
header printed again every so often. ``-`` means no value, in any column of
any row: the GPM columns print ``-`` for the first two intervals, memory
temperature is ``-`` on GDDR cards. ``--format csv`` separates by ``", "``
and writes ``#gpu, pwr, ...``; ``-o T`` puts a time column first. Columns are
found by name, so any ``--gpm-metrics`` selection and order parses.

A *sample* is one row per GPU: a new one starts when a GPU index comes again.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# The GPM metric ids perftriage asks for: DRAM, SM active, SM occupancy, tensor.
GPM_METRICS = (10, 2, 3, 5)

# dmon column name -> GpmReading attribute
COLUMNS = {
    "dram": "dram_busy_pct",
    "smutil": "sm_active_pct",
    "smocc": "sm_occupancy_pct",
    "mmaact": "tensor_active_pct",
    "nvlrx": "nvlink_rx_mibs",
    "nvltx": "nvlink_tx_mibs",
    "sm": "util_pct",  # classic utilization.gpu, for the stuck-at-zero check
    "pwr": "power_w",
}


def dmon_command(metrics: tuple[int, ...] = GPM_METRICS, delay_s: int = 1,
                 count: int | None = None) -> str:
    """The command line (only integers go in: nothing to quote)."""
    ids = ",".join(str(int(m)) for m in metrics)
    tail = f" -c {int(count)}" if count else ""
    return f"nvidia-smi dmon --gpm-metrics {ids} -d {max(1, int(delay_s))}{tail}"


@dataclass
class GpmReading:
    """One GPU in one interval; None where dmon printed ``-`` (no value)."""

    index: int
    dram_busy_pct: float | None = None
    sm_active_pct: float | None = None
    sm_occupancy_pct: float | None = None
    tensor_active_pct: float | None = None
    nvlink_rx_mibs: float | None = None  # MiB/s, as dmon prints
    nvlink_tx_mibs: float | None = None
    util_pct: float | None = None
    power_w: float | None = None

    @property
    def has_gpm(self) -> bool:
        return any(v is not None for v in (self.dram_busy_pct, self.sm_active_pct,
                                           self.sm_occupancy_pct, self.tensor_active_pct))


_SPLIT = re.compile(r"[,\s]+")


def _cells(line: str) -> list[str]:
    return [c for c in _SPLIT.split(line.strip().lstrip("#").strip()) if c]


def _num(cell: str) -> float | None:
    if cell in ("-", "N/A", "[N/A]"):
        return None
    try:
        return float(cell)
    except ValueError:
        return None


@dataclass
class DmonStream:
    """Feed lines as they come; complete samples come out.

    Knows its columns from the last header; rows before any header are read
    with the column order of ``--gpm-metrics 10,2,3,5`` (``csv,noheader``)."""

    columns: list[str] = field(default_factory=lambda: [
        "gpu", "pwr", "gtemp", "mtemp", "sm", "mem", "enc", "dec", "jpg", "ofa", "mclk", "pclk",
        "dram", "smutil", "smocc", "mmaact"])
    _pending: list[GpmReading] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # lines that were neither header nor row

    def feed(self, lines: list[str]) -> list[list[GpmReading]]:
        done: list[list[GpmReading]] = []
        for raw in lines:
            line = raw.strip()
            if not line:
                continue
            if line.startswith("#"):
                cells = _cells(line)
                if cells and cells[0].lower() in ("gpu", "time", "date"):
                    self.columns = [c.lower() for c in cells]
                continue  # the units line
            reading = self._row(_cells(line))
            if reading is None:
                self.errors.append(line[:200])
                del self.errors[:-20]
                continue
            if any(r.index == reading.index for r in self._pending):
                done.append(self._pending)
                self._pending = []
            self._pending.append(reading)
        return done

    def flush(self) -> list[GpmReading]:
        """The sample in progress (at the end of a finite capture)."""
        out, self._pending = self._pending, []
        return out

    def _row(self, cells: list[str]) -> GpmReading | None:
        cols = self.columns
        if len(cells) != len(cols) or "gpu" not in cols:
            return None
        try:
            index = int(cells[cols.index("gpu")])
        except ValueError:
            return None
        reading = GpmReading(index=index)
        for name, cell in zip(cols, cells, strict=True):
            attr = COLUMNS.get(name)
            if attr is not None:
                setattr(reading, attr, _num(cell))
        return reading


def parse(text: str) -> list[list[GpmReading]]:
    """A whole capture -> its samples (the last, possibly partial, included)."""
    stream = DmonStream()
    samples = stream.feed(text.splitlines())
    if last := stream.flush():
        samples.append(last)
    return samples


# What dmon prints when GPM cannot be read, and what that means for the user.
_UNAVAILABLE = (
    ("not supported", "GPM not supported on this GPU (pre-Hopper, or a VM that hides the counters)"),
    ("insufficient permissions", "GPM counters need more permission (root, or a profiler holds them)"),
    ("in use", "GPM counters are held by another profiler (DCGM, Nsight)"),
    ("unrecognized option", "nvidia-smi too old for --gpm-metrics (driver older than R525)"),
    ("invalid", "nvidia-smi rejected --gpm-metrics (driver too old)"),
    ("mig", "GPM per device is unavailable with MIG enabled"),
    ("couldn't communicate", "no NVIDIA driver"),
)


def unavailable_reason(lines: list[str]) -> str | None:
    """A one-line reason when dmon's output says the counters are unavailable."""
    for line in lines:
        low = line.lower()
        for needle, reason in _UNAVAILABLE:
            if needle in low:
                return reason
    return None
