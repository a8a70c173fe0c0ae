"""Read signal values from the session state, per scope, once per tick.

A :class:`SignalTable` is built for one moment ``now`` (session seconds) and
answers :meth:`SignalTable.read` with a plain value (number, text, bool) or
a :class:`Missing` saying why there is none ("stale (14 s old)", "no gap
sample for node1", "no profile captured yet"). Readings are cached for the
tick, so 200 checks reading the same GPU field read it once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from perftriage.core.checks.catalogue import DEPRECATED_GAP, FAMILIES, Scope, Signal
from perftriage.core.model.findings import top as top_finding
from perftriage.core.model.state import SessionState
from perftriage.core.profile.ncu import NcuSummary
from perftriage.core.profile.ncu_join import figures, latest_summary
from perftriage.core.stacks.summary import latest as latest_stacks

Plain = bool | int | float | str


@dataclass(frozen=True)
class Missing:
    reason: str


@dataclass(frozen=True)
class ScopeKey:
    """One place a check is evaluated: a GPU of a host, a host, an engine, the session."""

    kind: Scope
    host: str | None = None
    gpu: int | None = None
    engine: str | None = None
    label: str = field(default="", compare=False)  # "node1 GPU 2", "node1", "engine:node1"

    def __post_init__(self) -> None:
        if self.kind == "gpu":
            label = f"{self.host} GPU {self.gpu}"
        elif self.kind == "engine":
            label = str(self.engine)
        elif self.kind == "host":
            label = str(self.host)
        else:
            label = "session"
        object.__setattr__(self, "label", label)


def _plain(value: Any) -> Plain | None:
    """Only these four exact types ever reach a check (no subclass, no object)."""
    if type(value) in (bool, int, float, str):
        return value
    return None


class SignalTable:
    def __init__(self, state: SessionState, now: float) -> None:
        self.state = state
        self.now = now
        # (id of the compiled signal, scope label): compiled checks live as long as the
        # evaluator, so an id is one signal for the tick (and no dataclass hash per read)
        self._cache: dict[tuple[int, str], Plain | Missing] = {}
        self._gap: dict[str, Any] | None = None
        self._scopes: dict[str, list[ScopeKey]] = {}
        # (id of a reference, scope kind) -> its value on each scope, in scopes()'s
        # order, and the types found in each such column (the evaluator fills both)
        self.columns: dict[tuple[int, str], list[Any]] = {}
        self.kinds: dict[int, set[type]] = {}
        self._index: dict[str, dict[str, int]] = {}
        self._probes: dict[tuple[str, str], Any] | None = None
        self._stacks_by_host: dict[str, Any] = {}
        self._gpus: dict[tuple[str, int], tuple[dict[str, Any], float | None]] | None = None
        self._ncu: tuple[str, NcuSummary] | tuple[()] | None = None  # the latest ncu result

    # --- scopes ----------------------------------------------------------------

    def hosts(self) -> list[str]:
        s = self.state
        names = dict.fromkeys(s.hosts)
        names.update(dict.fromkeys(g.host for g in self._latest_gaps().values()))
        names.update(dict.fromkeys(src.host for src in s.logs.values()))
        names.update(dict.fromkeys(p.host for p in s.probes.values()))
        return list(names)

    def scopes(self, kind: Scope) -> list[ScopeKey]:
        got = self._scopes.get(kind)
        if got is None:
            got = self._scopes[kind] = self._make_scopes(kind)
        return got

    def index(self, kind: Scope) -> dict[str, int]:
        """Scope label -> its position in ``scopes(kind)``."""
        got = self._index.get(kind)
        if got is None:
            got = self._index[kind] = {s.label: i for i, s in enumerate(self.scopes(kind))}
        return got

    def _make_scopes(self, kind: Scope) -> list[ScopeKey]:
        if kind == "gpu":
            return [ScopeKey("gpu", host=h, gpu=i) for (h, i) in self._gpu_index()]
        if kind == "engine":
            return [ScopeKey("engine", host=e.host, engine=name)
                    for name, e in self.state.engines.items()]
        if kind == "host":
            return [ScopeKey("host", host=h) for h in self.hosts()]
        return [ScopeKey("session")]

    # --- reading -----------------------------------------------------------------

    def read(self, sig: Signal, scope: ScopeKey) -> Plain | Missing:
        key = (id(sig), scope.label)
        got = self._cache.get(key)
        if got is None:
            got = self._cache[key] = self._read(sig, scope)
        return got

    def _fresh(self, sig: Signal, value: Any, t: float | None, what: str) -> Plain | Missing:
        if value is None:
            return Missing(f"{sig} missing ({what})")
        stale_s = FAMILIES[sig.family].stale_s
        if stale_s is not None and t is not None and self.now - t > stale_s:
            return Missing(f"{sig} stale ({self.now - t:.0f} s old)")
        plain = _plain(value)
        return Missing(f"{sig} is not a plain value") if plain is None else plain

    def _read(self, sig: Signal, scope: ScopeKey) -> Plain | Missing:
        fam = sig.family
        host = scope.host
        if fam == "profile":
            return self._profile(sig)
        if fam == "kernel":
            return self._kernel(sig)
        if fam == "engine":
            return self._engine(sig, scope)
        if host is None:
            return Missing(f"{sig} is per {FAMILIES[fam].scope}, the check is per session")
        if fam == "gpu":
            if scope.gpu is None:
                return Missing(f"{sig} is per GPU")
            fields, t = self._gpu_index().get((host, scope.gpu), ({}, None))
            return self._fresh(sig, fields.get(sig.field), t, f"no reading on {scope.label}")
        if fam == "host":
            hs = self.state.hosts.get(host)
            if hs is None:
                return Missing(f"{sig} missing (no sample from {host})")
            if sig.field == "ok":
                return hs.conn_state == "up"
            if sig.field == "gpu_count":
                return self._fresh(sig, len(hs.gpus) if hs.sample else None, hs.sample_t,
                                   f"no sample from {host}")
            value = getattr(hs.sample, sig.field, None) if hs.sample else None
            return self._fresh(sig, value, hs.sample_t, f"no sample from {host}")
        if fam == "gap":
            g = self._latest_gaps().get(host)
            if g is None:
                return Missing(f"{sig} missing (no gap sample from {host})")
            if sig.field in DEPRECATED_GAP and not g.verdict_kind:
                return self._gap_verdict(sig, host)
            return self._fresh(sig, getattr(g, sig.field, None), g.t, f"not in {host}'s gap")
        if fam == "log":
            return self._log(sig, host)
        if fam == "probe":
            return self._probe(sig, host)
        if fam == "stacks":
            return self._stacks(sig, host)
        if fam == "triage":
            return self._triage(sig, host)
        return Missing(f"{sig}: unknown family")

    def spread(self, ref: Any, scope: ScopeKey) -> Plain | Missing:
        """``spread(gpu.FIELD)`` on the scope's host: max - min over its GPUs
        (read once per host and tick, whatever the number of checks)."""
        key = (id(ref), scope.host or "")
        got = self._cache.get(key)
        if got is not None:
            return got
        values = []
        for gpu in self.scopes("gpu"):
            if gpu.host == scope.host:
                v = self.read(ref.signal, gpu)
                if type(v) is int or type(v) is float:
                    values.append(v)
        got = self._cache[key] = (max(values) - min(values)) if values else \
            Missing(f"{ref}: no GPU reading on {scope.host}")
        return got

    # --- per family ---------------------------------------------------------------

    def _gpu_index(self) -> dict[tuple[str, int], tuple[dict[str, Any], float | None]]:
        """(host, GPU index) -> (its fields: status --json plus GPM counters, sample t)."""
        if self._gpus is not None:
            return self._gpus
        out: dict[tuple[str, int], tuple[dict[str, Any], float | None]] = {}
        for name, hs in self.state.hosts.items():
            sample = hs.sample
            t = hs.sample_t
            if sample is not None and sample.gpu_age_s is not None and t is not None:
                t -= sample.gpu_age_s  # stale readings: as old as they really are
            for g in hs.gpus:
                out[(name, g.index)] = ({k: getattr(g, k) for k in g.__struct_fields__}, t)
            c = hs.counters
            if c is None:
                continue
            for gc in c.gpus:
                fields, gt = out.get((name, gc.index), ({}, None))
                extra = {k: getattr(gc, k) for k in gc.__struct_fields__
                         if k not in ("index", "stuck")}
                if gc.stuck:  # counters stuck at 0 while busy: no reading, not a zero
                    for k in ("dram_busy_pct", "dram_bw_gbs", "sm_active_pct"):
                        extra[k] = None
                fields = {**fields, **{k: v for k, v in extra.items()
                                       if v is not None or k not in fields}}
                fields["dram_bw_pct"] = fields.get("dram_busy_pct")
                if gc.nvlink_rx_gbs is not None and gc.nvlink_tx_gbs is not None:
                    fields["nvlink_gbs"] = gc.nvlink_rx_gbs + gc.nvlink_tx_gbs
                # the counters have their own time: the fresher of the two stands
                out[(name, gc.index)] = (fields, c.t if gt is None else max(gt, c.t))
        self._gpus = out
        return out

    def _latest_gaps(self) -> dict[str, Any]:
        if self._gap is None:
            latest: dict[str, Any] = {}
            for g in reversed(self.state.gap_samples):
                if g.host not in latest:
                    latest[g.host] = g
                if len(latest) >= max(1, len(self.state.hosts)):
                    break
            self._gap = latest
        return self._gap

    def _log(self, sig: Signal, host: str) -> Plain | Missing:
        best = None
        for src in self.state.logs.values():
            if src.host == host and src.metrics.last is not None:
                if best is None or (src.metrics_t or 0.0) >= (best.metrics_t or 0.0):
                    best = src
        if best is None:
            return Missing(f"{sig} missing (no metric line in {host}'s logs)")
        m = best.metrics.last
        assert m is not None  # chosen above for having one
        if sig.field == "engine":
            return self._fresh(sig, m.engine, best.metrics_t, "")
        if sig.field in ("gen_tps", "running") and m.kind != "decode" \
                and best.metrics.last_decode is not None:
            m = best.metrics.last_decode  # decode figures stay those of the last decode line
        return self._fresh(sig, getattr(m, sig.field, None), best.metrics_t,
                           f"not in {host}'s last metric line")

    def _engine(self, sig: Signal, scope: ScopeKey) -> Plain | Missing:
        engines = self.state.engines
        if scope.engine is not None:
            es = engines.get(scope.engine)
        else:
            es = next((e for e in engines.values() if e.host == scope.host), None) \
                if scope.host is not None else next(iter(engines.values()), None)
        if es is None:
            return Missing(f"{sig} missing (no engine endpoint"
                           + (f" on {scope.host})" if scope.host else ")"))
        if sig.field == "ok":
            return es.conn_state == "up"
        f = es.figures
        name = sig.field
        if name.endswith("_ms"):
            quantity, q, _ = name.split("_")
            seconds = getattr(getattr(f, f"{quantity}_s"), q)
            value = None if seconds is None else seconds * 1000.0
        else:
            value = getattr(f, name, None)
        return self._fresh(sig, value, es.sample_t, f"the engine at {es.source} does not say")

    def _probe_index(self) -> dict[tuple[str, str], Any]:
        """(host, name) -> the latest finished probe; a probe answers to its
        template name, its label ("import flashinfer.cute") and its id."""
        if self._probes is None:
            out: dict[tuple[str, str], Any] = {}
            for p in self.state.probes.values():
                if not p.finished:
                    continue
                for name in (p.template, p.label, p.probe_id, p.kind if not p.args else None):
                    if name:
                        out[(p.host, name)] = p
            self._probes = out
        return self._probes

    def _probe(self, sig: Signal, host: str) -> Plain | Missing:
        p = self._probe_index().get((host, sig.key or ""))
        if p is None:
            return Missing(f'probe["{sig.key}"] has not run on {host}')
        if sig.field == "ok":
            return p.status == "ok"
        value = p.status if sig.field == "verdict" else getattr(p, sig.field, None)
        return self._fresh(sig, value, None, f"the probe gave no {sig.field}")

    def _gap_verdict(self, sig: Signal, host: str) -> Plain | Missing:
        """``gap.verdict_kind`` / ``gap.verdict`` (deprecated) where the gap
        no longer judges: the triage's top (``triage.top``), and for the words
        its top problem's line. A transcript from before keeps its recorded
        verdict (read above)."""
        top = self._triage(Signal("triage", "top"), host)
        if sig.field == "verdict_kind" or isinstance(top, Missing) or not top:
            return top
        e = self.state.triage[host]
        f = next(f for f in e.findings if f.cause == top)
        return f"{f.severity} · {top} · {f.title}"

    def _triage(self, sig: Signal, host: str) -> Plain | Missing:
        """The host's live triage (the latest ``triage.updated``): ``top`` is
        the cause of its top problem ("" when none), ``CAUSE_pct`` a cause's
        share of the time — 0 when the triage ruled it out, missing while a
        lead still waits for a witness that could show it."""
        e = self.state.triage.get(host)
        if e is None:
            return Missing(f"{sig} missing (no triage of {host} yet)")
        findings = e.findings
        if sig.field.startswith("top"):
            top = top_finding(findings)
            top = top if top is not None and top.is_problem else None
            if sig.field == "top":
                return top.cause if top else ""
            if top is None:
                return Missing(f"{sig} missing (no problem found on {host})")
            value = top.explains_pct if sig.field == "top_pct" else top.severity
            return self._fresh(sig, value, None, "")
        cause = sig.field.removesuffix("_pct").replace("_", "-")
        found = next((f for f in findings if f.cause == cause and f.confirmed), None)
        if found is not None:
            return self._fresh(sig, found.explains_pct, None, "no share")
        leads = [f for f in findings if not f.confirmed]
        if leads:
            nxt = leads[0].next
            need = f": needs {nxt.kind}" if nxt is not None else ""
            return Missing(f"{sig} not known yet (the triage of {host} has a lead{need})")
        return 0.0

    def _stacks(self, sig: Signal, host: str) -> Plain | Missing:
        """The latest stacks probe on the host: its top frame, a named
        function's shares, the idle/GIL share of the process holding the top
        frame."""
        if host not in self._stacks_by_host:
            self._stacks_by_host[host] = latest_stacks(self.state.probes.values(), host)
        got = self._stacks_by_host[host]
        if got is None:
            return Missing(f"{sig}: no stacks sample from {host}")
        p, summary = got
        t = p.finished_t
        if sig.sub == "top":
            top = summary.top
            return self._fresh(sig, getattr(top, sig.field) if top else None, t,
                               "no active Python frame")
        if sig.sub == "frame":
            row = summary.frame(sig.key or "")
            if row is None:
                return Missing(f'{sig}: no frame "{sig.key}" in the stacks from {host}')
            return self._fresh(sig, row.total_pct if sig.field == "pct"
                               else getattr(row, sig.field), t, "")
        proc = summary.process_of_top() or (summary.processes[0] if summary.processes else None)
        return self._fresh(sig, getattr(proc, sig.field, None) if proc else None, t,
                           "no process read")

    def _profile(self, sig: Signal) -> Plain | Missing:
        """The profile summary, when one was captured: a mapping (or object)
        with ``buckets: {NAME: {pct, ms, count}}``, ``top: {name, pct, ms,
        bucket}``, ``total_ms``, ``kernels``."""
        summary = profile_signals(self.state)
        if summary is None:
            return Missing(f"{sig}: no profile captured yet")

        def get(obj: Any, key: str) -> Any:
            return obj.get(key) if isinstance(obj, dict) else getattr(obj, key, None)

        if sig.sub == "bucket":
            bucket = (get(summary, "buckets") or {}).get(sig.key) \
                if isinstance(get(summary, "buckets"), dict) else None
            if bucket is None:
                return Missing(f'{sig}: no bucket "{sig.key}" in the profile')
            return self._fresh(sig, get(bucket, sig.field), None, "")
        if sig.sub == "top":
            top = get(summary, "top")
            return self._fresh(sig, get(top, sig.field) if top is not None else None, None,
                               "no kernels in the profile")
        return self._fresh(sig, get(summary, sig.field), None, "")


    def _kernel(self, sig: Signal) -> Plain | Missing:
        """``kernel["REGEX"].FIELD``: the latest ncu probe's kernels whose
        name REGEX finds, together; the time share from the latest profile
        capture when it has them (core/profile/ncu_join.py)."""
        if self._ncu is None:
            self._ncu = latest_summary(self.state.probes.values()) or ()
        if not self._ncu:
            return Missing(f"{sig}: no ncu probe has profiled kernels yet")
        probe_id, summary = self._ncu
        profiles = self.state.profiles
        got = figures(summary, _pattern(sig.key or ""), profiles[-1].summary if profiles else None)
        if got is None:
            return Missing(f"{sig}: no kernel of {probe_id} matches")
        return self._fresh(sig, getattr(got, sig.field), None, f"{probe_id} has no {sig.field}")


@lru_cache(maxsize=256)
def _pattern(text: str) -> re.Pattern[str]:
    return re.compile(text)  # checked when the check was compiled


def profile_signals(state: Any) -> dict[str, Any] | None:
    """The latest profile capture of the session as the mapping the
    ``profile.*`` signals read: ``total_ms``, ``kernels``, ``idle_pct``, the idle
    breakdown's ``idle_host_pct``/``idle_kernel_pct``/``idle_other_pct``, the
    launch figures ``launch_delay_us_p50``/``launch_delay_us_p99``/``short_kernels``,
    ``buckets: {NAME: {pct, ms, count, top_name}}`` and ``top`` (the biggest
    kernel). None before the first capture."""
    captures = getattr(state, "profiles", None) or []
    if not captures:
        return None
    summary = captures[-1].summary
    buckets: dict[str, dict[str, Any]] = {
        b.bucket: {"pct": b.pct, "ms": b.total_ms, "count": 0, "top_name": None}
        for b in summary.buckets}
    for k in summary.kernels:  # sorted by total_ms: the first one seen is the top one
        row = buckets.setdefault(k.bucket, {"pct": 0.0, "ms": 0.0, "count": 0, "top_name": None})
        row["count"] += 1
        if row["top_name"] is None:
            row["top_name"] = k.name
    top = summary.kernels[0] if summary.kernels else None
    idle, launch = summary.idle_breakdown, summary.launch
    return {
        "total_ms": summary.kernel_ms,
        "kernels": len(summary.kernels),
        "idle_pct": summary.idle_pct,
        "idle_host_pct": idle.host_wait_pct if idle else None,
        "idle_kernel_pct": idle.kernel_wait_pct if idle else None,
        "idle_other_pct": idle.other_pct if idle else None,
        "launch_delay_us_p50": launch.delay_us_p50 if launch else None,
        "launch_delay_us_p99": launch.delay_us_p99 if launch else None,
        "short_kernels": launch.short_kernels if launch else None,
        "buckets": buckets,
        "top": None if top is None else {"name": top.name, "pct": top.pct,
                                         "ms": top.total_ms, "bucket": top.bucket},
    }
