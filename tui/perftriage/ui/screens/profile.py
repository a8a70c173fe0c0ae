"""The Profile view: which kernels eat the step.

Top: the capture's headline (host, engine, ranks, kernel time, GPU idle
share of the window, exposed communication), why the GPU idled (host wait,
kernel wait, other; launch delays) and the buckets as one bar.
Left: the biggest kernels (total ms, calls, mean µs, share, spread over
ranks; with an ``ncu`` probe's result, each joined kernel's achieved GB/s and
share of the peak beside its share of time). Right: the buckets, the ranks (window, idle, exposed communication),
and with ``d`` the comparison with the capture before it (kernels that
appeared, vanished, changed share).

``c`` captures from a running server (SGLang/vLLM, through the host's SSH
connection — the host a ``[[servers]]`` profile runs on first, the form says
so; the parse runs in a child process, a progress line says what it is
waiting for); ``k`` takes a stacks sample (the engine's Python: ``T`` shows
it); ``[`` / ``]`` step through the captures; Enter on a kernel shows it whole
(bucket rule, per-rank totals, one call's p50/p99, the CPU op that launched
it). Works in a replay too (capturing is refused there).
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Static

from perftriage.ui.app_context import app_context, refuse_in_replay
from perftriage.core.model.events import ProfileCaptured
from perftriage.core.model.state import Section, SessionState
from perftriage.core.compare.profile_diff import diff
from perftriage.core.profile.ncu import MEMORY, NEAR, NcuKernel, bw_pct
from perftriage.core.profile.ncu_join import latest_summary, match_profile
from perftriage.core.profile.buckets import Classifier
from perftriage.core.profile.table import gaps_line, idle_line, kernel_detail, short_names
from perftriage.core.sanitize import visible
from perftriage.core.view.baseline_view import profile_lines
from perftriage.core.view.profile_view import bar_segments, headline
from perftriage.ui.screens.detail_modal import DetailModal
from perftriage.ui.screens.prompt import PromptScreen
from perftriage.ui.screens.views import close_view
from perftriage.core.view.targets import server_host
from perftriage.services.profile.capture import CaptureFailed, via_text
from perftriage.transport.base import TransportError
from perftriage.transport.http_get import BadUrl, parse_http_url
from perftriage.ui.widgets.footer import FittingFooter
from perftriage.ui.widgets.row_table import fill, last_column_room
from perftriage.core.refusals import refusal

BUCKET_STYLE = {
    "communication": "on #b5651d", "moe": "on #7b3fa0", "attention": "on #2a7ab0",
    "gemm": "on #2e8b57", "memcpy/memset": "on #8a8a2a", "elementwise/norm": "on #5f6b7a",
    "other": "on #444444",
}
KERNEL_ROWS = 40
# the buckets (40) and ranks (58) boxes and a comparison whose lines (up to ~80
# characters: "⚠ profiles of different rank counts …") are not wrapped
SIDE_BY_SIDE_MIN_WIDTH = 40 + 58 + 86
NAME_MIN_WIDTH, NAME_MAX_WIDTH = 24, 100  # a kernel name's column
BAR_WIDTH = 80


def parse_capture_args(text: str) -> tuple[str, int | None]:
    """``URL [STEPS]`` from the capture form; ValueError with the reason."""
    parts = text.split()
    if not parts or len(parts) > 2:
        raise ValueError("expected: URL [STEPS], e.g. http://127.0.0.1:30000 5")
    try:
        parse_http_url(parts[0])
    except BadUrl as exc:
        raise ValueError(str(exc)) from None
    if len(parts) == 1:
        return parts[0], None
    if not parts[1].isdigit():
        raise ValueError(f"steps must be a whole number, not {parts[1]!r}")
    return parts[0], int(parts[1]) or None


def bar_text(cap: ProfileCaptured, width: int = BAR_WIDTH) -> Text:
    text = Text()
    for seg in bar_segments(cap.summary, width):
        label = f" {seg.bucket} {seg.pct:.0f}%"
        cell = label[: seg.cells].ljust(seg.cells)
        text.append(cell, style=f"bold white {BUCKET_STYLE.get(seg.bucket, 'on #444444')}")
    return text


class ProfileScreen(Screen[None]):
    VIEW_NAME = "Profile"  # the keys help (?) lists this view's keys first
    VIEW = True  # Esc: back to the view it was opened from, then the main screen
    # PROBES: an ncu probe's result joins the kernels (achieved GB/s, % of peak)
    SECTIONS: ClassVar[frozenset[Section]] = frozenset(
        {Section.PROFILES, Section.PROBES, Section.BASELINE})

    BINDINGS = [
        Binding("escape", "close", "back", id="profile.close"),
        Binding("c", "capture", "capture", id="profile.capture",
                tooltip="profile N steps of a running SGLang/vLLM server"),
        Binding("k", "stacks_sample", "stacks", id="profile.stacks",
                tooltip="sample the engine's Python stacks (py-spy; T shows them): "
                        "is the GPU's idle the host's?"),
        Binding("left_square_bracket", "step(-1)", "previous", id="profile.previous"),
        Binding("right_square_bracket", "step(1)", "next", id="profile.next"),
        Binding("d", "toggle_compare", "compare", id="profile.compare",
                tooltip="kernels that appeared, vanished or changed share since the capture before"),
    ]
    DEFAULT_CSS = """
    ProfileScreen { layout: vertical; }
    ProfileScreen #profile-head { height: auto; padding: 0 1; text-style: bold; }
    ProfileScreen #profile-progress { height: 1; padding: 0 1; color: $text-muted; }
    ProfileScreen #profile-bar { height: 1; padding: 0 1; }
    ProfileScreen #profile-body { height: 1fr; }
    ProfileScreen #profile-kernels-box { height: 1fr; border: round $pane-border; }
    ProfileScreen #profile-side { height: auto; max-height: 14; }
    ProfileScreen #profile-buckets-box, ProfileScreen #profile-ranks-box {
        height: auto; max-height: 14; border: round $pane-border;
    }
    ProfileScreen #profile-buckets-box { width: 40; }
    ProfileScreen #profile-ranks-box { width: 58; }
    ProfileScreen #profile-compare { width: 1fr; height: auto; max-height: 14;
                                     border: round $pane-border; padding: 0 1; }
    ProfileScreen DataTable { height: auto; max-height: 100%; }
    ProfileScreen #profile-kernels { height: 1fr; }
    """

    def __init__(self, capture_on_open: bool = False) -> None:
        super().__init__()
        self.index: int | None = None  # None: the newest capture
        self.comparing = False
        self.capture_on_open = capture_on_open
        self.progress = ""

    def compose(self) -> ComposeResult:
        yield Static(id="profile-head")
        yield Static(id="profile-progress")
        yield Static(id="profile-bar")
        # the kernels get the whole width (their names are long); buckets, ranks
        # and the comparison sit below them side by side
        with Vertical(id="profile-body"):
            with Vertical(id="profile-kernels-box") as box:
                box.border_title = "Kernels (by total time, summed over ranks)"
                yield DataTable(id="profile-kernels", cursor_type="row", zebra_stripes=True)
            with Horizontal(id="profile-side"):
                with Vertical(id="profile-buckets-box") as b:
                    b.border_title = "Buckets"
                    yield DataTable(id="profile-buckets", cursor_type="none")
                with Vertical(id="profile-ranks-box") as r:
                    r.border_title = "Ranks"
                    yield DataTable(id="profile-ranks", cursor_type="none")
                yield Static(id="profile-compare")
        yield FittingFooter()

    def on_mount(self) -> None:
        self.query_one("#profile-buckets", DataTable).add_columns("bucket", "ms", "share")
        self.query_one("#profile-ranks", DataTable).add_columns(
            "rank", "window ms", "kernel ms", "idle", "exposed comm")
        app = app_context(self)
        app.refresher.watch(self)
        self.show_state(app.session.state)
        if self.capture_on_open:
            self.call_later(self.action_capture)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        """Enter on a kernel: all the summary holds of it (its whole name, the
        rule that chose its bucket, per-rank totals, one call's p50/p99, the
        CPU op that launched it)."""
        if event.data_table.id != "profile-kernels":
            return
        event.stop()
        app = app_context(self)
        cap = self.current(app.session.state)
        row = event.cursor_row
        if cap is None or not 0 <= row < min(len(cap.summary.kernels), KERNEL_ROWS):
            return
        k = cap.summary.kernels[row]
        rules = [(r.bucket, r.pattern) for r in app.cockpit.config.profile.rules]
        self.app.push_screen(KernelDetailScreen(
            f"kernel {row + 1} of {cap.capture_id}",
            kernel_detail(cap.summary, k, Classifier(rules).rule_for(k.name))))

    # --- rendering -----------------------------------------------------------------

    def current(self, state: SessionState) -> ProfileCaptured | None:
        if not state.profiles:
            return None
        i = len(state.profiles) - 1 if self.index is None else self.index
        return state.profiles[max(0, min(i, len(state.profiles) - 1))]

    def on_resize(self) -> None:
        self._fit_side()

    def _fit_side(self) -> None:
        """The comparison (``d``) sits beside the buckets and ranks when all
        three fit; on a narrower screen it takes their place (the bar above
        still shows the buckets), and with ``d`` off it takes no room."""
        beside = self.size.width >= SIDE_BY_SIDE_MIN_WIDTH
        self.query_one("#profile-compare", Static).display = self.comparing
        for box in ("#profile-buckets-box", "#profile-ranks-box"):
            self.query_one(box).display = beside or not self.comparing

    def show_state(self, state: SessionState) -> None:
        self._fit_side()
        cap = self.current(state)
        head = self.query_one("#profile-head", Static)
        self.query_one("#profile-progress", Static).update(Text(self.progress))
        kernels = self.query_one("#profile-kernels", DataTable)
        buckets = self.query_one("#profile-buckets", DataTable)
        ranks = self.query_one("#profile-ranks", DataTable)
        kernels.clear(columns=True)
        buckets.clear()
        ranks.clear()
        if cap is None:
            head.update(Text("No capture yet: c captures N steps from a running server "
                             "(or `perftriage trace FILE...` reads trace files headless)."))
            self.query_one("#profile-bar", Static).update("")
            self.query_one("#profile-compare", Static).update("")
            return
        pos = state.profiles.index(cap) + 1
        why = [line for line in (idle_line(cap.summary), gaps_line(cap.summary)) if line]
        head.update(Text(f"[{pos}/{len(state.profiles)}] " + visible(headline(cap))
                         + "".join(f"\n{visible(line)}" for line in why)))
        self.query_one("#profile-bar", Static).update(bar_text(cap))
        s = cap.summary
        # figures first, the (long) name last: as Nsight's kernel summary
        ncu = latest_summary(state.probes.values())
        joined = match_profile(s.kernels, ncu[1]) if ncu else {}
        cols = ["#", "total ms", "share"]
        if ncu:
            cols += ["GB/s", "% peak"]
        cols += ["calls", "avg µs"]
        if s.ranks > 1:
            cols.append("spread")
        kernels.add_columns(*cols, "bucket", "kernel")
        rows: list[list[str | Text]] = []
        for i, k in enumerate(s.kernels[:KERNEL_ROWS], 1):
            row: list[str | Text] = [str(i), f"{k.total_ms:.3f}", f"{k.pct:.1f}%"]
            if ncu:
                row += bandwidth_cells(joined.get(k.name))
            row += [str(k.calls), f"{k.avg_us:.1f}"]
            if s.ranks > 1:
                row.append(f"{k.spread_pct:.0f}%")
            rows.append(row + [Text(visible(k.bucket), style=BUCKET_STYLE.get(k.bucket, ""))])
        # each name cut in its middle to the width left beside the figures, so
        # no row scrolls and two templated names stay two
        names = short_names([k.name for k in s.kernels[:KERNEL_ROWS]],
                            min(NAME_MAX_WIDTH, last_column_room(
                                self.size.width, cols + ["bucket"], rows, NAME_MIN_WIDTH)))
        fill(kernels, [(*row, Text(name)) for row, name in zip(rows, names)])
        fill(buckets, [(Text(visible(b.bucket), style=BUCKET_STYLE.get(b.bucket, "")),
                        f"{b.total_ms:.3f}", f"{b.pct:.1f}%") for b in s.buckets])
        # Text: a str cell is read as Rich markup, and a rank is named by its file
        fill(ranks, [(Text(visible(r.rank)), _num(r.window_ms, ".2f"), f"{r.kernel_ms:.2f}",
                      _num(r.idle_pct, ".1f", "%"), _num(r.exposed_comm_ms, ".3f"))
                     for r in s.per_rank])
        self.query_one("#profile-compare", Static).update(self._compare_text(state, cap))

    def _compare_text(self, state: SessionState, cap: ProfileCaptured) -> Text:
        if not self.comparing:
            return Text("d: compare with the baseline's capture, else the one before", style="dim")
        prev = against(state, cap)
        if prev is None:
            return Text("nothing to compare with: this is the first capture", style="dim")
        d = diff(prev, cap)
        out = Text.assemble((f"{visible(cap.capture_id)} against {visible(prev.capture_id)}"
                             f"{' (the baseline)' if prev is baseline_capture(state) else ''}\n",
                             "bold"))
        for text, verdict in profile_lines(d):
            if verdict == "heading":
                out.append(text + "\n", style="bold")
            else:
                out.append(text + "\n", style=VERDICT_STYLE.get(verdict, ""))
        return out

    def _redraw(self) -> None:
        self.show_state(app_context(self).session.state)

    # --- actions -------------------------------------------------------------------

    def action_close(self) -> None:
        close_view(self)

    def action_stacks_sample(self) -> None:
        """``k``: the stacks form, as on the main screen (``T`` shows the sample)."""
        if not refuse_in_replay(self):
            app_context(self).launcher.ask("stacks")

    def action_step(self, delta: int) -> None:
        profiles = app_context(self).session.state.profiles
        if not profiles:
            return
        i = len(profiles) - 1 if self.index is None else self.index
        self.index = max(0, min(len(profiles) - 1, i + delta))
        self._redraw()

    def action_toggle_compare(self) -> None:
        self.comparing = not self.comparing
        self._redraw()

    def action_capture(self) -> None:
        if refuse_in_replay(self):
            return
        cockpit = app_context(self).cockpit
        hosts = cockpit.registry.names
        if not hosts:
            self.notify("profile: no host to capture through", severity="warning")
            return
        ctx = app_context(self)
        host = cockpit.profiles.default_host(ctx.session.state, ctx.probe_target.host)
        steps = cockpit.config.profile.steps
        server = server_host(ctx.session.state, hosts)
        said = f"host {server.note()}\n" if server is not None and server.host == host else ""

        def validate(text: str) -> str | None:
            return refusal(parse_capture_args, text)

        prompt = PromptScreen(
            "capture a profile", "profile",
            value=f"{cockpit.profiles.default_url(host)} {steps}",
            # a host's and a server's name: Text, never markup
            help=Text(said + "URL [STEPS]: the server as the host sees it; STEPS 0 profiles "
                      "5 s then stops"),
            validate=validate, choices=[(h, h) for h in hosts], choice=host, choice_label="host")

        def done(text: str | None) -> None:
            if text:
                url, n = parse_capture_args(text)
                self.run_worker(self._capture(prompt.choice or host, url, n),
                                exit_on_error=False, group="profile")

        self.app.push_screen(prompt, done)

    async def _capture(self, host: str, url: str, steps: int | None) -> None:
        def progress(msg: str) -> None:
            self.progress = f"{host}: {visible(msg)}"
            self.query_one("#profile-progress", Static).update(Text(self.progress))

        progress(f"capturing from {url}")
        try:
            cap = await app_context(self).cockpit.profiles.capture(host, url, steps, progress)
        except (CaptureFailed, TransportError) as exc:
            progress(f"failed: {exc}")
            self.notify(f"profile: {visible(str(exc))}", severity="error", timeout=12)
            return
        self.index = None
        progress(f"{cap.capture_id}: {len(cap.files)} trace file(s) fetched {via_text(cap.via)}, "
                 "kept next to the transcript")
        if cap.missing:
            refused = f" (refused: {'; '.join(cap.refused)})" if cap.refused else ""
            self.notify(visible(f"profile: no trace from {', '.join(cap.missing)}{refused}"),
                        severity="warning")


VERDICT_STYLE = {"improved": "green", "regressed": "red", "not enough data": "dim"}


def baseline_capture(state: SessionState) -> ProfileCaptured | None:
    """The last capture inside the baseline's window (None: no baseline, none there)."""
    b = state.baseline
    if b is None:
        return None
    inside = [p for p in state.profiles if b.start <= p.t <= b.end]
    return inside[-1] if inside else None


