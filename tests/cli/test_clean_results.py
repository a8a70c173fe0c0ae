"""Probe results as a person reads them: no internal answer protocol in
`which`'s stdout, a cut traceback keeps its last line (the exception), and
the report shows a successful grep's first matches."""

from __future__ import annotations

import json
import sys

from click.testing import CliRunner

from perftriage.cli import cli
from perftriage.core.model.reducer import apply
from perftriage.core.model.state import SessionState
from perftriage.core.report import markdown as report
from perftriage.core.store import transcript
from perftriage.services.cockpit import Cockpit

from tests.cli.test_probe_cli import invoke


def test_which_json_stdout_has_no_protocol_lines(tmp_path):
    r = invoke(tmp_path, "--json", "which", "sh", "no-such-tool-here")
    data = json.loads(r.output)
    assert data["detail"]["paths"]["no-such-tool-here"] is None
    assert data["detail"]["paths"]["sh"].endswith("/sh")
    assert data["stdout"] == ""  # was "2\n+/usr/bin\n-\n"


def test_an_old_transcript_with_the_protocol_is_cleaned_on_replay():
    from perftriage.core.model import events as ev

    state = SessionState()
    for e in (ev.ProbeQueued(probe_id="p1", host="h", kind="which", args=["nsys", "sh"]),
              ev.ProbeOutput(probe_id="p1", stream="stdout", data="motd line\n2\n-\n+/usr/bin\n"),
              ev.ProbeFinished(probe_id="p1", status="failed", exit_status=1)):
        apply(state, e)
    assert state.probes["p1"].stdout == "motd line\n"


async def _session_with(tmp_path, monkeypatch, probes: list[tuple[str, list[str]]]) -> str:
    """A real headless cockpit runs the probes on localhost; its report."""
    deep = tmp_path / "deep"
    deep.mkdir()
    for i in range(1, 7):
        (deep / f"m{i}.py").write_text(f"import m{i + 1}\n")
    (deep / "m7.py").write_text('raise RuntimeError("CUDA driver too old for cutedsl")\n')
    (deep / "kernels.py").write_text("".join(f"def cutedsl_kernel_{i}(): pass\n"
                                             for i in range(9)))
    monkeypatch.setenv("PYTHONPATH", f"{deep}")
    cfg = tmp_path / "config.toml"
    cfg.write_text(f'[[hosts]]\nname = "localhost"\npython = "{sys.executable}"\n')
    from perftriage.core.store.config import load

    cockpit = Cockpit(load(cfg), sessions_dir=tmp_path / "sessions")
    await cockpit.start()
    try:
        for kind, args in probes:
            await cockpit.probes.wait(cockpit.probes.enqueue("localhost", kind, args))
    finally:
        await cockpit.stop()
    (path,) = (tmp_path / "sessions").glob("*.jsonl")
    return report.render_transcript(transcript.read(path))


async def test_report_keeps_the_exception_line_and_shows_grep_matches(tmp_path, monkeypatch):
    text = await _session_with(tmp_path, monkeypatch, [
        ("import", ["m1"]), ("grep", ["cutedsl_kernel", "kernels"]),
        ("which", ["sh"])])
    timeline = text[text.index("## Probe timeline"):]
    assert "RuntimeError: CUDA driver too old for cutedsl" in timeline
    assert "more lines)" in timeline  # the traceback was cut, not its last line
    assert "— matches:" in timeline
    assert timeline.count("cutedsl_kernel_") >= 5
    assert "more matches)" in timeline
    assert "+/usr" not in timeline
