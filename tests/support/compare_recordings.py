"""Recordings for the before/after tests, made of real captures.

``two_runs(path)`` writes a named investigation of two runs: run 1 is the
slow phase of the real H200 run (``tests/fixtures/gpm/h200-run``: the
cockpit's transcript of ``decode_standin.py`` on an H200, the workload of
``../shared/fixtures/h200-bandwidth``, with the live gap and GPM counters),
run 2 its fast phase, as if the server had been restarted with another MoE backend in
between. Around them: the server starts (with their commands), a version
probe per run, a hypothesis that becomes supported, and a profile capture per
run summarised from the real H200 traces in ``tests/fixtures/profile`` (eager
in run 1, the CUDA-graph replay in run 2, 5 steps each)."""

from __future__ import annotations

import json
from pathlib import Path

from perftriage.core.model import events as ev
from perftriage.core.profile.summarize import summarize_files
from perftriage.core.store import investigations, stream

FIX = Path(__file__).resolve().parents[1] / "fixtures"
H200_RUN = FIX / "gpm" / "h200-run" / "transcript.jsonl"
STANDIN = FIX / "session-h200-standin.jsonl"  # = ../shared/fixtures/h200-bandwidth/
PROFILE = FIX / "profile"
RUN2_T = 34.0  # the fast phase starts here
COMMAND = ("python -m sglang.launch_server --model-path Qwen/Qwen3-30B-A3B --tp 1 "
           "--moe-runner-backend {backend}")


def real_events(path: Path = H200_RUN) -> list[ev.Event]:
    _, offset = stream.header_and_offset(path)
    return [e for _, e in stream.iter_events(path, offset)
            if not isinstance(e, (ev.SessionEnded,))]


def _probe(pid: str, t: float, version: str) -> list[ev.Event]:
    return [ev.ProbeQueued(probe_id=pid, host="localhost", kind="version", args=["sglang"], t=t),
            ev.ProbeFinished(probe_id=pid, status="ok", detail={"versions": {"sglang": version}},
                             t=t + 0.5)]


def added_events(model_b: str = "Qwen/Qwen3-30B-A3B", eager_ranks: int = 1) -> list[ev.Event]:
    eager = summarize_files([str(PROFILE / f"eager-TP-{r}.trace.json.gz")
                             for r in range(eager_ranks)])
    graph = summarize_files([str(PROFILE / "graph-TP-0.trace.json.gz")])
    command_b = COMMAND.format(backend="flashinfer_cutedsl").replace(
        "Qwen/Qwen3-30B-A3B", model_b)
    return [
        ev.SegmentStarted(segment=1, started_at="2026-12-01T01:00:00+00:00", t=0.0),
        ev.ServerEvent(server="sglang", host="localhost", state="starting",
                       command=COMMAND.format(backend="triton"), t=0.01),
        ev.HypothesisAdded(hyp_id="h1", title="the MoE kernel is the gap", t=1.0),
        *_probe("p1", 2.0, "0.5.2"),
        ev.ProfileCaptured(capture_id="prof1", host="localhost", summary=eager, steps=5, t=30.0),
        ev.SegmentStarted(segment=2, started_at="2026-12-01T02:00:00+00:00", gap_s=3600,
                          t=RUN2_T),
        ev.ServerEvent(server="sglang", host="localhost", state="starting", command=command_b,
                       t=RUN2_T + 0.01),
        *_probe("p2", 36.0, "0.5.3"),
        ev.HypothesisUpdated(hyp_id="h1", status="supported", t=60.0),
        ev.ProfileCaptured(capture_id="prof2", host="localhost", summary=graph, steps=5, t=70.0),
    ]


def two_runs(path: Path, name: str = "moe-restart", model_b: str = "Qwen/Qwen3-30B-A3B",
             eager_ranks: int = 1) -> Path:
    """``eager_ranks`` 2: run 1's capture holds both ranks of the eager trace (TP 2)."""
    events = sorted([*real_events(), *added_events(model_b, eager_ranks)], key=lambda e: e.t)
    header = investigations.header_for(name, "2026-12-01T01:00:00+00:00", ["localhost"])
    with open(path, "wb") as fh:
        fh.write(json.dumps(header).encode() + b"\n")
        for e in events:
            fh.write(ev.encode(e) + b"\n")
    return path
