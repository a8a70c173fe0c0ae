"""Nsight Compute's CSV (``ncu --csv``, default page) folded into per-kernel
totals, one streaming pass, memory bounded by the number of kernel names.

The page is one row per (kernel launch, metric)::

    "ID","Process ID",…,"Kernel Name",…,"Metric Name","Metric Unit","Metric Value"
    "0","552",…,"fused_moe_kernel",…,"dram__bytes_read.sum","byte","100,741,376"

Values carry thousands separators; units are ``byte``/``ns``/``%`` or, with
``--print-units auto``, scaled (``Kbyte``/``Mbyte``/``Gbyte``, ``us``/``ms``;
older releases ``usecond``/``msecond``). ncu's byte prefixes are decimal.
A value ncu could not collect is ``n/a``: the launch is counted, its totals
are left out, and the count is reported — never guessed. Lines before the
header (``==PROF==`` notes, the profiled program's own stdout) are skipped;
``==ERROR==``/``==WARNING==`` lines are kept (a few) as notes.

Stdlib only, no package imports, on purpose: the ``ncu`` probe ships this
file's source to the host (``python3 -c``) and folds the CSV there, so only
the per-kernel totals cross the network, never a 100 MB CSV.
"""

from __future__ import annotations

import csv
import re
import sys

BYTES_READ = "dram__bytes_read.sum"
BYTES_WRITE = "dram__bytes_write.sum"
DURATION = "gpu__time_duration.sum"
DRAM_PCT = "dram__throughput.avg.pct_of_peak_sustained_elapsed"
SM_PCT = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
GPU_NAME = "device__attribute_display_name"  # optional: the GPU's name, when collected
# the metrics a kernel summary needs (in the order of a launch's slots)
METRICS = (BYTES_READ, BYTES_WRITE, DURATION, DRAM_PCT, SM_PCT)
REQUIRED = (BYTES_READ, BYTES_WRITE, DURATION)
COLUMNS = ("ID", "Kernel Name", "Metric Name", "Metric Unit", "Metric Value")

# unit -> factor to bytes, nanoseconds or percent
BYTE_UNITS = {"byte": 1.0, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "Tbyte": 1e12,
              "Kibyte": 1024.0, "Mibyte": 1024.0 ** 2, "Gibyte": 1024.0 ** 3}
TIME_UNITS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9,
              "nsecond": 1.0, "usecond": 1e3, "msecond": 1e6, "second": 1e9}
PCT_UNITS = {"%": 1.0}
SCALE = {**BYTE_UNITS, **TIME_UNITS, **PCT_UNITS}
# per metric (METRICS' order): the units that fit it, and the largest value
# that is an amount (scaled: a petabyte or 11 days in one launch, 1000 %);
# NaN, an infinity, a negative or more is left out of the totals and counted
UNITS = (BYTE_UNITS, BYTE_UNITS, TIME_UNITS, PCT_UNITS, PCT_UNITS)
UNIT_KIND = ("a byte unit", "a byte unit", "a time unit", "%", "%")
CAPS = (1e15, 1e15, 1e15, 1e3, 1e3)
MAX_NOTES = 20
# a file is read in blocks: a line longer than LINE_CAP is skipped before the
# header (counted) and refused after it; no header in HEAD_CAP characters:
# stop there and say so. Memory stays bounded by a block and a line, never
# by the file (a 5 GB one-line log).
BLOCK = 1 << 20
LINE_CAP = 1 << 20
HEAD_CAP = 256 << 20
LONG = "\x00(a line longer than LINE_CAP)\x00"  # a skipped line, before the header

# one kernel name's totals (a list, indexed by these)
LAUNCHES, COMPLETE, TIME_NS, READ_B, WRITE_B, DRAM_W, DRAM_T, SM_W, SM_T, NA = range(10)


class NcuCsvError(ValueError):
    """Input that is not (usable) ncu CSV; the message says what and where,
    ``notes`` holds ncu's ==ERROR==/==WARNING== lines read before it."""

    def __init__(self, message, notes=()):
        super().__init__(message)
        self.notes = list(notes)


def _header(line: str):
    if not line.startswith('"ID"'):
        return None
    return next(csv.reader([line]))


