"""Remote text is never read as Textual markup (issue 42 item 5).

``textual.markup.escape`` leaves ``[2 x=1`` as it is (only ``[`` before a
letter, ``#``, ``/`` or ``@`` is escaped), and inside a markup line such as
``[b]NAME[/b]`` the parser takes it for the start of a tag with a value and
the app exits with a ``MarkupError``; a name ending in ``\\`` escapes the tag
after it. An ncu kernel, a GPU and a process on it are named by the host,
so each is shown here through the keys a user presses: ``G`` (the Gap view's
"where the bandwidth goes") and Enter on the host (the host detail). The
Hosts pane, the Logs pane's tabs and rows, the baseline lines and the probe
output's title get the same names and check the mechanism: what the widget
was given is ``Content`` (never a markup string), with the text verbatim (a
trailing ``\\`` a real backslash, ``[bold]`` and ``[link=…]`` no style)."""

from __future__ import annotations

import json

from textual.content import Content
from textual.widgets import Input, Label, Select, Static, Tab

from perftriage.core.model import events as ev
from perftriage.services.cockpit import Cockpit
from perftriage.services.hosts.registry import HostRegistry
from perftriage.ui.app import PerftriageApp
from perftriage.ui.screens.host_detail import HostDetailScreen
from perftriage.ui.screens.probe_output import ProbeOutputScreen
from perftriage.ui.screens.roofline import RooflineScreen
from perftriage.ui.widgets.hosts import HostsPane, host_block
from perftriage.ui.widgets.logs import LogsPane
from perftriage.ui.widgets.probes import ProbesPane
from tests.support.helpers import FIXTURES, wait_for

KERNEL = "k[2 x=1"
GPU = "NVIDIA H200 [2 x=1"
PROCESS = "k[2 x=1"
BACKSLASH = "sglang\\"  # a name ending in a backslash: it escaped the closing tag after it


def _text(widget: Static) -> str:
    return str(widget.render())


def _app_with(emit) -> PerftriageApp:
    cockpit = Cockpit(registry=HostRegistry())
    emit(cockpit.session)
    return PerftriageApp(cockpit)


def _ncu(session) -> None:
    record = json.loads((FIXTURES / "ncu" / "probe-ncu-moe-step.json").read_text())
    detail = record["detail"]
    for k in detail["ncu"]["kernels"]:
        if k["name"].startswith("fused_moe_kernel"):
            k["name"] = KERNEL + "[/b] " + BACKSLASH
    session.emit(ev.ProbeQueued(probe_id="p7", host="gpu-a", kind="ncu", args=record["args"]))
    session.emit(ev.ProbeFinished(probe_id="p7", status="ok", exit_status=0, summary="",
                                  detail=detail))


async def test_g_shows_a_kernel_named_like_markup() -> None:
    app = _app_with(_ncu)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.press("G")
        await wait_for(lambda: isinstance(app.screen, RooflineScreen))
        await pilot.pause()
        shown = "\n".join(_text(w) for w in app.screen.query(Static))
        await wait_for(lambda: KERNEL in "\n".join(_text(w) for w in app.screen.query(Static)))
        assert app.is_running and isinstance(app.screen, RooflineScreen)
        assert f"{KERNEL}[/b] {BACKSLASH}" in "\n".join(
            _text(w) for w in app.screen.query(Static)), shown


def _gpu_host(session) -> None:
    session.emit(ev.HostSample(
        host="gpu-a", cpu_pct=5.0, per_cpu_pct=[5.0], mem_used_bytes=2**30,
        mem_total_bytes=2**34, load1=0.5,
        gpus=[ev.GpuSample(index=0, name=GPU, uuid="GPU-" + BACKSLASH, util_pct=50.0,
                           pstate="P0" + BACKSLASH, throttle=["[2 x=1", BACKSLASH],
                           processes=[ev.GpuProcess(pid=4242, name=PROCESS, used_mib=10.0),
                                      ev.GpuProcess(pid=4243, name=BACKSLASH)])]))


async def test_enter_on_a_host_shows_gpu_and_process_names_like_markup() -> None:
    app = _app_with(_gpu_host)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        assert app.is_running
        await pilot.press("D")
        await wait_for(lambda: isinstance(app.screen, HostDetailScreen))
        await pilot.pause()
        body = _text(app.screen.query_one("#host-detail-body", Static))
        assert app.is_running and isinstance(app.screen, HostDetailScreen)
        assert GPU in body and f"GPU-{BACKSLASH}" in body
        assert f"pid     4242  {PROCESS}" in body and f"pid     4243  {BACKSLASH}" in body
        assert f"clocks held by: [2 x=1, {BACKSLASH}" in body


