"""A kernel or frame name cannot restructure the report's tables (issue 42
item 2). GFM splits a table row at every unescaped ``|``, also inside a code
span, so a name ``run|<img …>`` used to end its cell and put the rest of the
name in the row as raw HTML; a name holding ``[click](…)`` used to become a
link once out of its code span. The report is parsed here with markdown-it's
GFM tables, as GitHub renders it."""

from __future__ import annotations

import json
from pathlib import Path

from markdown_it import MarkdownIt
from markdown_it.token import Token

from perftriage.core.model import events as ev
from perftriage.core.model.reducer import apply
from perftriage.core.model.state import SessionState
from perftriage.core.probe_kinds.stacks_kind import STACKS_KIND
from perftriage.core.profile.model import BucketShare, KernelRow, LaunchOp, ProfileSummary
from perftriage.core.report.markdown import render
from tests.support.helpers import FIXTURES
from tests.support.stacks_support import result, text

PIPE_HTML = "run|<img src=x onerror=alert(1)>"
LINK = "[click](http://127.0.0.1/steal)"
BACKSLASH_PIPE = "a\\|<b>bold</b>"
TICKS = "x`|`<i>y</i>"
NAMES = (PIPE_HTML, LINK, BACKSLASH_PIPE, TICKS)


def _stacks(state: SessionState) -> None:
    dump = json.loads(text("dump.json"))
    frames = dump[0]["frames"]
    for f, name in zip(frames, NAMES):
        f["name"] = name
    frames[0]["short_filename"] = frames[0]["filename"] = "/x|<img src=y>/[l](http://z).py"
    dump = [json.loads(json.dumps(t)) for t in dump for _ in range(3)]  # 6 threads: shown
    v = STACKS_KIND.interpret([], 0, result([{"pid": 4242, "name": "py|<b>x</b>", "rc": 0,
                                              "out": json.dumps(dump), "err": ""}]), "")
    apply(state, ev.ProbeQueued(probe_id="s1", host="gpu-a", kind="stacks", args=[]))
    apply(state, ev.ProbeFinished(probe_id="s1", status=v.status, summary=v.summary,
                                  detail=v.detail))


def _profile(state: SessionState) -> None:
    kernels = [KernelRow(name=name, bucket=f"b|<u>{i}</u>", total_ms=1.0, calls=2, avg_us=5.0,
                         pct=10.0, launched_by=[LaunchOp(op=name, call=None, calls=2)])
               for i, name in enumerate(NAMES)]
    kernels.append(KernelRow(name="k_call", bucket="gemm", total_ms=1.0, calls=1, avg_us=1.0,
                             pct=1.0, launched_by=[LaunchOp(op=None, call=PIPE_HTML, calls=1)]))
    s = ProfileSummary(files=["t.json"], ranks=1, window_ms=10.0, kernel_ms=5.0, idle_pct=1.0,
                       exposed_comm_ms=None, buckets=[BucketShare("gemm", 5.0, 100.0)],
                       kernels=kernels)
    apply(state, ev.ProfileCaptured(capture_id="prof1", host="h", url="", engine="sglang",
                                    steps=1, summary=s))


def _ncu(state: SessionState) -> None:
    record = json.loads((FIXTURES / "ncu" / "probe-ncu-moe-step.json").read_text())
    detail = record["detail"]
    for k, name in zip(detail["ncu"]["kernels"], NAMES):
        k["name"] = name
    apply(state, ev.ProbeQueued(probe_id="n1", host="gpu-a", kind="ncu", args=record["args"]))
    apply(state, ev.ProbeFinished(probe_id="n1", status="ok", exit_status=0,
                                  summary="NVIDIA H200", detail=detail))


def _tables(tokens: list[Token]) -> dict[str, list[list[str]]]:
    """Each table, by its first two header cells: its rows (header first),
    each cell as the text it renders to."""
    tables: dict[str, list[list[str]]] = {}
    rows: list[list[str]] = []
    row: list[str] = []
    for i, t in enumerate(tokens):
        if t.type == "table_open":
            rows = []
        elif t.type == "tr_open":
            row = []
        elif t.type in ("th_open", "td_open"):
            row.append("".join(c.content for c in tokens[i + 1].children or ()))
        elif t.type == "tr_close":
            rows.append(row)
        elif t.type == "table_close":
            tables[f"{rows[0][0]} {rows[0][1]}"] = rows
    return tables


def _cell_code(tokens: list[Token]) -> set[str]:
    return {c.content for t in tokens if t.type == "inline" for c in t.children or ()
            if c.type == "code_inline"}


def test_hostile_names_stay_in_their_cells_in_every_table() -> None:
    state = SessionState()
    _stacks(state)
    _profile(state)
    _ncu(state)
    md = render(state)
    for title in ("## Stacks", "## Profiles", "## Kernels against their roofline"):
        assert title in md
    tokens = MarkdownIt("commonmark").enable("table").parse(md)
    kinds = {t.type for t in tokens} | {c.type for t in tokens for c in t.children or ()}
    assert not kinds & {"link_open", "image", "html_inline", "html_block"}, kinds
    tables = _tables(tokens)
    for header in ("frame where", "kernel bucket", "kernel launches"):
        rows = tables[header]
        assert len(rows) > len(NAMES), header
        assert all(len(r) == len(rows[0]) for r in rows), (header, rows)
    # every name is shown whole, as code, in each table
    shown = _cell_code(tokens)
    for name in NAMES:
        assert name in shown, name
    # a frame's file, a bucket, a launcher's call and a process's command: text, whole
    frame_rows = tables["frame where"]
    assert any(r[1].startswith("/x|<img src=y>/[l](http://z).py:") for r in frame_rows)
    assert [r[1] for r in tables["kernel bucket"][1:5]] == [f"b|<u>{i}</u>" for i in range(4)]
    assert any(r[-1].startswith(PIPE_HTML) for r in tables["kernel bucket"])
    assert "pid 4242 py\\|\\<b\\>x\\</b\\>" in md