class _Bounded:
    """The lines of a text file (``newline=""``), read in blocks of
    :data:`BLOCK`, each ending ``"\\n"`` (the last maybe not). A line longer
    than :data:`LINE_CAP` is dropped as it is read: before the header it comes
    out as :data:`LONG`, after it (``body`` set) it raises NcuCsvError.
    ``chars``: how many characters were read."""

    def __init__(self, f):
        self.f = f
        self.chars = 0
        self.lineno = 0
        self.body = False

    def _long(self):
        if self.body:
            raise NcuCsvError("line %d: longer than %d MiB: not ncu CSV (stopped there)"
                              % (self.lineno, LINE_CAP >> 20))
        return LONG

    def __iter__(self):
        read = self.f.read
        pending = []  # the start of the current line, in pieces
        size = 0  # their length
        drop = False  # inside a line longer than LINE_CAP (before the header)
        while self.body or self.chars < HEAD_CAP:
            block = read(BLOCK)
            if not block:
                break
            self.chars += len(block)
            parts = block.split("\n")
            last = parts.pop()
            if parts:
                first = parts[0]
                self.lineno += 1
                if drop or size + len(first) > LINE_CAP:
                    yield self._long()
                else:
                    yield "".join(pending) + first + "\n" if pending else first + "\n"
                pending, size, drop = [], 0, False
                for p in parts[1:]:  # each shorter than a block, so than LINE_CAP
                    self.lineno += 1
                    yield p + "\n"
            if last and not drop:
                size += len(last)
                if size <= LINE_CAP:
                    pending.append(last)
                elif self.body:
                    self.lineno += 1
                    self._long()  # raises
                else:
                    drop, pending, size = True, [], 0
        else:
            return  # HEAD_CAP read before the header: stop there
        if drop:
            self.lineno += 1
            yield self._long()
        elif pending:
            self.lineno += 1
            yield "".join(pending)


