"""`replay SESSION --at T --json` carries the live gap per host at T, from
the real three-host H200 recording: it differs between the slow and the
fast phase (the recorded roofline ``gaps`` does not). Figures only: what
they mean is the triage's (``triage`` at T), never a verdict of the gap."""

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
        assert s["gap"] > 8 and s["traffic_ratio"] > 4.5
        assert f["gap"] < 1.2 and f["traffic_ratio"] < 1.1
        assert 0 <= s["age_s"] < 2 and s["sample_t"] <= 20
        assert not {"verdict", "verdict_kind", "span"} & set(s)  # the gap judges no more
    # the recording has no triage.updated (recorded before the live triage): the
    # phase of the recording's triage that holds T, as `perftriage triage` says; the
    # three names read one GPU (the same UUID): one machine, triaged as viadmon
    assert set(slow["triage"]) == set(fast["triage"]) == {"viadmon"}
    slow_t, fast_t = slow["triage"]["viadmon"], fast["triage"]["viadmon"]
    assert slow_t["source"] == "recording" and (slow_t["from"], slow_t["to"]) == (0.0, 30.0)
    assert slow_t["top"] == "wasted-traffic" and fast_t["top"] == "near-floor"
    assert fast_t["earlier"][0]["state"] == "resolved"


def test_before_the_first_sample_there_is_no_live_gap():
    assert _at("0.5")["live_gaps"] == {}
