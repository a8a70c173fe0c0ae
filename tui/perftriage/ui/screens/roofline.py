"""The roofline / gap panel: the decode floor from model size and memory
bandwidth, compared with the measured ms/token. Prefilled from what the
session knows (GPU count and bandwidth of a connected host, the mean
inter-token latency from the engine's /metrics or else batch-1 throughput
from the server log, the previous computation's inputs);
recomputed as you type; Enter records a ``GapComputed`` event."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid, VerticalScroll
from textual.css.query import NoMatches
from textual.widgets import Input, Label, Static

from perftriage.services.gap.model_bytes import ModelBytes
from perftriage.core.analysis import roofline
from perftriage.core.model import host_info
from perftriage.core.clock import clock
from perftriage.core.view.log_kinds import batch1_ms_per_token
from perftriage.core.model.state import SessionState
from perftriage.core.store.config_schema import ServerProfile
from perftriage.ui.key_order_workaround import FormScreen
from perftriage.ui.widgets.gap_view import GapView
from perftriage.ui.widgets.status_style import styled, styled_content

# (input id, label, compute() keyword, help)
FIELDS: tuple[tuple[str, str, str, str], ...] = (
    ("weights_gb", "weights GB / step", "weights_gb", "bytes read per token step, GB"),
    ("active_params_b", "or active params B", "active_params_b", "MoE: active experts only"),
    ("bits", "bits / weight", "bits", "with active params: 8 FP8, 4 FP4"),
    ("kv_gb", "KV GB / step", "kv_gb", "optional"),
    ("gpus", "GPUs", "gpus", "weights spread over"),
    ("bandwidth_gbs", "GB/s per GPU", "bandwidth_gbs", "or give a GPU name"),
    ("gpu", "GPU name", "gpu", "known: " + ", ".join(roofline.KNOWN_GPUS)),
    ("measured_ms", "measured ms/token", "measured_ms", "ms per decode step (a request's token)"),
)
FLOAT_FIELDS = {"weights_gb", "active_params_b", "bits", "kv_gb", "bandwidth_gbs", "measured_ms"}
# how an error names a field here: its label, never a CLI flag
LABELS = {kw: f"'{label.removeprefix('or ')}'" for _, label, kw, _ in FIELDS}


@dataclass
class Prefill:
    """The form's first values and, per field, where a value came from
    (shown in place of the field's help)."""

    values: dict[str, str] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)
    # where the prefilled measured ms/token came from, and its batch
    measured_from: str | None = None
    measured_batch: float | None = None


def prefill(state: SessionState, servers: Iterable[ServerProfile] = (),
            engine: ModelBytes | None = None) -> Prefill:
    """Initial form values from the session: last inputs, what the running
    engine says it runs (``engine``: the weights' size from its checkpoint,
    its TP size), hosts' GPUs, the server profiles' ``tp`` / ``gpu`` args
    (the demo's simulated GPUs), the engine's latency or the log."""
    out = Prefill()
    values = out.values
    if state.gaps:
        for k, v in state.gaps[-1].inputs.items():
            if v is not None:
                values[k] = f"{v:g}" if isinstance(v, float) else str(v)
    if engine is not None:  # after the user's own last inputs: G overrides
        for k, v in (("weights_gb", engine.weights_gb), ("gpus", engine.gpus)):
            if v is not None and k not in values and not (
                    k == "weights_gb" and "active_params_b" in values):
                values[k] = f"{v:g}"
                out.notes[k] = engine.sources.get(k, "the engine")
    best = max(state.hosts.values(), key=lambda h: len(h.gpus), default=None)
    if best is not None and best.gpus and "gpus" not in values:
        values["gpus"] = str(len(best.gpus))
        out.notes["gpus"] = f"{best.name}'s GPUs"
    # the card's bandwidth from the host's GPUs also when the engine said how
    # many GPUs it runs on (its tp_size): the count and the card are two facts
    if best is not None and best.gpus and not ({"bandwidth_gbs", "gpu"} & values.keys()):
        gpu = best.gpus[0]
        bw = gpu.bandwidth_gbs or host_info.gpu_bandwidth(best.info, gpu.index) or roofline.bandwidth_from_nvml(
            gpu.bus_width_bits, gpu.mem_clock_max_mhz)
        if bw:
            values["bandwidth_gbs"] = f"{float(bw):.0f}"
            out.notes["bandwidth_gbs"] = f"{best.name}'s GPU {gpu.index}"
            values.pop("gpu", None)
        elif gpu.name:
            try:
                values["gpu"] = roofline.lookup_gpu(gpu.name)[0]
                out.notes["gpu"] = f"{best.name}'s GPU {gpu.index}"
            except roofline.RooflineError:
                pass  # an unknown card: the user types the bandwidth
    servers = list(servers)
    if "gpus" not in values:
        _from_server(out, state, servers)
    if "weights_gb" not in values and "active_params_b" not in values:
        _model_from_server(out, state, servers)
    _measured(out, state)
    return out


MODEL_ARGS = ("weights_gb", "active_params_b", "bits", "kv_gb")


