"""Hosts pane: per host its state, CPU / RAM / load, and one row per GPU.

Each GPU row: utilisation bar, memory used/total, power/limit, temperature,
SM clock and a sparkline of recent utilisation — and, toggled with ``p``,
of power (utilisation reads 100% even when a GPU is starved; power tells
more). Colours come from theme variables through ``status_style``; data
older than ``stale_after`` is greyed with its age.
"""

from __future__ import annotations

from rich.cells import cell_len
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.widgets import Static

from perftriage.ui.app_context import ask_for_screen
from perftriage.core.model.events import GpuSample, HostSample
from perftriage.core.model.state import HostState, Section, SessionState
from perftriage.ui.widgets.format import bar, gib, markup, num, sparkline, text_lines
from perftriage.ui.widgets.pane import Pane
from perftriage.ui.widgets.status_style import STATUS_VAR, styled, threshold

STALE_AFTER_S = 5.0
SPARK_W = 16
MUTED = STATUS_VAR["stale"]


def _age(age: float) -> str:
    return f"{age:.0f}s" if age < 120 else f"{age / 60:.0f}m"


def _mem(used_mib: float | None, total_mib: float | None) -> str:
    """GPU memory, in GiB once it is large (keeps the row short on narrow panes)."""
    if total_mib is not None and total_mib >= 10 * 1024:
        used = "n/a" if used_mib is None else f"{used_mib / 1024:.1f}"
        return f"{used}/{total_mib / 1024:.0f}G"
    return f"{num(used_mib, '{:.0f}')}/{num(total_mib, '{:.0f}')}MiB"


def _cells(line: Content | str) -> int:
    """Cells of a line: Content, or markup written in the code (no remote text)."""
    return Content.from_markup(line).cell_length


def dram_cell(hs: HostState, index: int, room: int = 200) -> str:
    """Achieved DRAM bandwidth of one GPU and its share of the peak (GPM), or
    ``n/a``; empty when the host has no counter source at all. The widest
    form that fits ``room`` cells (a GPU row never wraps)."""
    c = hs.counters
    if c is None:
        return ""
    got = next((x for x in c.gpus if x.index == index), None)
    if got is None or got.dram_busy_pct is None:
        return "  DRAM n/a"
    if got.stuck:
        return f"  [{STATUS_VAR['failed']}]DRAM 0? stuck[/]"
    pct = f"{got.dram_busy_pct:.0f}%"
    forms: tuple[str, ...] = (f"  DRAM {pct}", f" DRAM {pct}")
    if got.dram_bw_gbs is not None:
        forms = (f"  DRAM {got.dram_bw_gbs:.0f}GB/s {pct}", f" DRAM {got.dram_bw_gbs:.0f}GB/s {pct}",
                 f" DRAM {got.dram_bw_gbs / 1000:.2f}T {pct}") + forms
    # nothing fits: left out (the host detail, D, has it) rather than wrapping the row
    return next((f for f in forms if len(f) <= room), "")


