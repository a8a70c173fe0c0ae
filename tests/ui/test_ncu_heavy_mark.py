"""A heavy probe (ncu replays every kernel) is marked in the Probes pane, its
form says HEAVY, and the palette offers it as such."""

from perftriage.core import probes
from perftriage.core.model.state import ProbeState
from perftriage.ui.widgets.probes import HEAVY_MARK, probe_label


def test_heavy_rows_are_marked_and_light_ones_are_not():
    ncu = ProbeState(probe_id="p1", host="gpu-a", kind="ncu", args=["python3", "moe_step.py"])
    which = ProbeState(probe_id="p2", host="gpu-a", kind="which", args=["ncu"])
    assert probe_label(ncu).startswith(HEAVY_MARK)
    assert not probe_label(which).startswith(HEAVY_MARK)
    assert len(probe_label(ncu, 20)) <= 20
    # every kind that declares itself heavy says so where it is launched
    for spec in probes.KINDS.values():
        if spec.heavy:
            assert "HEAVY" in spec.form_note and "HEAVY" in spec.help
