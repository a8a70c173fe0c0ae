"""Detail view of one host: every GPU with clocks (current / max), P-state,
throttle reasons, peak bandwidth and its processes, then the
``nvidia-smi topo -m`` matrix. Renders from session state only; the data
is fetched by ``Cockpit.host_detail`` (a worker, never from here directly)
and arrives as HostInfo events, so a replay shows the same view.
"""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding
from textual.content import Content
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Label, Static

from perftriage.ui.app_context import app_context
from perftriage.core.model.events import GpuProcess
from perftriage.core.model import host_info
from perftriage.core.model.state import HostState, Section, SessionState
from perftriage.ui.screens.detail_modal import DetailModal
from perftriage.core.sanitize import visible
from perftriage.ui.widgets.format import gib, markup, num, text_lines
from perftriage.ui.widgets.status_style import styled, threshold
from perftriage.ui.widgets.footer import FittingFooter

REFETCH_S = 5.0  # processes and topology are fetched from the host this often


def _processes(hs: HostState, index: int, sampled: list[GpuProcess]) -> list[tuple[int, str, float | None]]:
    if sampled:
        return [(p.pid, p.name, p.used_mib) for p in sampled]
    fetched = (hs.info.get("processes") or {}).get(str(index)) or []
    return [(p.get("pid", 0), p.get("name", ""), p.get("used_mib")) for p in fetched]


def topo_lines(topo: dict) -> list[Content]:
    cols = topo.get("columns") or []
    rows = topo.get("rows") or []
    table = [["", *cols], *[[str(c) for c in r] for r in rows]]
    widths = [max(len(r[i]) if i < len(r) else 0 for r in table) for i in range(len(table[0]))]
    out = []
    for n, r in enumerate(table):
        cells = [(r[i] if i < len(r) else "").ljust(widths[i]) for i in range(len(widths))]
        line = "  ".join(cells).rstrip()
        out.append(markup(" [b]$line[/b]" if n == 0 else " $line", line=line))
    legend = topo.get("legend") or []
    if legend:
        out.append(Content(""))
        out += [markup(" [$text-muted]$x[/]", x=x) for x in legend]
    return out


def host_detail_text(hs: HostState) -> Content:
    """The host detail as Content: every name, reason and error from the host
    is put in as text (markup), never read as markup."""
    lines: list[Content | str] = [
        markup("[b]$name[/b] ", name=hs.name) + Content.from_markup(styled(hs.conn_state))
        + (markup(" [$text-muted]$reason[/]", reason=hs.reason) if hs.reason else "")]
    info = hs.info
    facts = []
    if info.get("driver"):
        facts.append(f"driver {info['driver']}")
    if info.get("gpu_source"):
        facts.append(f"via {info['gpu_source']}")
    if info.get("bandwidth_gbs_total"):
        facts.append(f"peak memory bandwidth {info['bandwidth_gbs_total'] / 1000:.2f} TB/s")
    if facts:
        lines.append(markup(" [$text-muted]$facts[/]", facts=" · ".join(facts)))
    s = hs.sample
    if s is None:
        lines.append(" [$text-muted]no sample yet[/]")
    else:
        lines.append(
            f" CPU {num(s.cpu_pct, '{:.1f}')}% over {len(s.per_cpu_pct) or '?'} cores"
            f" · RAM {gib(s.mem_used_bytes)}/{gib(s.mem_total_bytes)}"
            f" · load {num(s.load1, '{:.2f}')} {num(s.load5, '{:.2f}')} {num(s.load15, '{:.2f}')}"
        )
        if s.gpu_error:
            lines.append(markup(" [$text-muted]$error[/]", error=s.gpu_error))
        if hs.counters is not None and hs.counters.error:  # the Hosts pane has no room for it
            lines.append(markup(" [$text-muted]bandwidth counters: $error[/]",
                                error=hs.counters.error))
        for g in s.gpus:
            lines.append("")
            lines.append(markup(f" [b]GPU{g.index}[/b] $name [$text-muted]$uuid[/]",
                                name=g.name, uuid=g.uuid))
            lines.append(
                f"   util [{threshold(g.util_pct, 50, 90)}]{num(g.util_pct)}%[/]"
                f" (memory {num(g.mem_util_pct)}%)"
                f" · mem {num(g.mem_used_mib)}/{num(g.mem_total_mib)} MiB"
                f" · power {num(g.power_w, '{:.1f}')}/{num(g.power_limit_w)} W"
                f" · [{threshold(g.temp_c, 75, 85)}]{num(g.temp_c)}°C[/]"
            )
            bw = g.bandwidth_gbs or host_info.gpu_bandwidth(info, g.index)
            lines.append(markup(
                f"   clocks SM {num(g.sm_clock_mhz)}/{num(g.sm_clock_max_mhz)} MHz"
                f" · mem {num(g.mem_clock_mhz)}/{num(g.mem_clock_max_mhz)} MHz"
                " · $pstate"
                + (f" · bus {g.bus_width_bits} bit" if g.bus_width_bits else "")
                + (f" · peak {bw / 1000:.2f} TB/s" if bw else ""), pstate=g.pstate or "P?"))
            if g.throttle:
                lines.append(markup("   [$warning]clocks held by: $why[/]",
                                    why=", ".join(g.throttle)))
            procs = _processes(hs, g.index, g.processes)
            if procs:
                for pid, name, used in procs:
                    lines.append(markup(f"   pid {pid:>8}  $name {num(used)} MiB",
                                        name=visible(str(name or "?")).ljust(24)))
            else:
                lines.append("   [$text-muted]no compute processes[/]")
    lines.append("")
    lines.append(" [b]topology[/b] (nvidia-smi topo -m)")
    if info.get("topo"):
        lines += topo_lines(info["topo"])
    elif info.get("topo_error"):
        lines.append(markup(" [$text-muted]$error[/]", error=info["topo_error"]))
    else:
        lines.append(" [$text-muted]not fetched yet[/]")
    return text_lines(lines)


