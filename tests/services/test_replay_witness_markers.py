"""A profile capture, a stacks record and an ncu result are replay markers of
their own kinds: ``>`` walks to each, and the bar says
which it was."""

from __future__ import annotations

from perftriage.core.model import events as ev
from perftriage.core.profile.summarize import summarize_files
from perftriage.core.replay.player import Player
from perftriage.core.replay.timeline import Timeline
from perftriage.services.investigation.session import Session
from perftriage.simulator import trace_synth
from perftriage.simulator.scenarios import SCENARIOS


def _recorded(tmp_path):
    paths = trace_synth.write(SCENARIOS["kernel-below-roofline"].trace(
        "flashinfer_cutlass", 2, 3), tmp_path, "k")
    s = Session("witnesses", hosts=["gpu"], sessions_dir=tmp_path)
    s.emit(ev.NoteAdded(text="start"))
    s.emit(ev.ProfileCaptured(capture_id="prof1", host="gpu", summary=summarize_files(paths)))
    for pid, kind, args in (("p1", "stacks", ["--seconds", "3"]), ("p2", "ncu", ["--kernel", "x"]),
                            ("p3", "which", ["nsys"])):
        s.emit(ev.ProbeQueued(probe_id=pid, host="gpu", kind=kind, args=args))
        s.emit(ev.ProbeFinished(probe_id=pid, status="ok"))
    s.close()
    return s.path


def test_captures_stacks_and_ncu_are_markers_of_their_own(tmp_path):
    tl = Timeline.open(_recorded(tmp_path))
    tl.scan()
    kinds = [(m.kind, m.label) for m in tl.markers]
    assert [k for k, _ in kinds] == ["note", "capture", "stacks", "ncu", "probe"]
    capture = dict(kinds)["capture"]
    assert capture.startswith("prof1 gpu: 55 % ") and "MoeFCGemm" in capture
    assert dict(kinds)["stacks"].startswith("p1 stacks --seconds 3")


def test_next_marker_walks_to_each(tmp_path):
    tl = Timeline.open(_recorded(tmp_path))
    tl.scan()
    player = Player(tl)
    walked = []
    while (m := player.next_marker()) is not None:
        player.seek(m.index + 1)
        walked.append(m.kind)
    assert walked[:4] == ["note", "capture", "stacks", "ncu"]
