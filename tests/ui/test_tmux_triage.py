"""From the demo cockpit's start to the top finding on screen, in a real
terminal (tmux): how many keys (at most 5: asserted) and how many seconds
(issue 40's target: 60 s; printed, not asserted — a loaded CI box runs it
slower, and the project has no timing asserts in its tests). The default
demo's simulated server tells the README's story (the slow MoE backend: its
GPUs busy, its captures written from its state): ``G`` Enter records the
gap (the form is prefilled), ``Y`` opens the Triage view, Enter on the lead
takes the capture on the lead's host, and the top finding it gives — the
MoE kernel's, below its roofline — is on screen without another key.

Prints the figures (``-s`` shows them): keys, seconds to the first triage
line, seconds to the confirmed top finding. Each wait fails at once when
the screen says why it cannot end (the server gone, the step failed), and
says the screen and the transcript's last events.
"""

from __future__ import annotations

import re

from tests.support.tmux_demo import TmuxDemo
from tests.ui.test_tmux_focus_keys import needs_tmux

MAX_KEYS = 5
START_S = 60.0  # the demo's start (issue 40's whole target; generous for a loaded box)
STEP_S = 120.0  # the capture's result once it visibly started (seconds on a quiet box)
# the screen saying that a wait cannot end: the server gone, the step failed
GONE = ("failed to start", "server sglang-sim exited", "server sglang-sim failed")
STEP_FAILED = (*GONE, "ran: capture on localhost failed")
# a top finding with its share in the Triage view's table: "high  kernel-below-roofline  48 %"
CONFIRMED = re.compile(r"│ (high|moderate|lead) +([a-z-]+) +\d+ %")


@needs_tmux
def test_demo_start_to_the_top_finding_on_screen(tmp_path):
    with TmuxDemo(tmp_path) as demo:
        # the main screen's one line: the triage's lead from the first readings
        demo.wait_screen(lambda s: "triage localhost: lead" in s, "the triage line", START_S,
                         fail=GONE)
        first_line = demo.seconds
        demo.press("G")
        demo.wait_screen(lambda s: "roofline: decode floor and gap" in s, "the gap form", 20)
        demo.press("Enter")
        demo.wait_screen(lambda s: "roofline: decode floor and gap" not in s, "the gap recorded",
                         20)
        demo.press("Y")
        # the view's first frame is its border alone: wait for the table and the detail
        view = demo.wait_screen(lambda s: "Findings, ranked" in s and "⏎ runs:" in s,
                                "the Triage view with its lead's next step", 20, fail=GONE)
        assert "⏎ runs: a profile capture of 5 steps from http://127.0.0.1:" in view
        assert "on localhost (pauses an eager server for seconds)" in view
        demo.press("Enter")
        # Enter is never silent: the detail says the capture runs (or what it gave)
        demo.wait_screen(lambda s: "ran: capturing 5 steps from http://127.0.0.1:" in s
                         or "← capture prof1" in s, "the capture started", 20, fail=STEP_FAILED)
        # the capture's finding (a loaded box's readings can confirm a small one of
        # their own first, e.g. a queue of one: wait for the one the capture gives)
        found = demo.wait_screen(lambda s: CONFIRMED.search(s) is not None
                                 and "← capture prof1" in s,
                                 "a confirmed finding from the capture", STEP_S, fail=STEP_FAILED)
        seconds = demo.seconds
        m = CONFIRMED.search(found)
        assert m is not None
        top = m.group(2)
        print(f"\ndemo start → triage line {first_line:.1f} s; → top finding {top!r} "
              f"({m.group(1)}) on screen: {demo.keys} keys, {seconds:.1f} s")
        assert demo.keys <= MAX_KEYS  # the seconds are the printed figure (target: 60 s)
        assert top == "kernel-below-roofline"
        # the evidence says where it came from: the capture, with its id and time, and
        # names the MoE kernel (its innermost template name, not a cut prefix)
        assert re.search(r"← capture prof1 at \d+:\d\d(?::\d\d)?: GPU busy", found)  # the one clock
        assert "MoeFCGemm" in found
        # back on the main screen, its one line says the same
        demo.press("Escape")
        demo.wait_screen(lambda s: f"triage localhost: {m.group(1)} · {top}" in s,
                         "the main screen's line", 10)