def fold(lines):
    """Per-kernel totals from an iterable of text lines (a file opened with
    ``newline=""``). Returns a dict: ``kernels`` (name -> totals list),
    ``gpu``, ``seen`` (metric -> whether any row had it), ``na`` (metric ->
    n/a count), ``notes`` and ``lines`` (read). Raises :class:`NcuCsvError`."""
    bounded = lines if isinstance(lines, _Bounded) else None
    it = iter(lines)
    lineno = 0
    notes = []
    header = None
    long_lines = 0
    for line in it:
        lineno += 1
        if line is LONG:
            long_lines += 1
            continue
        if line.startswith("==") and ("==ERROR==" in line[:12] or "==WARNING==" in line[:12]):
            if len(notes) < MAX_NOTES:
                notes.append(line.strip()[:300])
            continue
        header = _header(line)
        if header is not None:
            break
    if header is None:
        where = "%d line(s)" % lineno
        if bounded is not None and bounded.chars >= HEAD_CAP:
            where = "the first %d MiB (%d complete line(s); stopped there)" % (HEAD_CAP >> 20, lineno)
        if long_lines:
            where += ", %d of them longer than %d MiB, skipped" % (long_lines, LINE_CAP >> 20)
        raise NcuCsvError(
            "no ncu CSV header (\"ID\",…,\"Kernel Name\",…,\"Metric Name\",\"Metric Unit\","
            "\"Metric Value\") in %s%s" % (where, ": " + notes[-1] if notes else ""), notes)
    if bounded is not None:
        bounded.body = True
    missing = [c for c in COLUMNS if c not in header]
    if missing:
        raise NcuCsvError("line %d: the ncu CSV header lacks column(s) %s (is it `ncu --csv` "
                          "with the default page, not --page raw?)" % (lineno, ", ".join(missing)))
    i_id, i_name, i_metric, i_unit, i_value = (header.index(c) for c in COLUMNS)
    i_device = header.index("Device") if "Device" in header else None
    device = None
    width = len(header)
    slots = {m: i for i, m in enumerate(METRICS)}
    present = [False] * len(METRICS)
    na = dict.fromkeys(METRICS, 0)
    bad = dict.fromkeys(METRICS, 0)
    kernels = {}
    gpu = None
    gpus = []  # the distinct GPU names (a few)
    devices = []  # the distinct device indices (a few)
    gpu_rows = 0
    headers = []  # lines where the header came again (captures concatenated)
    units, caps = UNITS, CAPS
    base = lineno
    reader = csv.reader(it)
    cur_id = cur_name = None
    vals = [None] * 5

    def flush(name, vals):
        acc = kernels.get(name)
        if acc is None:
            acc = kernels[name] = [0, 0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0]
        acc[LAUNCHES] += 1
        r, w, t, dp, sp = vals
        if r is None or w is None or t is None:
            acc[NA] += 1
        else:
            acc[COMPLETE] += 1
            acc[TIME_NS] += t
            acc[READ_B] += r
            acc[WRITE_B] += w
            if dp is not None:
                acc[DRAM_W] += dp * t
                acc[DRAM_T] += t
            if sp is not None:
                acc[SM_W] += sp * t
                acc[SM_T] += t
        if not all(present):
            for i, v in enumerate(vals):
                if v is not None:
                    present[i] = True

    # the hot loop: one csv row per (launch, metric); kept to a few lookups
    try:
        for row in reader:
            if len(row) != width:
                if not row or (len(row) == 1 and not row[0].strip()):
                    continue
                if row[0].startswith("=="):
                    if len(notes) < MAX_NOTES:
                        notes.append(",".join(row).strip()[:300])
                    continue
                raise NcuCsvError("line %d: %d field(s), the header has %d (truncated?)"
                                  % (base + reader.line_num, len(row), width))
            rid = row[i_id]
            if rid != cur_id:
                if cur_id is not None:
                    flush(cur_name, vals)
                    vals = [None] * 5
                if rid == "ID" and row[i_metric] == "Metric Name":
                    headers.append(base + reader.line_num)  # the header again: no launch
                    cur_id = None
                    continue
                cur_id, cur_name = rid, row[i_name]
                if i_device is not None:
                    if device is None:
                        device = row[i_device]
                    if len(devices) < 8 and row[i_device] not in devices:
                        devices.append(row[i_device][:32])
            metric = row[i_metric]
            slot = slots.get(metric)
            if slot is None:
                if metric == GPU_NAME:
                    gpu_rows += 1
                    gpu = row[i_value]
                    if len(gpus) < 8 and gpu not in gpus:
                        gpus.append(gpu[:200])
                continue
            text = row[i_value]
            try:
                v = float(text.replace(",", "")) * units[slot][row[i_unit]]
            except ValueError:
                if text.strip().lower() in ("n/a", ""):
                    na[metric] += 1
                    continue
                raise NcuCsvError("line %d: %s value %r is not a number"
                                  % (base + reader.line_num, metric, text[:40])) from None
            except KeyError:
                unit = row[i_unit]
                if unit in SCALE:
                    raise NcuCsvError("line %d: %s has unit %r, not %s"
                                      % (base + reader.line_num, metric, unit,
                                         UNIT_KIND[slot])) from None
                raise NcuCsvError("line %d: %s has unit %r (known: %s)"
                                  % (base + reader.line_num, metric, unit[:20],
                                     ", ".join(SCALE))) from None
            if 0.0 <= v <= caps[slot]:
                vals[slot] = v
            else:  # NaN, an infinity, a negative, beyond any launch
                bad[metric] += 1
    except csv.Error as exc:
        raise NcuCsvError("line %d: %s" % (base + reader.line_num, exc)) from None
    if cur_id is not None:
        flush(cur_name, vals)
    seen = {m: present[i] or na[m] > 0 or bad[m] > 0 for i, m in enumerate(METRICS)}
    seen[GPU_NAME] = gpu_rows > 0
    if headers:
        notes.append("the header repeated at line%s %s (captures concatenated?): skipped"
                     % ("s" if len(headers) > 1 else "",
                        ", ".join(str(n) for n in headers[:5])
                        + (" +%d" % (len(headers) - 5) if len(headers) > 5 else "")))
    return {"kernels": kernels, "gpu": gpu, "gpus": gpus, "device": device,
            "devices": devices, "seen": seen, "na": na,
            "bad": {m: n for m, n in bad.items() if n}, "notes": notes,
            "lines": base + reader.line_num}