def against(state: SessionState, cap: ProfileCaptured) -> ProfileCaptured | None:
    """What ``d`` compares ``cap`` with: the baseline's capture, else the one before."""
    base = baseline_capture(state)
    if base is not None and base is not cap:
        return base
    i = state.profiles.index(cap)
    return state.profiles[i - 1] if i > 0 else None


def bandwidth_cells(k: NcuKernel | None) -> list[str | Text]:
    """A kernel's achieved GB/s and share of the peak from ncu ("" without
    one); the share coloured by its verdict (near roofline, memory-bound
    below it, not memory-bound)."""
    if k is None or k.gbs is None:
        return ["", ""]
    pct = bw_pct(k)
    style = {NEAR: "green", MEMORY: "yellow"}.get(k.verdict, "dim")
    text = "" if pct is None else f"{pct:.0f}%" if pct >= 10 else f"{pct:.1f}%"
    return [f"{k.gbs:.0f}", Text(text, style=style)]


def _num(v: float | None, fmt: str, unit: str = "") -> str:
    return "n/a" if v is None else f"{v:{fmt}}{unit}"


class KernelDetailScreen(DetailModal):
    """One kernel of a capture, whole (Enter in the kernels table)."""

    BINDINGS = [Binding("escape,q", "close", "Close", id="kernel_detail.close")]

    def __init__(self, title: str, body: str) -> None:
        super().__init__()
        self.title_text, self.body = title, body

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text(self.title_text), classes="detail-title")
            with VerticalScroll():
                yield Static(Text(self.body))

    def action_close(self) -> None:
        self.dismiss(None)
