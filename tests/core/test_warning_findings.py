"""Warnings are findings: a kernel fallback logged 60 times reads as one
line ×60 with its first and last time in the report, and the evidence
picker offers it before routine decode lines.

The SGLang line is sglang 0.5.23's own warning
(srt/layers/attention/linear/kernels/gdn_flashinfer.py:343-345, in
SGLang's "[%(asctime)s TP0] %(message)s" format, utils/common.py:2630,
which carries no level); the vLLM line is in vLLM 0.33.0's logger format
(vllm/logger.py:28-32) with the level WARNING.
"""

from __future__ import annotations

from perftriage.core.model import events as ev
from perftriage.core.model import reducer
from perftriage.core.model.state import SessionState
from perftriage.core.report import markdown
from perftriage.core.view.log_kinds import classify_log_line
from perftriage.core.view.evidence import candidates

START = "2026-11-28T09:20:00+00:00"
FALLBACK = ("[2026-11-28 09:20:{s:02d} TP{r}] FlashInfer GDN mutable buffer 'state' has data_ptr "
            "140211520016 (mod 32 = 16); falling back to Triton for this call.")
SM120 = ("(EngineCore_DP0 pid=311) WARNING 11-28 09:20:{s:02d} [fp8_utils.py:120] DeepGEMM "
         "is not available for sm120; using the Triton FP8 block GEMM")
DECODE = ("[2026-11-28 09:20:{s:02d} TP0] Decode batch, #running-req: 8, #token: 900, token usage: "
          "0.01, cuda graph: True, gen throughput (token/s): 400.00, #queue-req: 0")


def _replay():
    lines = []
    for s in range(30):  # 60 warnings in all, from two ranks, amid decode lines
        lines += [FALLBACK.format(s=s, r=0), FALLBACK.format(s=s, r=1), DECODE.format(s=s)]
    lines.append(SM120.format(s=31))
    events: list[ev.Event] = [
        ev.LogSourceOpened(source_id="l1", host="gpu-a", path="/var/log/server.log", t=1.0),
        ev.LogLines(source_id="l1", lines=lines[:45], t=2.0),
        ev.LogLines(source_id="l1", lines=lines[45:], t=31.0),
    ]
    return reducer.replay(events, SessionState(name="s", started_at=START)), events


def test_kinds():
    assert classify_log_line(FALLBACK.format(s=1, r=0)) == "fallback"
    assert classify_log_line(SM120.format(s=1)) == "fallback"
    assert classify_log_line("(APIServer pid=1) WARNING 11-28 09:20:01 [x.py:1] slow tokenizer"
                             ) == "warning"
    assert classify_log_line(DECODE.format(s=1)) is None


def test_report_folds_the_warnings_with_first_and_last_time():
    state, events = _replay()
    text = markdown.render(state, events=events)
    section = text.split("### Notable events", 1)[1].split("### Throughput", 1)[0]
    assert "Nothing notable" not in section
    # every rank and second folded into one line: ×60, first at 0:02, last at 0:31
    assert "0:02 fallback in gpu-a:/var/log/server.log (×60, last at 0:31)" in section
    assert "falling back to Triton" in section
    assert "fallback in gpu-a:/var/log/server.log: `(EngineCore_DP0 pid=311) WARNING" in section


def test_picker_offers_the_findings_first():
    state, _ = _replay()
    items = candidates(state).items
    kinds = [c.summary.split(":")[0] for c in items[:2]]
    assert sorted(kinds) == ["fallback", "fallback ×60"]
    # the routine decode lines come after every finding
    decode_at = [i for i, c in enumerate(items) if "Decode batch" in c.summary]
    assert decode_at and min(decode_at) >= 2


def test_report_throughput_sums_data_parallel_engines():
    dp = ("[2026-11-28 09:20:{s:02d} DP{d} TP{d}] Decode batch, #running-req: 8, #token: 900, "
          "token usage: 0.01, cuda graph: True, gen throughput (token/s): {g:.2f}, #queue-req: 0")
    lines = [dp.format(s=s, d=d, g=100.0 * (d + 1)) for s in range(5) for d in range(2)]
    events: list[ev.Event] = [
        ev.LogSourceOpened(source_id="l1", host="gpu-a", path="/var/log/server.log", t=1.0),
        ev.LogLines(source_id="l1", lines=lines, t=2.0)]
    state = reducer.replay(events, SessionState(name="s", started_at=START))
    text = markdown.render(state, events=events)
    # after the first line every sample is engine 0 + engine 1 = 300 tok/s
    assert "10 decode lines; generation throughput min 100 / median 300 / max 300 tok/s" in text