class HostDetailScreen(DetailModal):
    SECTIONS: ClassVar[frozenset[Section]] = frozenset({Section.HOSTS})
    DEFAULT_CSS = """
    HostDetailScreen #host-detail-title { padding: 0 1; text-style: bold; }
    HostDetailScreen VerticalScroll { height: 1fr; }
    """
    BINDINGS = [
        Binding("escape,q", "close", "Close", id="host_detail.close"),
        Binding("left", "switch(-1)", "Prev host", id="host_detail.prev"),
        Binding("right", "switch(1)", "Next host", id="host_detail.next"),
        Binding("r", "refresh_detail", "Refresh", id="host_detail.refresh"),
    ]

    def __init__(self, host: str) -> None:
        super().__init__()
        self.host = host

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label("", id="host-detail-title")
            with VerticalScroll():
                yield Static("", id="host-detail-body")
            yield FittingFooter()

    def on_mount(self) -> None:
        app_context(self).refresher.watch(self)
        self.action_refresh_detail()
        self.set_interval(REFETCH_S, self.action_refresh_detail)

    @property
    def state(self) -> SessionState:
        return app_context(self).session.state

    def show_state(self, state: SessionState) -> None:
        hs = state.hosts.get(self.host)
        names = list(state.hosts)
        pos = names.index(self.host) + 1 if self.host in names else 0
        self.query_one("#host-detail-title", Label).update(
            markup(f"host $host  ({pos}/{len(names)}; ←/→ other hosts)", host=self.host))
        body = (host_detail_text(hs) if hs is not None
                else markup("unknown host $host", host=self.host))
        self.query_one("#host-detail-body", Static).update(body)

    def action_refresh_detail(self) -> None:
        cockpit = app_context(self).cockpit
        if cockpit.replay:
            return
        self.run_worker(cockpit.host_detail(self.host), group="host-detail",
                        exclusive=True, exit_on_error=False)

    def action_switch(self, step: int) -> None:
        names = list(self.state.hosts)
        if not names:
            return
        pos = names.index(self.host) if self.host in names else 0
        self.host = names[(pos + step) % len(names)]
        self.show_state(self.state)
        self.action_refresh_detail()

    def action_close(self) -> None:
        self.dismiss(None)
