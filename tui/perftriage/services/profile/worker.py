"""Summarise trace files in a child process, so the cockpit stays responsive.

msgspec holds the GIL while it decodes: a 300 MB trace parsed in a thread
would freeze the UI's event loop for seconds. A child Python process
(``python -m perftriage.services.profile.worker``) reads the files, writes
the summary as JSON on stdout, and exits, giving its memory back; the
parent only decodes a small JSON object. Errors come back as one line on
stderr (a :class:`TraceError`'s text, naming the file).
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import msgspec

from perftriage.core.profile.model import ProfileSummary, TraceError
from perftriage.core.profile.reader import DEFAULT_MAX_MB

_SUMMARY = msgspec.json.Decoder(ProfileSummary)


async def summarize_in_child(paths: Sequence[str | Path],
                             rules: list[tuple[str, str]] | None = None,
                             max_trace_mb: int = DEFAULT_MAX_MB) -> ProfileSummary:
    """The summary of ``paths``; :class:`TraceError` when a file cannot be read
    (over ``max_trace_mb``, not a regular file, not a trace)."""
    request = json.dumps({"paths": [str(p) for p in paths], "rules": rules or [],
                          "max_trace_mb": max_trace_mb}).encode()
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "perftriage.services.profile.worker",
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE)
    try:
        out, err = await proc.communicate(request)
    except BaseException:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        raise
    if proc.returncode != 0:
        text = err.decode("utf-8", "replace").strip().splitlines()
        first = str(paths[0]) if paths else "?"
        raise TraceError(first, text[-1] if text else f"worker exited {proc.returncode}")
    return _SUMMARY.decode(out)


def main() -> int:
    from perftriage.core.profile.buckets import RuleError
    from perftriage.core.profile.reader import TraceLimits
    from perftriage.core.profile.summarize import summarize_files

    req = json.loads(sys.stdin.buffer.read())
    limits = TraceLimits(max_mb=int(req.get("max_trace_mb", DEFAULT_MAX_MB)))
    try:
        summary = summarize_files(req["paths"], [tuple(r) for r in req["rules"]], limits)
    except (TraceError, RuleError) as exc:
        print(str(exc), file=sys.stderr)
        return 2
    sys.stdout.buffer.write(msgspec.json.encode(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