def gpu_row(g: GpuSample, hs: HostState, show_power: bool, stale: bool, width: int = 200) -> str:
    """One GPU on one line; the sparklines shrink to fit ``width`` rather than wrap."""
    if stale:
        col = temp_col = MUTED
    else:
        col = threshold(g.util_pct, 50, 90)
        temp_col = threshold(g.temp_c, 75, 85)
    power_pct = (100.0 * g.power_w / g.power_limit_w
                 if g.power_w is not None and g.power_limit_w else None)
    pwr_col = MUTED if stale else threshold(power_pct, 80, 95)
    parts = [
        f" GPU{g.index} [{col}]{bar(g.util_pct, 8)}[/] {num(g.util_pct, '{:3.0f}')}%",
        f"  mem {_mem(g.mem_used_mib, g.mem_total_mib)}",
        f"  [{pwr_col}]{num(g.power_w)}/{num(g.power_limit_w)}W[/]",
        f"  [{temp_col}]{num(g.temp_c)}°C[/]",
        f"  {num(g.sm_clock_mhz)}MHz",
    ]
    # one line per GPU, always: on a narrow pane the clock, then the
    # temperature, then the power go (host detail, D, has them all) before
    # the DRAM cell's shortest form (its share)
    dram_min = _cells(dram_cell(hs, g.index, len("  DRAM 100%")))
    while len(parts) > 2 and _cells("".join(parts)) + dram_min > width:
        parts.pop()
    row = "".join(parts)
    row += dram_cell(hs, g.index, width - _cells(row) - 2)
    room = width - _cells(row) - 2
    spark_w = min(SPARK_W, room // 2 - 1 if show_power else room)
    if spark_w >= 4:
        util_hist = sparkline(hs.util_history.get(g.index, ()), spark_w, hi=100)
        row += f"  [{col}]{util_hist}[/]"
        if show_power:
            hi = g.power_limit_w or None
            power_hist = sparkline(hs.power_history.get(g.index, ()), spark_w, hi=hi)
            row += f" [{pwr_col}]P{power_hist}[/]"
    return f"[{MUTED}]{row}[/]" if stale else row


def per_core_line(per_cpu: list[float], width: int) -> str | None:
    """One spark character per core, when the pane is wide enough for all of them."""
    if not per_cpu or width < 40:
        return None
    room = width - 9
    if len(per_cpu) > room:
        return None
    cells = "".join(
        f"[{threshold(v, 70, 90)}]{sparkline([v], 1, hi=100)}[/]" for v in per_cpu
    )
    return f" cores  {cells}"


def _head(hs: HostState, now_t: float, stale_after: float,
          selected: bool) -> tuple[Content, bool]:
    """The host's first line (▶ when probes go there, name, state, reason)
    and whether its data is stale. The name and the reason come from the
    host (or its config): Content with them as text, never markup."""
    state = hs.conn_state
    age = (now_t - hs.sample_t) if hs.sample_t is not None else None
    host_stale = age is not None and age > stale_after
    if age is not None and host_stale:  # age tested again: mypy does not narrow through a bool
        if state == "up":
            state_txt = styled("stale", f"stale {_age(age)}")
        else:
            state_txt = styled(state) + f" [{MUTED}]data {_age(age)} old[/]"
    else:
        state_txt = styled(state)
    head = (Content.from_markup("[reverse]▶[/reverse] " if selected else "")
            + markup("[b]$name[/b] ", name=hs.name) + Content.from_markup(state_txt))
    if hs.reason:
        head += markup(" [$text-muted]$reason[/]", reason=hs.reason)
    return head, host_stale


def _model(gpus: list[GpuSample]) -> str:
    """``8× RTX PRO 6000 Blackwell``: the GPU model, once per host."""
    names = {(g.name or "GPU").removeprefix("NVIDIA ") for g in gpus}
    return f"{len(gpus)}× {names.pop()}" if len(names) == 1 else f"{len(gpus)} GPUs"


def compact_gpu_row(g: GpuSample, stale: bool) -> str:
    """``GPU0 ████░ 96%  83/96G 170W 44°`` (no clock, no sparkline)."""
    col = MUTED if stale else threshold(g.util_pct, 50, 90)
    row = (f" GPU{g.index} [{col}]{bar(g.util_pct, 5)}[/] {num(g.util_pct, '{:3.0f}')}%"
           f" {_mem(g.mem_used_mib, g.mem_total_mib)} {num(g.power_w)}W {num(g.temp_c)}°")
    return f"[{MUTED}]{row}[/]" if stale else row


def _short_cpu(s: HostSample, host_stale: bool, parts: int = 3) -> str:
    """``CPU 12% RAM 3.1/24G load 0.52`` (its first ``parts`` of the three)."""
    cpu_col = MUTED if host_stale else threshold(s.cpu_pct, 70, 90)
    return " ".join([f"CPU [{cpu_col}]{num(s.cpu_pct, '{:.0f}')}%[/]",
                     f"RAM {gib(s.mem_used_bytes)}/{gib(s.mem_total_bytes)}",
                     f"load {num(s.load1, '{:.2f}')}"][:parts])


def gpuless_line(s: HostSample, head: Content, host_stale: bool, width: int) -> Content:
    """A host without GPUs, in every layout: one line (CPU, RAM, load after
    its name, then ``no NVIDIA GPU`` or ``no GPU`` where that fits). Why
    there is no GPU (the NVML or nvidia-smi reason) and the bandwidth
    counters' state are in the host detail view (D)."""
    # one line: the load, then the RAM go where it would wrap (D has them)
    line = head
    for parts in (3, 2, 1):
        line = head + Content.from_markup(f" · {_short_cpu(s, host_stale, parts)}")
        if line.cell_length <= width:
            break
    for tail in ("no NVIDIA GPU", "no GPU"):
        if line.cell_length + len(tail) + 3 <= width:
            return line + Content.from_markup(f" · [$text-muted]{tail}[/]")
    return line


def compact_block(hs: HostState, head: Content, host_stale: bool, *, show_power: bool,
                  width: int, max_gpus: int | None) -> Content:
    """The short form, like nvitop's compact mode: a host without GPUs on
    one line (CPU, RAM, load after its name), a GPU host's model once in its
    header, one short line per GPU."""
    s = hs.sample
    if s is None:
        return head + Content.from_markup(" [$text-muted]waiting for the first sample…[/]")
    if not s.gpus:
        return gpuless_line(s, head, host_stale, width)
    cpu = _short_cpu(s, host_stale)
    model, room = _model(s.gpus), width - head.cell_length - 3
    if len(model) > room:  # the header never wraps: the model's tail goes
        model = model[:max(room - 1, 0)] + "…"
    # the GPU model and the error are the host's words: Content, not markup
    lines: list[Content | str] = [head + markup(" · $model", model=model) if room > 4 else head,
                                  f" {cpu}"]
    if s.gpu_error:
        lines.append(markup(" [$text-muted]$error[/]", error=s.gpu_error))
    gpu_stale = host_stale or s.gpu_age_s is not None
    shown = s.gpus if max_gpus is None or len(s.gpus) <= max_gpus \
        else s.gpus[:max(1, max_gpus - 1)]
    for g in shown:
        row = compact_gpu_row(g, gpu_stale)
        row += dram_cell(hs, g.index, width - _cells(row))  # the rest: DRAM, a sparkline
        spark_w = min(SPARK_W, width - _cells(row) - 2)
        if spark_w >= 4 and not gpu_stale:
            hist = hs.power_history if show_power else hs.util_history
            row += " " + sparkline(hist.get(g.index, ()), spark_w, hi=None if show_power else 100)
        lines.append(row)
    if len(shown) < len(s.gpus):
        lines.append(f" [$text-muted]+{len(s.gpus) - len(shown)} more (z zooms, D details)[/]")
    return text_lines(lines)


def host_block(hs: HostState, now_t: float, *, show_power: bool = False, width: int = 80,
               stale_after: float = STALE_AFTER_S, max_gpus: int | None = None,
               selected: bool = False, compact: bool = False) -> Content:
    """``max_gpus``: GPU rows shown, the rest told as ``+N more`` (a pane
    shorter than the host). ``selected``: the host probes run on.
    ``compact``: the short form for small terminals (:func:`compact_block`)."""
    s = hs.sample
    state = hs.conn_state
    head, host_stale = _head(hs, now_t, stale_after, selected)
    if compact:
        return compact_block(hs, head, host_stale, show_power=show_power, width=width,
                             max_gpus=max_gpus)
    bw = hs.info.get("bandwidth_gbs_total")
    if bw:
        head += Content.from_markup(f" [$text-muted]· {bw / 1000:.2f} TB/s peak[/]")
    if s is not None and not s.gpus:
        return gpuless_line(s, head, host_stale, width)
    lines: list[Content | str] = [head]  # str: markup written here, no remote text
    if s is not None:
        mem_pct = (
            100.0 * s.mem_used_bytes / s.mem_total_bytes
            if s.mem_used_bytes is not None and s.mem_total_bytes
            else None
        )
        cpu_col = MUTED if host_stale else threshold(s.cpu_pct, 70, 90)
        parts = [f" CPU [{cpu_col}]{bar(s.cpu_pct, 8)}[/] {num(s.cpu_pct, '{:5.1f}')}%",
                 f"  RAM {gib(s.mem_used_bytes)}/{gib(s.mem_total_bytes)}", f" ({num(mem_pct)}%)",
                 f"  load {num(s.load1, '{:.2f}')}"]
        # one line: the load, then the RAM's share go where it would wrap (D has them),
        # so that the GPU rows keep their place at 100 columns
        while len(parts) > 1 and _cells("".join(parts)) > width:
            parts.pop()
        cpu = "".join(parts)
        if _cells(cpu) + SPARK_W + 1 <= width:  # the sparkline only where the line stays one
            cpu += f" {sparkline(hs.cpu_history, SPARK_W, hi=100)}"
        lines.append(f"[{MUTED}]{cpu}[/]" if host_stale else cpu)
        if not host_stale and (cores := per_core_line(s.per_cpu_pct, width)):
            lines.append(cores)
        gpu_stale = host_stale or s.gpu_age_s is not None
        if s.gpu_error:
            msg = s.gpu_error
            if s.gpu_age_s is not None and s.gpus:
                msg = f"GPU readings stale {_age(s.gpu_age_s)}: {s.gpu_error}"
            lines.append(markup(" [$text-muted]$msg[/]", msg=msg))
        if hs.counters is not None and hs.counters.error:
            lines.append(markup(" [$text-muted]bandwidth counters: $error[/]",
                                error=hs.counters.error))
        shown = s.gpus if max_gpus is None or len(s.gpus) <= max_gpus \
            else s.gpus[:max(1, max_gpus - 1)]
        for g in shown:
            lines.append(gpu_row(g, hs, show_power, gpu_stale, width))
        if len(shown) < len(s.gpus):
            lines.append(f" [$text-muted]+{len(s.gpus) - len(shown)} more "
                         f"(z zooms, D details)[/]")
    elif state == "up":
        lines.append(" [$text-muted]waiting for the first sample…[/]")
    return text_lines(lines)


class HostsBody(VerticalScroll):
    """The pane's scroll area; ↑/↓ select a host (the pane fits its hosts,
    telling hidden GPUs as "+N more", so they need not scroll)."""

    BINDINGS = [
        Binding("up", "select(-1)", "Prev host", show=False, id="hosts.select_prev",
                tooltip="select the previous host: probes run on the selected host"),
        Binding("down", "select(1)", "Next host", show=False, id="hosts.select_next",
                tooltip="select the next host: probes run on the selected host"),
    ]

    def action_select(self, step: int) -> None:
        pane = self.parent
        if isinstance(pane, HostsPane):
            pane.action_select(step)


class HostsPane(Pane):
    SECTIONS = frozenset({Section.HOSTS, Section.CLOCK})  # ages of stale data tick
    BINDINGS = [
        Binding("enter", "detail", "Detail", id="hosts.detail_enter",
                tooltip="Open the detail view of the hosts (←/→ switch host there)"),
        Binding("D", "detail", "Host detail", id="hosts.detail",
                tooltip="Processes per GPU, clocks, throttle reasons and nvidia-smi topo -m"),
        Binding("p", "power", "Power", id="hosts.power",
                tooltip="Show the power sparkline beside utilisation in the Hosts pane"),
    ]

    class DetailRequested(Message):
        """Open the detail view of ``host`` (handled by the main screen)."""

        def __init__(self, host: str) -> None:
            super().__init__()
            self.host = host

    def __init__(self, title: str, **kwargs) -> None:
        super().__init__(title, **kwargs)
        self.show_power = False
        self._text: Content | None = None  # what the body shows now

    @property
    def selected_host(self) -> str | None:
        """The host marked ▶: where the next probe runs — the one probe
        target the Probes pane's border and the probe forms show too (None
        while probes go to every host)."""
        target = self.ctx.probe_target
        if target.all_hosts:
            return None
        return target.selected_host(target.names())

    def compose(self):
        with HostsBody():
            yield Static(id="hosts-body")

    def on_mount(self) -> None:
        # [ui] show_power_history: power sparklines from the start
        self.show_power = self.ctx.cockpit.config.ui.show_power_history

    def now_t(self, state: SessionState) -> float:
        """Session time now: the clock when live, the last event in a replay."""
        cockpit = self.ctx.cockpit
        if not cockpit.replay:
            return max(cockpit.session.elapsed, state.last_t)
        return state.last_t

    def stale_after(self) -> float:
        interval = self.ctx.cockpit.sample_interval or 1.0
        return max(STALE_AFTER_S, 3 * interval)

    def show_state(self, state: SessionState) -> None:
        now = self.now_t(state)
        width = max(self.size.width - 2, 40)
        stale_after = self.stale_after()
        selected = self.selected_host if self.selected_host in state.hosts else None

        compact = False

        def blocks_with(max_gpus: int | None) -> list[Content]:
            return [host_block(hs, now, show_power=self.show_power, width=width,
                               stale_after=stale_after, max_gpus=max_gpus,
                               selected=hs.name == selected, compact=compact)
                    for hs in state.hosts.values()]

        def height(blocks: list[Content]) -> int:  # screen rows, wrapped lines counted
            return sum(-(-max(1, cell_len(line)) // width) for b in blocks
                       for line in b.plain.split("\n")) + (0 if compact else len(blocks) - 1)

        blocks = blocks_with(None)
        rows = self.size.height  # the content area: inside the border already
        if rows > 0 and height(blocks) > rows:
            # too tall: the compact form (one short line per GPU), then fewer
            # GPU rows per host, the rest told as "+N more"
            compact = True
            blocks = blocks_with(None)
            most = max((len(hs.gpus) for hs in state.hosts.values()), default=0)
            for cap in range(most - 1, 0, -1):
                if height(blocks) <= rows:
                    break
                blocks = blocks_with(cap)
        text = Content("\n" if compact else "\n\n").join(blocks) if blocks \
            else Content("no hosts")
        if self._text is not None and text.is_same(self._text):  # == compares the text only
            return
        # Same number of lines (rows never wrap): no re-layout of the screen,
        # which would otherwise stall a log flood once a second.
        same_height = (self._text is not None
                       and text.plain.count("\n") == self._text.plain.count("\n"))
        self._text = text
        self.query_one("#hosts-body", Static).update(text, layout=not same_height)

    def on_resize(self, event) -> None:
        self._text = None  # how many GPU rows fit changed
        self.show_state(self.ctx.session.state)

    def action_power(self) -> None:
        self.show_power = not self.show_power
        self.show_state(self.ctx.session.state)
        self.notify(f"power sparkline {'on' if self.show_power else 'off'}")

    def action_select(self, step: int) -> None:
        """Move the selection: the selected host is where probes run."""
        names = self.ctx.probe_target.names()
        if not names:
            return
        cur = names.index(self.selected_host) if self.selected_host in names else -1
        host = names[(cur + step) % len(names)]
        self.ctx.probe_target.choose(host)
        self.post_message(self.HostSelected(host))
        self.notify(f"probes now run on {host}", timeout=2)
        self._text = None
        self.show_state(self.ctx.session.state)

    class HostSelected(Message):
        """The selection moved (the Probes pane shows where probes run)."""

        def __init__(self, host: str) -> None:
            super().__init__()
            self.host = host

    def action_detail(self) -> None:
        names = list(self.ctx.session.state.hosts)
        if not names:
            self.notify("no hosts", severity="warning")
            return
        ask_for_screen(self, self.DetailRequested(self.selected_host or names[0]))
