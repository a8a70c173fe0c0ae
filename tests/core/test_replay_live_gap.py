"""`replay SESSION --at T --json` carries the live gap per host at T, from
the real three-host H200 recording: it differs between the slow and the
fast phase (the recorded roofline ``gaps`` does not)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

RUN2 = Path(__file__).parents[1] / "fixtures" / "gpm" / "h200-run2" / "transcript.jsonl"


def _at(t: str) -> dict:
    out = subprocess.run([sys.executable, "-m", "perftriage", "replay", str(RUN2), "--at", t,
                          "--json"], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def test_live_gap_per_host_follows_t():
    slow, fast = _at("20"), _at("60")
    assert slow["gaps"] == fast["gaps"]
    for host in ("localhost", "viadmon", "viapynvml"):
        s, f = slow["live_gaps"][host], fast["live_gaps"][host]
        assert s["verdict_kind"] == "wasted-traffic" and s["gap"] > 8
        assert f["verdict_kind"] == "near-floor" and f["gap"] < 1.2
        assert 0 <= s["age_s"] < 2 and s["sample_t"] <= 20
        assert f["span"]["from_t"] > 30 and f["span"]["verdict_kind"] == "near-floor"
        assert f["span"]["samples"] >= 20 and f["span"]["gap"] < 1.2


def test_before_the_first_sample_there_is_no_live_gap():
    assert _at("0.5")["live_gaps"] == {}
