"""Remote text is never read as Textual markup (issue 42 item 5).

``textual.markup.escape`` leaves ``[2 x=1`` as it is (only ``[`` before a
letter, ``#``, ``/`` or ``@`` is escaped), and inside a markup line such as
``[b]NAME[/b]`` the parser takes it for the start of a tag with a value and
the app exits with a ``MarkupError``; a name ending in ``\\`` escapes the tag
after it. An ncu kernel, a GPU and a process on it are named by the host,
so each is shown here through the keys a user presses: ``G`` (the Gap view's
"where the bandwidth goes") and Enter on the host (the host detail)."""

from __future__ import annotations

import json

from textual.widgets import Static

from perftriage.core.model import events as ev
from perftriage.services.cockpit import Cockpit
from perftriage.services.hosts.registry import HostRegistry
from perftriage.ui.app import PerftriageApp
from perftriage.ui.screens.host_detail import HostDetailScreen
from perftriage.ui.screens.roofline import RooflineScreen
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


def test_safe_markup_never_lets_a_remote_backslash_escape_the_next_tag():
    """Panes that still compose markup strings (hosts, logs, baseline lines):
    a remote name ending in a backslash cannot swallow the closing tag after
    it and let the style run on (issue 42 item 5)."""
    from textual.content import Content

    from perftriage.ui.widgets.format import safe

    for name, shown in (("sglang\\", "sglang⧵"), ("k[2 x=1", "k[2 x=1"), ("a\\[b", "a\\[b")):
        content = Content.from_markup(f"[b]{safe(name)}[/b] tail")
        assert content.plain == f"{shown} tail"
        assert [(s.start, s.end) for s in content.spans] == [(0, len(shown))]