def fold_file(path):
    """:func:`fold` over a file, read as a stream. Only a regular file is read:
    a FIFO would block for ever and a link to ``/dev/zero`` never ends (the
    package's ``open_regular`` does the same; this file stays stdlib only)."""
    import io
    import os
    import stat

    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = ("a FIFO" if stat.S_ISFIFO(mode) else "a character device"
                    if stat.S_ISCHR(mode) else "a directory" if stat.S_ISDIR(mode)
                    else "not a regular file")
            raise NcuCsvError("not a regular file (%s)" % kind)
        os.set_blocking(fd, True)
        raw_file = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    with io.TextIOWrapper(raw_file, encoding="utf-8", errors="replace", newline="") as f:
        return fold(_Bounded(f))


# The probe's answer crosses the transport, which keeps a command's first
# 500 KB and last 64 KiB: the result line, printed last, must fit the tail.
RESULT_BUDGET = 60_000  # bytes of JSON
NAME_CAP = 160  # characters of a kernel name in an answer that did not fit (…#hash past it)


def _short_name(name):
    if len(name) <= NAME_CAP:
        return name
    import hashlib

    digest = hashlib.sha1(name.encode("utf-8", "replace")).hexdigest()[:8]
    return name[:NAME_CAP - 10] + "\u2026#" + digest  # still one name per kernel


def _compact(acc):
    return [int(v) if isinstance(v, float) and v.is_integer() and abs(v) < 2 ** 53 else v
            for v in acc]


_ANON = ("(anonymous namespace)::", "<unnamed>::")
_DIGITS = re.compile(r"[0-9]+")


def kernel_key(name):
    """The base function name: ``void at::native::(anonymous namespace)::
    indexSelectSmallIndex<…>(…)`` -> ``indexSelectSmallIndex`` (what ncu's
    ``-k`` matches by default; a trace and ncu spell templates differently)."""
    text = name.strip()
    for anon in _ANON:
        if anon in text:
            text = text.replace(anon, "")
    if text.startswith("void "):
        text = text[5:]
    cut = min((i for i in (text.find("<"), text.find("(")) if i > 0), default=len(text))
    return text[:cut].rsplit("::", 1)[-1].strip()


# how the kernels an answer cannot carry by name are folded, finest first: each
# key from the one before (a base name, its numbers as # so generated kernels
# such as triton_poi_fused_add_123 fold together, then its first word)
FOLDS = (("base name", lambda name, _prev: kernel_key(name) or name),
         ("name family", lambda _name, prev: _DIGITS.sub("#", prev)),
         ("first word", lambda _name, prev: prev.split("_", 1)[0][:40] or prev[:40]))
OTHER = "(other kernels)"  # the last row when even the first words do not fit
MIN_ROW = 24  # bytes of JSON a folded row takes at least: more rows than room/this never fit


