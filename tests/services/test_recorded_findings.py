"""A finding read back from a transcript is history, never evidence (issue
47, item 3): continuing a crafted investigation whose ``triage.updated``
events confirm host-stall on a host the cockpit does not have (and on one it
has), no hypothesis gets them as evidence; only what this process's live
triage derives, on the cockpit's own hosts, links."""

from __future__ import annotations

import json

from perftriage.core.model import events as ev
from perftriage.core.store import investigations as inv
from perftriage.services.compare.baseline import Baseline
from perftriage.services.investigation.named import open_investigation
from perftriage.services.triage.live import LiveTriage
from tests.core.test_triage_real import EAGER
from tests.reliability.test_odd_findings import GOOD, HEADER
from tests.services.test_triage_live import capture, decode, stacks

OWN = ["gpu1"]


def crafted(tmp_path) -> None:
    events = [{"type": "hypothesis.added", "hyp_id": "h1", "title": "the host stalls",
               "check": "triage.host_stall_pct >= 15", "t": 0.5}]
    for host in ("evil", "gpu1"):  # a host the cockpit lacks, and its own one (recorded)
        events.append({"type": "triage.updated", "t": 1.0, "host": host, "start": 0.0,
                       "end": 1.0, "findings": [{**GOOD, "host": host}]})
    lines = [json.dumps({**HEADER, "name": "crafted", "hosts": ["evil"]})]
    lines += [json.dumps(e, separators=(",", ":")) for e in events]
    inv.path_for("crafted", tmp_path).write_text("\n".join(lines) + "\n")


def linked(session) -> list[str]:
    h = session.state.hypothesis("h1")
    assert h is not None
    return [e.ref_id for e in h.evidence]


def test_recorded_findings_never_link_live_ones_of_own_hosts_do(tmp_path):
    crafted(tmp_path)
    session = open_investigation("crafted", tmp_path, OWN)
    try:
        assert set(session.state.triage) == {"evil", "gpu1"}  # shown: history
        live = LiveTriage(session, Baseline(session), own_hosts=lambda: OWN)
        session.emit(ev.NoteAdded(text="a new run"))
        live.tick()
        assert linked(session) == []  # the recorded host-stall of evil and of gpu1: no link
        # live evidence of a stall on a host the cockpit lacks: derived, but not its host
        decode(session, 1, 20, host="evil", source="l-evil")
        capture(session, 22.5, EAGER, host="evil", cid="prof-evil")
        stacks(session, 24.0, host="evil", probe_id="p-evil")
        live.tick()
        assert any(f.cause == "host-stall" and f.confirmed for f in live.current["evil"].findings)
        assert linked(session) == []
        # the same on its own host: linked, once
        decode(session, 30, 49, host="gpu1", source="l1")
        capture(session, 51.5, EAGER, host="gpu1", cid="prof1")
        stacks(session, 53.0, host="gpu1", probe_id="p1")
        live.tick(now=60.0)
        assert linked(session) == ["gpu1:host-stall"]
    finally:
        session.close()
