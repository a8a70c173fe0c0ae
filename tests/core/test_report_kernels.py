"""The report's "Kernels against their roofline" section and the ncu probe's
own block, from the real H200 probe record (tests/fixtures/ncu/)."""

import json
from pathlib import Path

from perftriage.core.model import events as ev
from perftriage.core.model.reducer import apply
from perftriage.core.model.state import SessionState
from perftriage.core.report.markdown import render

RECORD = json.loads((Path(__file__).parents[1] / "fixtures" / "ncu"
                     / "probe-ncu-moe-step.json").read_text())


def state_with(detail) -> SessionState:
    state = SessionState()
    apply(state, ev.ProbeQueued(probe_id="p1", host="gpu-a", kind="ncu", args=RECORD["args"]))
    apply(state, ev.ProbeStarted(probe_id="p1"))
    apply(state, ev.ProbeFinished(probe_id="p1", status="ok", exit_status=0,
                                  summary="NVIDIA H200: 18 kernels", detail=detail))
    return state


def test_no_ncu_no_section():
    assert "Kernels against their roofline" not in render(SessionState())


def test_the_section_names_where_the_bandwidth_goes():
    md = render(state_with(RECORD["detail"]))
    section = md.split("## Kernels against their roofline", 1)[1].split("\n## ", 1)[0]
    assert "p1 on gpu-a: NVIDIA H200, peak 4800 GB/s" in section
    assert "- fused_moe_kernel: 4 % of the profiled kernel time at 50 % of peak: the " \
           "largest recoverable share" in section
    row = next(x for x in section.splitlines() if x.startswith("| `fused_moe_kernel`"))
    assert "| 8 |" in row and "memory-bound below roofline" in row
    # the probe's own block carries its table too
    assert "kernels against their roofline (Nsight Compute)" in md


def test_a_hostile_kernel_name_stays_text():
    detail = json.loads(json.dumps(RECORD["detail"]))
    detail["ncu"]["kernels"][0]["name"] = "evil](http://x)<img src=y>`"
    md = render(state_with(detail))
    from markdown_it import MarkdownIt

    kinds = set()
    for tok in MarkdownIt("commonmark").enable("table").parse(md):
        kinds.add(tok.type)
        kinds.update(c.type for c in tok.children or [])
    assert not kinds & {"link_open", "image", "html_inline", "html_block"}
    assert "evil](http://x)" in md  # shown, as text