def fit(result, budget=RESULT_BUDGET):
    """The fold's result cut to what crosses the transport (``budget``
    bytes of JSON), losing nothing. When it does not fit whole: kernel names
    past NAME_CAP shortened (``short_names``: how many), the kernels by total
    time by name while they fit half the room, and the rest folded into
    ``groups`` (``{key: [distinct names, *totals]}``) by their base name,
    else their name family, else their first word, the finest that fits (the
    smallest groups of the last summed into one ``(other kernels)`` row if
    even those do not): ``grouped: {"kernels": N, "by": how}``. Every
    launch, nanosecond and byte is in a row."""
    import json

    def size(value):
        return len(json.dumps(value, separators=(",", ":")))

    for key, cap in (("gpu", 200), ("device", 32), ("error", 2000)):
        if isinstance(result.get(key), str):
            result[key] = result[key][:cap]
    kernels = result.pop("kernels", None) or {}
    notes = result.get("notes") or []
    while notes and size(result) > budget // 4:
        notes.pop()
    used = size(result) + 300  # "kernels", "groups", "grouped", "short_names", numbers
    if len(kernels) * MIN_ROW <= budget:
        compact = {name: _compact(acc) for name, acc in kernels.items()}
        if used + size(compact) <= budget:
            result["kernels"] = compact
            return result
    ranked = sorted(kernels.items(), key=lambda kv: (-kv[1][TIME_NS], kv[0]))
    kept = {}
    short = n_kept = 0
    half = used + (budget - used) // 2
    for name, acc in ranked:
        key = _short_name(name)
        acc = _compact(acc)
        n = size(key) + size(acc) + 2
        if used + n > half or key in kept:
            break
        kept[key] = acc
        used += n
        n_kept += 1
        short += key is not name
    rest = ranked[n_kept:]
    room = budget - used
    keys = [name for name, _ in rest]
    for how, keyer in FOLDS:
        keys = [keyer(name, prev) for (name, _), prev in zip(rest, keys)]
        groups = {}
        for key, (_, acc) in zip(keys, rest):
            g = groups.get(key)
            if g is None:
                groups[key] = [1, *acc]
            else:
                g[0] += 1
                for i, v in enumerate(acc):
                    g[i + 1] += v
        groups = {_short_name(k): g for k, g in groups.items()}
        if len(groups) * MIN_ROW <= room and size(groups) <= room:
            break
    else:  # the biggest first words while they fit, the rest in one row
        by_time = sorted(groups.items(), key=lambda kv: (-kv[1][1 + TIME_NS], kv[0]))
        groups, other = {}, [0] * 11
        room -= size({OTHER: [0] * 11}) + 200
        for key, g in by_time:
            if not other[0]:
                n = size(key) + size(_compact(g)) + 2
                if n <= room:
                    groups[key] = g
                    room -= n
                    continue
            for i, v in enumerate(g):
                other[i] += v
        groups[OTHER] = other
    result["kernels"] = kept
    result["groups"] = {key: _compact(g) for key, g in groups.items()}
    result["grouped"] = {"kernels": len(rest), "by": how}
    if short:
        result["short_names"] = short
    return result


def gpu_by_index(folded, listing):
    """The profiled GPU's name from ``nvidia-smi --query-gpu=index,name
    --format=csv,noheader`` lines: by the CSV's device index, else the only
    name the host has."""
    names = {}
    for line in listing.splitlines():
        index, _, name = line.partition(",")
        if name.strip():
            names[index.strip()] = name.strip()
    used = [names[d] for d in folded.get("devices") or () if d in names]
    if len(set(used)) > 1:  # launches on GPUs of different models
        folded["gpus"] = sorted(set(used))
    if folded.get("device") in names:
        return names[folded["device"]]
    return next(iter(names.values())) if len(set(names.values())) == 1 else None


def nvml_memory(device):
    """[bus width bits, max memory clock MHz] of the profiled GPU from NVML
    when the host's Python has it (nvidia-ml-py), else None: the peak is then
    the GPU's datasheet figure by name."""
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
        try:
            h = pynvml.nvmlDeviceGetHandleByIndex(int(device or 0))
            return [int(pynvml.nvmlDeviceGetMemoryBusWidth(h)),
                    float(pynvml.nvmlDeviceGetMaxClockInfo(h, pynvml.NVML_CLOCK_MEM))]
        finally:
            pynvml.nvmlShutdown()
    except (pynvml.NVMLError, AttributeError, TypeError, ValueError, OSError):
        return None


if __name__ == "__main__" and len(sys.argv) > 3 and sys.argv[1] == "--fold-json":
    # how the ncu probe runs this file on the host: fold the CSV at argv[2],
    # name the GPU from the nvidia-smi listing in argv[4] and read its memory
    # bus from NVML, print one JSON line after the marker in argv[3] ("-": the
    # first line of stdin, where the probe sends it with the run's nonce:
    # never in an argv the profiled command could read); bad input travels in
    # the JSON
    import json

    mark = sys.stdin.readline().rstrip("\n") if sys.argv[3] == "-" else sys.argv[3]

    try:
        result = fold_file(sys.argv[2])
        if not result["gpu"] and len(sys.argv) > 4:
            result["gpu"] = gpu_by_index(result, sys.argv[4])
        result["nvml"] = nvml_memory(result["device"])
    except OSError as exc:
        result = {"error": str(exc), "notes": []}
    except NcuCsvError as exc:
        result = {"error": str(exc), "notes": exc.notes}
    sys.stdout.write("\n" + mark + json.dumps(fit(result), separators=(",", ":")) + "\n")
