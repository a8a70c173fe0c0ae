"""The parse helper process: ``python -m perftriage.services.flood.scan_helper``.

It reads request frames on stdin and answers each with a frame on stdout
(a 4-byte big-endian length, then the body): a request is a batch of log
lines joined by ``\\n`` (UTF-8, surrogates passed through), the answer the
msgpack of its :func:`~perftriage.core.parse.batch_scan.triage`. It imports
only what that needs, so it starts in a few tens of milliseconds. The app's
side is :class:`perftriage.services.flood.scan_worker.ScanWorker`.
"""

from __future__ import annotations

import struct
import sys
from typing import BinaryIO

import msgspec

from perftriage.core.parse.batch_scan import triage

FRAME = struct.Struct(">I")


def serve(stdin: BinaryIO, stdout: BinaryIO) -> None:
    """The helper's loop: a request frame in, its triage out, until EOF."""
    encode = msgspec.msgpack.Encoder().encode
    while True:
        head = stdin.read(FRAME.size)
        if len(head) < FRAME.size:
            return
        (size,) = FRAME.unpack(head)
        body = stdin.read(size)
        if len(body) < size:
            return
        lines = body.decode("utf-8", "surrogatepass").split("\n")
        reply = encode(triage(lines))
        stdout.write(FRAME.pack(len(reply)) + reply)
        stdout.flush()


if __name__ == "__main__":
    serve(sys.stdin.buffer, sys.stdout.buffer)
