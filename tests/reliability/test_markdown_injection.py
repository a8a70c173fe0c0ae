"""Remote text cannot restructure the Markdown report: a probe's output,
summary, a host's reason, a log line, a hypothesis or a note that holds
Markdown or HTML stays text when the report is rendered (parsed here with
markdown-it, the CommonMark parser rich uses)."""

from __future__ import annotations

from markdown_it import MarkdownIt

from perftriage.core.model import events as ev
from perftriage.core.report import markdown as report
from perftriage.core.store import transcript
from perftriage.services.investigation.session import Session

LINK = "[click me](http://127.0.0.1/steal)"
IMAGE = "![t](http://127.0.0.1/track.png)"
HTML = "<img src=x onerror=alert(1)>"
BREAKOUT = "``` ` `` done\n# Injected heading\n" + LINK + "\n```"


def hostile(tag: str) -> str:
    return f"{tag} {LINK} {IMAGE} {HTML} `x` | y"


def write_session(tmp_path):
    s = Session("md", hosts=["gpu1"], sessions_dir=tmp_path)
    s.emit(ev.HostStatus(host="gpu1", state="retrying", reason=hostile("reason")))
    s.emit(ev.ProbeQueued(probe_id="p1", host="gpu1", kind="shell", args=[hostile("arg")],
                          command="echo"))
    s.emit(ev.ProbeStarted(probe_id="p1"))
    s.emit(ev.ProbeOutput(probe_id="p1", data=BREAKOUT + "\n" + hostile("out") + "\n"))
    s.emit(ev.ProbeFinished(probe_id="p1", status="failed", exit_status=1,
                            summary=hostile("summary")))
    s.emit(ev.HypothesisAdded(hyp_id="h1", title=hostile("title")))
    s.emit(ev.EvidenceLinked(hyp_id="h1", ref_kind="probe", ref_id="p1", stance="for"))
    s.emit(ev.NoteAdded(text=hostile("note") + "\n# second line heading"))
    s.emit(ev.LogSourceOpened(source_id="l1", host="gpu1", path="/var/log/server.log"))
    s.emit(ev.LogLines(source_id="l1", lines=["ERROR " + hostile("log") + " ``` `` `"]))
    s.close()
    return s.path


def test_remote_markdown_stays_text(tmp_path):
    text = report.render_transcript(transcript.read(write_session(tmp_path)))
    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    kinds = set()
    for t in tokens:
        kinds.add(t.type)
        kinds.update(c.type for c in t.children or ())
    assert not kinds & {"link_open", "image", "html_inline", "html_block"}, kinds
    headings = [tokens[i + 1].content for i, t in enumerate(tokens) if t.type == "heading_open"]
    assert not any("Injected" in h or "second line" in h for h in headings), headings
    # the probe's output is one fenced block holding all of it, fence lines included
    fences = [t for t in tokens if t.type == "fence"]
    assert any("# Injected heading" in f.content and "```" in f.content for f in fences)
    # every piece was kept: shown, not dropped
    for tag in ("reason", "summary", "title", "note", "log"):
        assert tag in text
    table = [t for t in tokens if t.type == "tbody_open"]
    assert table  # the probe table still parses as a table (the | in the summary is escaped)


def test_code_spans_hold_any_backticks():
    for raw in ("plain", "a `b` c", "``x", "x``", "```"):
        tokens = MarkdownIt("commonmark").parseInline(report.code(raw))[0].children
        assert [t.type for t in tokens] == ["code_inline"] and tokens[0].content == raw, raw