def _running_first(state: SessionState, servers: Iterable[ServerProfile]) -> list[ServerProfile]:
    live = ("ready", "starting")
    return sorted(servers, key=lambda p: getattr(state.servers.get(p.name), "state", "") not in live)


def _model_from_server(out: Prefill, state: SessionState,
                       servers: Iterable[ServerProfile]) -> None:
    """The bytes a step reads from a server profile's args when it declares
    them (``weights_gb``, or ``active_params_b`` and ``bits``; ``kv_gb``), a
    running one first: G then Enter records the gap."""
    ranked = _running_first(state, servers)
    for profile in ranked:
        got = {k: profile.args[k].strip() for k in MODEL_ARGS if profile.args.get(k, "").strip()}
        if "weights_gb" in got or "active_params_b" in got:
            for k, v in got.items():
                out.values[k] = v
                out.notes[k] = f"server {profile.name}: {k} {v}"
            return


def _from_server(out: Prefill, state: SessionState, servers: Iterable[ServerProfile]) -> None:
    """GPUs and the card from a server profile's ``tp`` and ``gpu`` args,
    a running one first (no host reports GPUs: a simulator, or no NVML)."""
    ranked = _running_first(state, servers)
    for profile in ranked:
        tp, card = profile.args.get("tp", "").strip(), profile.args.get("gpu", "").strip()
        if tp.isdigit() and int(tp) >= 1:
            out.values["gpus"] = tp
            out.notes["gpus"] = f"server {profile.name}: tp {tp}"
        if card and "bandwidth_gbs" not in out.values:
            try:
                out.values["gpu"] = roofline.lookup_gpu(card)[0]
                out.notes["gpu"] = f"server {profile.name}'s GPU"
            except roofline.RooflineError:
                pass
        if tp or card:
            return


def _measured(out: Prefill, state: SessionState) -> None:
    """The measured ms per token and the batch it was measured at: the
    engine's mean inter-token latency, else the log's batch-1 decode line."""
    measured, note, batch_size = None, None, None
    for src in state.logs.values():
        last = src.metrics.last_decode  # the log parser's newest decode metric
        if last is not None and last.running == 1 and last.gen_tps:
            measured, note, batch_size = 1000.0 / last.gen_tps, "the log", 1.0
        else:
            got = batch1_ms_per_token(src.lines)
            if got is not None:
                measured, note, batch_size = got, "the log", 1.0
    # the engine's own inter-token latency, when a /metrics endpoint reports it, is
    # more exact than the log's tokens/s (mean over the last 10 s, any batch: a step)
    for es in state.engines.values():
        if es.ms_per_token is not None:
            running = es.latest.gauges.get("running") if es.latest is not None else None
            measured, note = es.ms_per_token, f"engine {es.host}: mean ITL, last 10 s"
            batch_size = float(running) if running else None
            break
    if measured is not None:
        out.values["measured_ms"] = f"{measured:.1f}"
        batch = "" if batch_size is None else f" @bs{batch_size:g}"
        out.notes["measured_ms"] = f"from {note}{batch}"
        out.measured_from, out.measured_batch = note, batch_size


def parse(values: dict[str, str]) -> dict[str, Any]:
    """Form strings -> compute() keywords; RooflineError names the field."""
    kwargs: dict[str, Any] = {}
    for key, label, kw, _ in FIELDS:
        raw = values.get(key, "").strip()
        if not raw:
            continue
        if key == "gpu":
            kwargs[kw] = raw
        elif key == "gpus":
            try:
                kwargs[kw] = int(raw)
            except ValueError:
                raise roofline.RooflineError(
                    roofline.literal(f"{label}: not a whole number: {raw!r}")) from None
        else:
            try:
                kwargs[kw] = float(raw)
            except ValueError:
                raise roofline.RooflineError(
                    roofline.literal(f"{label}: not a number: {raw!r}")) from None
    kwargs.setdefault("gpus", 1)
    return kwargs


