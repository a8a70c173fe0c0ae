"""One truth for where probes go: the Hosts pane's ▶, the Probes pane's
border and the probe forms all show the probe target, which changes only
visibly (a Down in Hosts moves the ▶ from the target, and says so)."""

from __future__ import annotations

from textual.widgets import Static

from perftriage.ui.widgets.hosts import HostsPane
from perftriage.ui.widgets.probes import ProbesPane

from tests.support.helpers import capture_notifications, wait_for
from tests.ui.test_hosts_pane import make_app, two_gpu_sample
from perftriage.core.model import events as ev


def _marked(app) -> str:
    body = str(app.screen.query_one("#hosts-body", Static).render())
    return next((line for line in body.splitlines() if "▶" in line), "")


async def test_border_hosts_mark_and_down_agree_on_the_gpu_host(tmp_path):
    app = make_app(tmp_path)
    async with app.run_test(size=(160, 45)) as pilot:
        app.session.emit(ev.HostSample(host="localhost", cpu_pct=1.0, mem_used_bytes=1,
                                       mem_total_bytes=2, load1=0.1))
        app.session.emit(two_gpu_sample("gpubox"))
        probes = app.screen.query_one(ProbesPane)
        await wait_for(lambda: probes.border_subtitle == "→ gpubox")  # not a stale localhost
        await wait_for(lambda: "gpubox" in _marked(app))
        assert app.screen.query_one(HostsPane).selected_host == "gpubox"
        toasts = capture_notifications(app)
        await pilot.press("1", "down")  # from the target: gpubox is last, so localhost
        await wait_for(lambda: probes.border_subtitle == "→ localhost")
        await wait_for(lambda: "localhost" in _marked(app))
        assert ("probes now run on localhost", "information") in toasts
        await pilot.press("down")
        await wait_for(lambda: probes.border_subtitle == "→ gpubox")
        # the form's host choice defaults to the same target
        assert app.launcher.target.target(app.launcher.hosts) == "gpubox"