# remote text that markup would read as a tag, a style, a link, or an escape
# of the tag after it (the trailing backslash)
HOSTILE = ("[2 x=1", "k[2 x=1", "[bold]x[/]", "[link=http://x]y[/link]", "name\\")


def _verbatim(content, *texts: str) -> None:
    """``content`` is Content (not a markup string Textual parsed) and shows
    each of ``texts`` as it is, with no link made of it."""
    assert isinstance(content, Content), type(content)
    for text in texts:
        assert text in content.plain, (text, content.plain)
    assert not any("link" in str(span.style) or "http" in str(span.style)
                   for span in content.spans), content.spans


def _hostile_hosts(session) -> None:
    for i, name in enumerate(HOSTILE):
        session.emit(ev.HostStatus(host=name, state="down" if i % 2 else "up",
                                   reason=f"why {name}"))
        session.emit(ev.HostSample(
            host=name, cpu_pct=5.0, mem_used_bytes=2**30, mem_total_bytes=2**34, load1=0.5,
            gpu_error=f"nvidia-smi: {name}",
            gpus=[ev.GpuSample(index=0, name=f"NVIDIA {name}", util_pct=50.0)]))


async def test_hosts_pane_shows_host_names_reasons_and_errors_as_text() -> None:
    app = _app_with(_hostile_hosts)
    async with app.run_test(size=(160, 45)) as pilot:
        body = app.screen.query_one("#hosts-body", Static)
        await wait_for(lambda: all(n in str(body.render()) for n in HOSTILE))
        await pilot.pause()
        assert app.is_running
        _verbatim(body.content, *HOSTILE, *(f"why {n}" for n in HOSTILE))
        state = app.cockpit.session.state
        for compact in (False, True):  # the short form names the GPU model too
            block = host_block(state.hosts["name\\"], state.last_t, width=200, compact=compact)
            _verbatim(block, "name\\ ", "why name\\", "nvidia-smi: name\\")
        _verbatim(host_block(state.hosts["[bold]x[/]"], state.last_t, width=200, compact=True),
                  "1× [bold]x[/]")


def _hostile_logs(session) -> None:
    for i, name in enumerate(HOSTILE):
        session.emit(ev.LogSourceOpened(source_id=f"log{i}", host=name, path=f"/var/log/{i}.log"))
    session.emit(ev.LogSourceOpened(source_id="logb", host="localhost", path="/var/log/name\\"))
    session.emit(ev.LogLines(source_id="log1", lines=[
        "[2026-11-28 09:16:06 TP0] Decode batch, #running-req: 1, #token: 852, token usage: "
        "0.00, cuda graph: True, gen throughput (token/s): 250.0, #queue-req: 0"]))
    session.emit(ev.LogSourceStatus(source_id="log0", state="error",
                                    reason=" ".join(HOSTILE)))


async def test_logs_pane_shows_log_names_and_reasons_as_text() -> None:
    app = _app_with(_hostile_logs)
    async with app.run_test(size=(160, 45)) as pilot:
        pane = app.screen.query_one(LogsPane)
        await wait_for(lambda: len(pane.query(Tab)) == len(HOSTILE) + 2)
        await pilot.pause()
        assert app.is_running
        labels = [tab.label for tab in pane.query(Tab)]
        for i, name in enumerate(HOSTILE):
            assert f"{name}:{i}.log" in [label.plain for label in labels]
        assert "name\\" in [label.plain for label in labels]  # not shown as U+29F5
        for label in labels:
            _verbatim(label)
        # the figures' source (several logs: which one they are from)
        metrics = pane.query_one("#logs-metrics", Static)
        await wait_for(lambda: "250.0" in str(metrics.render()))
        _verbatim(metrics.content, f"{HOSTILE[1]}:1.log", "gen 250.0 tok/s")
        # the status row: the first unwell log's path and why (the host's words)
        status = pane.query_one("#logs-status", Static)
        await wait_for(lambda: "error" in str(status.render()))
        _verbatim(status.content, "/var/log/0.log: error: " + " ".join(HOSTILE))
        # a filter typed by the user goes in the same row, as text too
        pane.view.focus()
        await pilot.press("f")
        await pilot.pause()
        for ch in "[b]x":
            await pilot.press(ch)
        await pilot.press("enter")
        await wait_for(lambda: "+/[b]x/" in str(status.render()), timeout=3)
        assert app.is_running
        _verbatim(status.content, "+/[b]x/")


