"""The per-source time series of a server log (pure, no Textual): built
by the reducer from LogLines events, so replay gives the same numbers as
the live run."""

from __future__ import annotations

from bisect import bisect_left
from collections import deque
from dataclasses import dataclass, field, replace

from perftriage.core.parse.batch_scan import Scan, Triage, scan
from perftriage.core.parse.logparse import (
    KV_RETRACT,
    SERIES_POINTS,
    Metric,
    Milestone,
    ms_per_token,
    prefill_metric,
    token_latency,
)


@dataclass
class LogMetrics:
    """Time series of one log source (built by the reducer, deterministic)."""

    maxlen: int = SERIES_POINTS
    engine: str | None = None
    gen_tps: deque[float] = field(default_factory=lambda: deque(maxlen=SERIES_POINTS))
    input_tps: deque[float] = field(default_factory=lambda: deque(maxlen=SERIES_POINTS))
    running: deque[int] = field(default_factory=lambda: deque(maxlen=SERIES_POINTS))
    queued: deque[int] = field(default_factory=lambda: deque(maxlen=SERIES_POINTS))
    token_usage: deque[float] = field(default_factory=lambda: deque(maxlen=SERIES_POINTS))
    last: Metric | None = None
    last_decode: Metric | None = None
    last_prefill: Metric | None = None
    count: int = 0
    milestones: list[Milestone] = field(default_factory=list)
    errors: int = 0  # fatal-pattern lines seen
    retractions: int = 0  # SGLang's "KV cache pool is full. Retract requests." (a warning)
    # Data parallel: each engine's latest record by engine index. The series
    # above then hold totals (rates and request counts summed over engines,
    # KV usage the fullest engine's), never one engine's value after another's.
    engines: dict[int, Metric] = field(default_factory=dict)
    spec_accept_len: float | None = None  # latest tokens per decode step, if speculating
    engine_read_gbs: float | None = None  # latest engine estimate of read GB/s per GPU

    @property
    def ready(self) -> bool:
        return any(m.name == "ready" for m in self.milestones)

    @property
    def engine_count(self) -> int:
        """Data-parallel engines seen (0 for one engine without an index)."""
        return len({k if k >= 0 else -1 - k for k in self.engines})

    @property
    def latest_gen_tps(self) -> float | None:
        return self.gen_tps[-1] if self.gen_tps else None

    @property
    def ms_per_token(self) -> float | None:
        return ms_per_token(self.latest_gen_tps)

    @property
    def latest_running(self) -> int | None:
        return self.running[-1] if self.running else None

    @property
    def token_latency(self) -> tuple[float | None, str]:
        """(per-request ms/token, label) at the latest decode line's batch size;
        per decode step (labelled so) when speculative decoding's accept
        length is known."""
        return token_latency(self.latest_gen_tps, self.latest_running, self.spec_accept_len)

    def feed(self, lines, first_line: int, found: Scan | None = None) -> bool:
        """Parse a batch; True when anything was recorded. ``found`` is
        ``scan(lines)`` when the caller has it."""
        lines = lines if isinstance(lines, list) else list(lines)
        if found is None:
            found = scan(lines)
        if not found.items:
            return self._feed_common(found.fast, first_line)  # a busy server's batch
        fast = found.fast
        at = 0  # fast decode lines before this index are in the series
        last_fast = -1  # index (in fast) of the latest decode line of the fast shape
        fast_is_last = False
        changed = bool(fast.fast)
        for i, rec, fatal in found.records():
            upto = bisect_left(fast.fast, i, at)
            if upto > at:  # the fast decode lines before this item, in line order
                self._extend_fast(fast, at, upto)
                at, last_fast, fast_is_last = upto, upto - 1, True
            if fatal:
                self.errors += 1
                changed = True
            if rec is None:
                if not fatal and KV_RETRACT in lines[i]:
                    self.retractions += 1
                    changed = True
                continue
            changed = True
            if isinstance(rec, Milestone):
                rec = Milestone(rec.ts, rec.engine, rec.name, rec.text, first_line + i)
                self.engine = self.engine or rec.engine
                if len(self.milestones) < 1000:
                    self.milestones.append(rec)
                continue
            rec = replace(rec, line=first_line + i)
            if rec.kind in ("decode", "stats"):
                last_fast = -1  # a later decode/stats record is the last decode
            fast_is_last = False
            self.add(rec)
        if at < len(fast.fast):
            self._extend_fast(fast, at, len(fast.fast))
            last_fast, fast_is_last = len(fast.fast) - 1, True
        if last_fast >= 0:
            self._last_fast(fast, last_fast, first_line, fast_is_last)
        return changed

    def _feed_common(self, fast: Triage, first_line: int) -> bool:
        """A batch whose only records are common-shape decode and prefill lines
        (what a busy SGLang server writes): the series grow by C-level extends,
        and only the latest record of each kind becomes a Metric. The same
        result as recording them one by one in line order."""
        pre = fast.prefill
        if not pre:
            if fast.fast:
                self._extend_fast(fast, 0, len(fast.fast))
                self._last_fast(fast, len(fast.fast) - 1, first_line, True)
            return bool(fast.fast)
        self.gen_tps.extend(fast.gen)
        self.running.extend(fast.running)
        self.input_tps.extend([row[5] for row in pre])
        # queued and token usage come from both kinds: merged in line order
        # (one C-level sort of positions by line offset, no tuple per line)
        offsets = fast.fast + [row[0] for row in pre]
        order = sorted(range(len(offsets)), key=offsets.__getitem__)
        queued = fast.queued + [row[4] for row in pre]
        usage = fast.usage + [row[2] for row in pre]
        self.queued.extend(map(queued.__getitem__, order))
        self.token_usage.extend(map(usage.__getitem__, order))
        self.count += len(offsets)
        i, ts, use, run, que, inp, new, cached = pre[-1]
        prefill = prefill_metric(ts, use, run, que, inp, new, cached, first_line + i)
        self.engine = "sglang"
        self.last_prefill = self.last = prefill
        if fast.fast:
            self._last_fast(fast, len(fast.fast) - 1, first_line, fast.fast[-1] > i)
        return True

    def _last_fast(self, fast: Triage, k: int, first_line: int, is_last: bool) -> None:
        """Fast decode line ``k`` is the latest decode record (and the latest record)."""
        m = Metric(fast.ts[k], "sglang", "decode", fast.gen[k], None, fast.running[k],
                   fast.queued[k], fast.usage[k], first_line + fast.fast[k])
        self.engine = "sglang"
        self.last_decode = m
        if is_last:
            self.last = m

    def _extend_fast(self, fast: Triage, a: int, b: int) -> None:
        """Append fast decode lines ``a:b`` to the series (C-level extends)."""
        if a == 0 and b == len(fast.fast):  # the whole batch: no copies
            self.gen_tps.extend(fast.gen)
            self.running.extend(fast.running)
            self.queued.extend(fast.queued)
            self.token_usage.extend(fast.usage)
        else:
            self.gen_tps.extend(fast.gen[a:b])
            self.running.extend(fast.running[a:b])
            self.queued.extend(fast.queued[a:b])
            self.token_usage.extend(fast.usage[a:b])
        self.count += b - a

    def add(self, m: Metric) -> None:
        self.engine = m.engine
        self.count += 1
        if m.spec_accept_len is not None:
            self.spec_accept_len = m.spec_accept_len
        if m.engine_read_gbs is not None:
            self.engine_read_gbs = m.engine_read_gbs
        if m.kind in ("spec", "mfu"):
            return  # vLLM's side lines: an accept length or an estimate, no sample
        if m.engine_index is not None:
            m = self._engine_total(m)
        self.last = m
        if m.kind == "prefill":
            self.last_prefill = m
        else:
            self.last_decode = m
        if m.gen_tps is not None:
            self.gen_tps.append(m.gen_tps)
        if m.input_tps is not None:
            self.input_tps.append(m.input_tps)
        if m.running is not None and m.kind != "prefill":
            self.running.append(m.running)
        if m.queued is not None:
            self.queued.append(m.queued)
        if m.token_usage is not None:
            self.token_usage.append(m.token_usage)

    def _engine_total(self, m: Metric) -> Metric:
        """``m`` (one data-parallel engine's record) as the total over every
        engine's latest record of the same kind: rates and request counts
        summed, KV usage the fullest engine's."""
        index = m.engine_index or 0
        key = index if m.kind != "prefill" else -1 - index  # prefill totals apart
        self.engines[key] = m
        same = [e for k, e in self.engines.items() if (k < 0) == (key < 0)]

        def total(name: str):
            vals = [getattr(e, name) for e in same if getattr(e, name) is not None]
            return sum(vals) if vals else None

        usage = [e.token_usage for e in same if e.token_usage is not None]
        return replace(m, gen_tps=total("gen_tps"), input_tps=total("input_tps"),
                       running=total("running"), queued=total("queued"),
                       token_usage=max(usage) if usage else None, engine_index=None)
