"""Hosts pane: per host its state, CPU / RAM / load, and one row per GPU."""

from __future__ import annotations

from textual.containers import VerticalScroll
from textual.markup import escape
from textual.widgets import Static

from tui.core.state import HostState, SessionState
from tui.widgets.format import bar, gib, num, sparkline
from tui.widgets.pane import Pane
from tui.widgets.status_style import styled, threshold

STALE_AFTER_S = 5.0


def host_block(hs: HostState, now_t: float) -> str:
    s = hs.sample
    state = hs.conn_state
    age = (now_t - hs.sample_t) if hs.sample_t is not None else None
    if state == "up" and age is not None and age > STALE_AFTER_S:
        state_txt = styled("stale", f"stale {age:.0f}s")
    else:
        state_txt = styled(state)
    head = f"[b]{escape(hs.name)}[/b] {state_txt}"
    if hs.reason:
        head += f" [$text-muted]{escape(hs.reason)}[/]"
    lines = [head]
    if s is not None:
        mem_pct = (
            100.0 * s.mem_used_bytes / s.mem_total_bytes
            if s.mem_used_bytes is not None and s.mem_total_bytes
            else None
        )
        cpu_col = threshold(s.cpu_pct, 70, 90)
        lines.append(
            f" CPU [{cpu_col}]{bar(s.cpu_pct, 8)}[/] {num(s.cpu_pct, '{:5.1f}')}%"
            f"  RAM {gib(s.mem_used_bytes)}/{gib(s.mem_total_bytes)} ({num(mem_pct)}%)"
            f"  load {num(s.load1, '{:.2f}')} {sparkline(hs.cpu_history, 16, hi=100)}"
        )
        if s.gpu_error and not s.gpus:
            lines.append(f" [$text-muted]{escape(s.gpu_error)}[/]")
        for g in s.gpus:
            col = threshold(g.util_pct, 50, 90)
            hist = sparkline(hs.util_history.get(g.index, ()), 16, hi=100)
            lines.append(
                f" GPU{g.index} [{col}]{bar(g.util_pct, 8)}[/] {num(g.util_pct, '{:3.0f}')}%"
                f"  mem {num(g.mem_used_mib, '{:.0f}')}/{num(g.mem_total_mib, '{:.0f}')}MiB"
                f"  {num(g.power_w)}/{num(g.power_limit_w)}W"
                f"  [{threshold(g.temp_c, 75, 85)}]{num(g.temp_c)}°C[/]"
                f"  {num(g.sm_clock_mhz)}MHz {hist}"
            )
    elif state == "up":
        lines.append(" [$text-muted]waiting for the first sample…[/]")
    return "\n".join(lines)


class HostsPane(Pane):
    clock_driven = True
    section = "hosts"

    def compose(self):
        with VerticalScroll():
            yield Static(id="hosts-body")

    def render_state(self, state: SessionState) -> None:
        blocks = [host_block(hs, state.last_t) for hs in state.hosts.values()]
        self.query_one("#hosts-body", Static).update("\n\n".join(blocks) or "no hosts")
