"""The one way a trace file is read: bounded in what it may cost.

A trace comes from a server perftriage does not control (or from a
colleague), so a file may be a FIFO or a link to ``/dev/urandom`` (a read
that never ends), a gzip bomb (8 MB expanding to 8 GiB), nested 100 000
deep, or hold a million distinct megabyte-long kernel names. Here:

- only a regular file is opened (``open_regular``: never a FIFO, a device,
  a directory), and it is read once, at most the cap plus one byte;
- the cap (:class:`TraceLimits`, ``[profile] max_trace_mb`` in the config,
  ``--max-trace-mb`` on ``perftriage trace``, default 1024 MiB) holds for the
  bytes on disk and again for the bytes once decompressed: gzip is inflated
  in pieces and stops as soon as it passes the cap;
- a kernel name longer than :data:`MAX_NAME_CHARS` is cut (with its length
  and a short hash of the whole name, so two names that differ only past the
  cut stay apart) before it is classified or shown;
- a file with more than :data:`MAX_KERNEL_NAMES` distinct kernels is refused
  (a real capture has hundreds), and so is a JSON trace with more objects
  than one per :data:`BYTES_PER_OBJECT` bytes of the cap (each costs ~90
  bytes decoded), so decoding costs at most a few times the cap;
- a duration outside 0..:data:`MAX_US`, a device window longer than it, or
  a start beyond :data:`MAX_START_US` (epoch µs of PyTorch before ~2.3 are
  read) is refused with the event's index (or the CSV line).

Every refusal is a :class:`TraceError` naming the file.
"""

from __future__ import annotations

import hashlib
import os
import zlib
from dataclasses import dataclass

from perftriage.core.profile.model import TraceError
from perftriage.core.regular_files import NotRegularFile, open_regular

DEFAULT_MAX_MB = 1024  # a busy rank's trace is tens to hundreds of MB decompressed
MAX_NAME_CHARS = 1024  # a CUTLASS template name is a few hundred characters
MAX_KERNEL_NAMES = 20_000  # distinct kernels in one file
MAX_US = 1e15  # µs (31 years): a duration, or a window, longer is no time
# a start time: before PyTorch ~2.3 Kineto wrote Unix-epoch µs (1.7e15 in 2024),
# so starts are bounded far above today's epoch (year ~5100) and each trace
# is measured from its own first kernel; durations and gaps stay under MAX_US
MAX_START_US = 1e17
# the decoder builds an object per JSON object (~90 bytes, more with its
# strings): a file of ``{},{},...`` would cost 30x its size. Real Kineto traces
# have ~140 bytes of text per ``{``; more objects than one per this many
# bytes of the cap is refused before decoding, so memory stays near 4x the cap
BYTES_PER_OBJECT = 96
CAP_HINT = "[profile] max_trace_mb, --max-trace-mb"
_GZIP_MAGIC = b"\x1f\x8b"
_IN_PIECE = 1 << 16  # compressed bytes fed at once
_OUT_PIECE = 1 << 18  # decompressed bytes taken at once (the overshoot past the cap)


@dataclass(frozen=True)
class TraceLimits:
    """The largest trace file read, in MiB, on disk and once decompressed."""

    max_mb: int = DEFAULT_MAX_MB

    @property
    def max_bytes(self) -> int:
        return self.max_mb << 20


def open_trace(path: str, limits: TraceLimits = TraceLimits()):
    """``path`` opened for binary reading: a regular file no larger than the
    cap (checked before any byte is read), else :class:`TraceError`."""
    try:
        fh = open_regular(path)
    except NotRegularFile as exc:
        raise TraceError(path, str(exc).removeprefix(f"{path}: ")) from None
    except OSError as exc:
        raise TraceError(path, exc.strerror or str(exc)) from None
    if os.fstat(fh.fileno()).st_size > limits.max_bytes:
        fh.close()
        raise over_cap(path, limits)
    return fh


def over_cap(path: str, limits: TraceLimits, what: str = "the file is over") -> TraceError:
    return TraceError(path, f"{what} the {limits.max_mb} MiB limit ({CAP_HINT})")


def read_trace_bytes(path: str, limits: TraceLimits = TraceLimits()) -> bytes | bytearray:
    """The file's text (gzip inflated, found by its magic bytes), or :class:`TraceError`."""
    with open_trace(path, limits) as fh:
        try:
            # what fstat says, +1 to see a file that grew since; never a buffer
            # of the whole cap for a small file
            size = os.fstat(fh.fileno()).st_size
            data = fh.read(size + 1)
            if len(data) > size:
                data += fh.read(limits.max_bytes + 1 - len(data))
        except OSError as exc:
            raise TraceError(path, exc.strerror or str(exc)) from None
    if len(data) > limits.max_bytes:
        raise over_cap(path, limits)
    if data[:2] == _GZIP_MAGIC:
        return _gunzip(path, data, limits)
    return data


def _gunzip(path: str, data: bytes, limits: TraceLimits) -> bytearray:
    """Every gzip member of ``data`` inflated, never past the cap."""
    cap = limits.max_bytes
    out = bytearray()
    view = memoryview(data)
    start = 0
    while True:
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        pos = start
        try:
            while not d.eof and pos < len(data):
                tail: bytes | memoryview = view[pos:pos + _IN_PIECE]
                pos += len(tail)
                while tail and not d.eof:
                    out += d.decompress(tail, _OUT_PIECE)
                    if len(out) > cap:
                        raise over_cap(path, limits, "decompresses to more than")
                    tail = d.unconsumed_tail
            if not d.eof:
                out += d.flush()  # what is left is less than zlib's window
                if len(out) > cap:
                    raise over_cap(path, limits, "decompresses to more than")
        except zlib.error as exc:
            raise TraceError(path, f"corrupt gzip: {exc}") from None
        if not d.eof:
            raise TraceError(path, "truncated gzip (the file ends inside the compressed data)")
        start = pos - len(d.unused_data)
        if start >= len(data) or data.count(0, start) == len(data) - start:
            return out  # the end, or zero padding after it (as gzip itself allows)
        if data[start:start + 2] != _GZIP_MAGIC:
            raise TraceError(path, f"not gzip after byte {start} (trailing garbage)")


def check_objects(path: str, text: bytes | bytearray, limits: TraceLimits) -> None:
    """:class:`TraceError` when ``text`` holds more JSON objects than a trace
    within the cap can (counted as ``{``, strings included: an over-count)."""
    most = limits.max_bytes // BYTES_PER_OBJECT
    n = text.count(b"{")
    if n > most:
        raise TraceError(path, f"{n:,} JSON objects is more than a trace within the "
                               f"{limits.max_mb} MiB limit holds (at most {most:,}; {CAP_HINT})")


def cut_name(name: str) -> str:
    """``name``, or its first :data:`MAX_NAME_CHARS` characters, its length and
    a hash of the whole (distinct long names stay distinct)."""
    if len(name) <= MAX_NAME_CHARS:
        return name
    digest = hashlib.blake2b(name.encode("utf-8", "surrogatepass"), digest_size=4).hexdigest()
    return f"{name[:MAX_NAME_CHARS]}…[{len(name)} chars #{digest}]"


def too_many_kernels(path: str) -> TraceError:
    return TraceError(path, f"more than {MAX_KERNEL_NAMES} distinct kernel names: "
                            "not a profile perftriage can summarise")


def quoted(name: str) -> str:
    """A kernel name short enough to quote in an error."""
    return repr(name if len(name) <= 60 else name[:60] + "…")