def _hostile_baseline(session) -> None:
    session.emit(ev.BaselineMarked(start=0.0, end=1.0, label=" ".join(HOSTILE)))


async def test_baseline_lines_show_the_baseline_label_as_text() -> None:
    app = _app_with(_hostile_baseline)
    async with app.run_test(size=(160, 45)) as pilot:
        shown = app.screen.query_one("#logs-baseline", Static)
        await wait_for(lambda: "baseline" in str(shown.render()))
        _verbatim(shown.content, "baseline " + " ".join(HOSTILE))
        await pilot.press("G")
        await wait_for(lambda: isinstance(app.screen, RooflineScreen))
        gap = app.screen.query_one("#gap-live", Static)
        await wait_for(lambda: "baseline" in str(gap.render()))
        assert app.is_running
        _verbatim(gap.content, "baseline " + " ".join(HOSTILE))


def _hostile_probe(session) -> None:
    session.emit(ev.ProbeQueued(probe_id="p1", host=HOSTILE[0], kind="shell",
                                args=list(HOSTILE[1:])))


async def test_probe_output_title_shows_host_and_args_as_text() -> None:
    app = _app_with(_hostile_probe)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        app.screen.query_one(ProbesPane).table.focus()
        await pilot.press("enter")
        await wait_for(lambda: isinstance(app.screen, ProbeOutputScreen))
        title = app.screen.query_one("#probe-output-title", Label)
        await wait_for(lambda: "p1" in str(title.render()))
        assert app.is_running
        _verbatim(title.content, f"p1 · {HOSTILE[0]} · shell {' '.join(HOSTILE[1:])} · queued")


async def test_probes_pane_border_names_the_target_host_as_text() -> None:
    """The Probes pane's border says where probes run: a host's name, so a
    str subtitle (read as markup) would style or link it."""
    app = _app_with(_hostile_hosts)
    async with app.run_test(size=(160, 45)) as pilot:
        probes = app.screen.query_one(ProbesPane)
        await wait_for(lambda: probes._border_subtitle is not None
                       and probes._border_subtitle.plain.startswith("→ "))
        await pilot.press("1")  # the Hosts pane: ↓ moves the target
        seen = set()
        for _ in HOSTILE:
            await pilot.press("down")
            host = app.screen.query_one(HostsPane).selected_host
            await wait_for(lambda: probes._border_subtitle.plain == f"→ {host}")
            _verbatim(probes._border_subtitle, f"→ {host}")  # Textual keeps the title as Content
            seen.add(host)
        assert app.is_running and seen == set(HOSTILE)


async def test_prompt_form_shows_title_help_and_error_as_text() -> None:
    """A prompt's help lists hosts (``X``: remove a host) and its error quotes
    them or what was typed: text, never markup."""
    from perftriage.ui.screens.prompt import PromptScreen

    names = ", ".join(HOSTILE)
    app = _app_with(lambda session: None)
    async with app.run_test(size=(160, 45)) as pilot:
        # the host choice (a probe's form, the capture form) lists host names too
        app.push_screen(PromptScreen(f"hosts: {HOSTILE[2]}", "test.hostile", help=f"hosts: {names}",
                                     validate=lambda v: f"not one of: {names}\n{v}",
                                     choices=[(h, h) for h in HOSTILE], choice=HOSTILE[4]))
        await wait_for(lambda: isinstance(app.screen, PromptScreen))
        await pilot.pause()
        for ch in "k[2":
            await pilot.press(ch)
        await pilot.press("enter")
        error = app.screen.query_one("#prompt-error", Label)
        await wait_for(lambda: "not one of" in str(error.render()))
        assert app.is_running and isinstance(app.screen, PromptScreen)
        _verbatim(error.content, f"not one of: {names}\nk[2")
        _verbatim(app.screen.query_one("#prompt-help", Label).content, f"hosts: {names}")
        title = app.screen.query(Label).first()
        _verbatim(title.content, f"hosts: {HOSTILE[2]}")
        choice = app.screen.query_one("#prompt-choice", Select)
        for host in HOSTILE:
            choice.value = host
            await pilot.pause()
            shown = choice.query_one("SelectCurrent #label", Static).render()
            assert str(shown) == host, (str(shown), host)
        assert app.is_running and app.screen.choice == HOSTILE[-1]


