"""Every recorded string is hostile on every output path.
The bundled investigation with its GPU host renamed to a name holding an
OSC title, BEL, a bidi override, C1 CSI, CR/LF and a heading, a link, an
image-less HTML tag, a pipe and a backtick: the report keeps its structure,
and no output (report, sessions, replay --json, triage text and JSON,
compare) writes a control character to the terminal. ``sessions`` printed a
raw 0x9b byte for a header host ``\\udc9b`` (a lone surrogate, which the
stream's surrogateescape wrote back as the byte)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from perftriage.core.report import markdown as report
from perftriage.core.store import transcript
from tests.support.helpers import EXAMPLE_SESSION

HOST = ("gpu\x1b]0;t\x07\u202e\x9b\r\n# Injected [l](http://127.0.0.1/x) "
        "<img src=x onerror=1>|`")
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
                    "\ud800-\udfff]")


@pytest.fixture(scope="module")
def evil(tmp_path_factory) -> Path:
    """The bundled investigation, its host ``gpu-a`` renamed to :data:`HOST`
    wherever a JSON value is that name (header, events)."""
    out = tmp_path_factory.mktemp("evil") / "evil.jsonl"
    out.write_text(EXAMPLE_SESSION.read_text().replace('"gpu-a"', json.dumps(HOST)))
    return out


def _structure(text: str) -> tuple[list[str], set[str]]:
    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    kinds = {t.type for t in tokens} | {c.type for t in tokens for c in t.children or ()}
    return [t.tag for t in tokens if t.type == "heading_open"], kinds


def test_the_report_keeps_its_structure_with_a_hostile_host_name(evil: Path) -> None:
    clean = report.render_transcript(transcript.read(EXAMPLE_SESSION))
    text = report.render_transcript(transcript.read(evil))
    headings, kinds = _structure(text)
    assert headings == _structure(clean)[0]  # no heading made by the name
    assert not kinds & {"link_open", "image", "html_inline", "html_block"}, kinds
    assert not UNSAFE.search(text)
    assert "gpu␛\\]0;t␇" in text  # shown (the bracket escaped), not dropped
    # the hosts lines, the Hosts section and the throughput row stay one line each
    lines = text.splitlines()
    assert len(lines) == len(clean.splitlines())
    assert sum(ln.startswith("- Hosts: ") for ln in lines) \
        == sum(ln.startswith("- Hosts: ") for ln in clean.splitlines())
    assert not any(ln.startswith("# Injected") for ln in lines)


def _run(*args: str) -> str:
    res = subprocess.run([sys.executable, "-m", "perftriage", *args], capture_output=True,
                         timeout=120)
    out = (res.stdout + res.stderr).decode("utf-8", "surrogateescape")
    assert res.returncode == 0, out[-2000:]
    return out


@pytest.mark.parametrize("args", [
    ["report", "{evil}", "-o", "-"], ["replay", "{evil}", "--json"], ["triage", "{evil}"],
    ["triage", "{evil}", "--json"], ["compare", "{evil}", "{evil}"],
], ids=["report", "replay-json", "triage", "triage-json", "compare"])
def test_no_output_writes_a_control_from_a_host_name(evil: Path, args: list[str]) -> None:
    out = _run(*(a.format(evil=evil) for a in args))
    assert "gpu" in out and not UNSAFE.search(out), UNSAFE.findall(out)[:5]


def test_sessions_shows_a_header_hosts_bytes_visibly(tmp_path: Path) -> None:
    lines = EXAMPLE_SESSION.read_text().splitlines()
    header = json.loads(lines[0])
    header["hosts"] = ["a\udc9bb", "c\u009bd", "e\x1b[2Jf"]
    (tmp_path / "x.jsonl").write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
    out = _run("--sessions-dir", str(tmp_path), "sessions")
    assert not UNSAFE.search(out), UNSAFE.findall(out)
    assert "a\\x9bb, c<9b>d, e␛[2Jf" in out
    listed = json.loads(_run("--sessions-dir", str(tmp_path), "sessions", "--json"))
    assert listed[0]["hosts"][0] == "a\udc9bb"  # JSON keeps the value, escaped