class RooflineScreen(FormScreen[tuple[roofline.RooflineResult, dict[str, Any],
                                      tuple[str | None, float | None]] | None]):
    """A typed-order form (:class:`~perftriage.ui.key_order_workaround.FormScreen`):
    ``G 16 Tab …`` typed at once puts each figure in the field it was typed
    for (Tab bubbled to the App and ran after the digits behind it)."""

    FIRST_FOCUS = "#rl-weights_gb"

    DEFAULT_CSS = """
    RooflineScreen { align: center middle; }
    RooflineScreen > VerticalScroll {
        width: 96; height: auto; max-height: 100%; padding: 1 2;
        border: thick $accent; background: $surface;
    }
    RooflineScreen Grid {
        grid-size: 3; grid-columns: 20 22 1fr; grid-rows: 1; grid-gutter: 0 1;
        height: auto; margin: 1 0 0 0;
    }
    RooflineScreen Grid Label { text-wrap: nowrap; text-overflow: ellipsis; }
    RooflineScreen .help { color: $text-muted; }
    RooflineScreen #roofline-result { height: auto; padding: 1 0 0 0; }
    """
    BINDINGS = [
        Binding("escape", "cancel", "Close", id="roofline.close"),
        Binding("ctrl+s", "record", "Record", id="roofline.record"),
    ]

    def __init__(self, state: SessionState, read_only: bool = False,
                 servers: Iterable[ServerProfile] = (), host: str | None = None,
                 host_why: str = "", engine: ModelBytes | None = None) -> None:
        """``host``: whose live gap leads (the running server's host, else the
        selected one); ``host_why``: why that one, said beside it; ``engine``:
        the bytes the running engine's checkpoint says a step moves."""
        super().__init__()
        self.host, self.host_why = host, host_why
        self.initial = prefill(state, servers, engine)
        self.session_state = state
        self.read_only = read_only
        self.result: roofline.RooflineResult | None = None
        self.kwargs: dict[str, Any] = {}

    def compose(self) -> ComposeResult:
        # scrolls where a short terminal cannot hold it all (100x30: the result below)
        with VerticalScroll():
            yield Label("[b]roofline: decode floor and gap[/b]")
            yield Label("floor = bytes read per token step / (GPUs × GB/s per GPU)", classes="help")
            # the live gap leads; the form's figures below say when they were recorded
            yield GapView(self.session_state, self.host, self.host_why, id="gap-live")
            with Grid():
                for key, label, _, help_text in FIELDS:
                    yield Label(label)
                    yield Input(value=self.initial.values.get(key, ""), id=f"rl-{key}",
                                compact=True)
                    # a note quotes a host or server name: remote text, never markup
                    yield Label(self.initial.notes.get(key, help_text), classes="help",
                                markup=False)
            yield Static("", id="roofline-result")
            action = "Esc close" if self.read_only else "Enter record in the session · Esc close"
            yield Label(f"Tab next field · {action}", classes="help")

    def on_mount(self) -> None:
        self.recompute()  # FormScreen's own on_mount then focuses the first field

    def values(self) -> dict[str, str]:
        return {key: self.query_one(f"#rl-{key}", Input).value for key, *_ in FIELDS}

    def on_input_changed(self, event: Input.Changed) -> None:
        self.recompute()

    def recompute(self) -> None:
        out = self.query_one("#roofline-result", Static)
        try:
            self.kwargs = parse(self.values())
            self._follow_form(self.kwargs)
            self.result = roofline.compute(**self.kwargs)
        except roofline.RooflineError as exc:
            self.result = None
            # the message quotes a value: typed, or a GPU name the host gave
            out.update(styled_content("failed", exc.worded(LABELS)))
            return
        r = self.result
        lines = [
            self._provenance(),
            f"floor        [b]{r.floor_ms:.3f} ms/token[/b]   ({r.bytes_gb:g} GB over "
            f"{r.bandwidth_gbs_total:g} GB/s)",
            "ceiling      " + roofline.ceiling_words(
                r.ceiling_tps, self.initial.measured_batch).removeprefix("ceiling "),
        ]
        if r.measured_ms is not None:
            lines.append(f"measured     {r.measured_ms:g} ms/token")
            lines.append("gap          " + styled("refuted" if (r.gap or 0) > 2 else "supported",
                                                   roofline.fmt_gap(r.gap)))
            lines.append(f"efficiency   {r.efficiency_pct:.1f}% of memory bandwidth")
        out.update("\n".join(lines))

    def _provenance(self) -> str:
        """Whether the figures below are the recorded ones (and when) or the
        form's own, typed now: a recorded ms/token can be minutes old."""
        gaps = self.session_state.gaps
        if gaps and self.kwargs == gaps[-1].inputs:
            return (f"[$text-muted]recorded at {clock(gaps[-1].t)} "
                    "(the live gap above is now):[/]")
        return "[$text-muted]from the form, not recorded yet (Enter records):[/]"

    def _follow_form(self, kwargs: dict[str, Any]) -> None:
        """The live Gap view uses the form's bytes per step as they are typed
        (its peak comes from the counters, so no bandwidth field is needed)."""
        with contextlib.suppress(NoMatches):
            view = self.query_one("#gap-live", GapView)
            view.inputs = dict(kwargs)
            view.refresh_gap()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_record()

    def action_record(self) -> None:
        if self.read_only:
            self.notify("this is a replay: read-only", severity="warning")
            return
        if self.result is None:
            try:
                roofline.compute(**parse(self.values()))
            except roofline.RooflineError as exc:
                self.notify(f"fix the inputs first: {exc.worded(LABELS)}", severity="warning")
            return
        inputs = {k: v for k, v in self.kwargs.items()}
        self.dismiss((self.result, inputs, self.measured_source()))

    def measured_source(self) -> tuple[str | None, float | None]:
        """Where the measured ms/token came from and its batch: the prefill's
        source while the field holds the prefilled value, else typed in."""
        typed = self.values().get("measured_ms", "").strip()
        if not typed:
            return None, None
        if typed == self.initial.values.get("measured_ms"):
            return self.initial.measured_from, self.initial.measured_batch
        return "typed in", None

    def action_cancel(self) -> None:
        self.dismiss(None)