async def test_hypothesis_form_quotes_a_check_as_text() -> None:
    """The form's error quotes the check as typed, under a caret: a ``[b]`` in
    it stays (else the caret points at the wrong character)."""
    from perftriage.ui.screens.hypothesis_form import HypothesisFormScreen

    app = _app_with(lambda session: None)
    async with app.run_test(size=(160, 45)) as pilot:
        app.push_screen(HypothesisFormScreen(f"edit hypothesis {HOSTILE[3]}", "t"))
        await wait_for(lambda: isinstance(app.screen, HypothesisFormScreen))
        await pilot.pause()
        app.screen.query_one("#hyp-check", Input).value = "[bold]x[/] >"
        await pilot.press("ctrl+s")
        error = app.screen.query_one("#hyp-form-error", Label)
        await wait_for(lambda: "check" in str(error.render()))
        assert app.is_running and isinstance(app.screen, HypothesisFormScreen)
        _verbatim(error.content, "\n  [bold]x[/] >\n")
        _verbatim(app.screen.query(Label).first().content, f"edit hypothesis {HOSTILE[3]}")


async def test_gap_form_error_quotes_a_gpu_name_as_text() -> None:
    app = _app_with(lambda session: None)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.press("G")
        await wait_for(lambda: isinstance(app.screen, RooflineScreen))
        for key, value in (("weights_gb", "10"), ("gpus", "1"), ("gpu", HOSTILE[2])):
            app.screen.query_one(f"#rl-{key}", Input).value = value
        out = app.screen.query_one("#roofline-result", Static)
        await wait_for(lambda: "unknown GPU" in str(out.render()))
        assert app.is_running
        _verbatim(out.content, f"unknown GPU {HOSTILE[2]!r}")


def test_hypotheses_pane_live_gap_line_is_text_with_the_host_names_as_they_are():
    """A recording made before the triage leads the Hypotheses pane with the
    live gap per host: a Rich ``Text``, the hosts in it as text."""
    from rich.text import Text

    from perftriage.core.model.reducer import apply
    from perftriage.core.model.state import SessionState
    from perftriage.ui.widgets.hypotheses import live_gap_line

    state = SessionState()
    for host in HOSTILE:
        for t in range(8):
            apply(state, ev.GapSample(host=host, gap=2.0, traffic_ratio=1.5, t=float(t)))
    line = live_gap_line(state)
    assert isinstance(line, Text)
    for host in HOSTILE:
        assert f"2.00× on {host} · traffic 1.5×" in line.plain
    assert {str(span.style) for span in line.spans} == {"bold"}  # the gap figures only


def _ranks_named_like_markup(session) -> None:
    import msgspec

    from perftriage.core.profile.summarize import summarize_files

    prof = FIXTURES / "profile"
    summary = summarize_files([prof / f"eager-TP-{i}.trace.json.gz" for i in (0, 1)])
    rows = [msgspec.structs.replace(r, rank=name)
            for r, name in zip(summary.per_rank, ("x[/b]", "[link=http://x]y[/link]"))]
    session.emit(ev.ProfileCaptured(capture_id="prof1", host="gpu-a", steps=5,
                                    summary=msgspec.structs.replace(summary, per_rank=rows)))


async def test_profile_view_ranks_named_like_markup() -> None:
    """A rank is named by its trace file: a DataTable reads a str cell as Rich
    markup (``[/b]`` with no tag open is a MarkupError there)."""
    from textual.widgets import DataTable

    from perftriage.ui.screens.profile import ProfileScreen

    app = _app_with(_ranks_named_like_markup)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.press("P")
        await wait_for(lambda: isinstance(app.screen, ProfileScreen))
        ranks = app.screen.query_one("#profile-ranks", DataTable)
        await wait_for(lambda: ranks.row_count == 2)
        await pilot.pause()
        assert app.is_running
        shown = [ranks.get_cell_at((i, 0)) for i in range(2)]
        assert [cell.plain for cell in shown] == ["x[/b]", "[link=http://x]y[/link]"]
