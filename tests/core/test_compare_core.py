"""The before/after core (perftriage.core.compare) on real recordings: the
slow and fast phases of the H200 bandwidth stand-in
(``tests/fixtures/session-h200-standin.jsonl``, a copy of
``../shared/fixtures/h200-bandwidth/session-h200-standin.jsonl``, and
``tests/fixtures/gpm/h200-run``, the same workload recorded with the live gap
and GPM counters on the same kind of machine), no false alarms between
slices of one steady phase, change points, the profile per step from the real
H200 traces, and what else changed between two runs."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import mannwhitneyu

from perftriage.core.compare import changepoints, stats
from perftriage.core.compare.compare import Side, compare
from perftriage.core.compare.load import load
from perftriage.core.compare.slices import SliceError, Window, parse_slice, window
from tests.support.compare_recordings import H200_RUN, RUN2_T, STANDIN, two_runs

SLOW, FAST = (5, 33), (36, 78)  # the h200-run's phases (s), away from the switch at 34 s


@pytest.fixture(scope="module")
def h200():
    return load(H200_RUN)


def side(rec, start, end, label="x"):
    return Side(rec, Window(label, start, end))


def by_metric(result, metric, host="localhost"):
    return next(r for r in result["metrics"] if r["metric"] == metric and r["host"] == host
                and r["gpu"] is None)


# --- slices ----------------------------------------------------------------------


@pytest.mark.parametrize("text, source, segment, start, end", [
    ("run", "run", None, None, None),
    ("run#2", "run", 2, None, None),
    ("run@30-", "run", None, 30.0, None),
    ("run@-1:30", "run", None, None, 90.0),
    ("a/b.jsonl@1:00-1:02:03", "a/b.jsonl", None, 60.0, 3723.0),
])
def test_slice_forms(text, source, segment, start, end):
    s = parse_slice(text)
    assert (s.source, s.segment, s.start, s.end) == (source, segment, start, end)


def test_a_name_that_exists_as_written_is_whole():
    assert parse_slice("odd@1-2.jsonl", exists=lambda n: n == "odd@1-2.jsonl").source == \
        "odd@1-2.jsonl"


@pytest.mark.parametrize("text, says", [
    ("run@abc", "FROM-TO"), ("run@30-10", "not after"), ("run#0", "from 1"),
    ("run@1:75-", "below 60"), ("", "empty"),
])
def test_bad_slices_say_why(text, says):
    with pytest.raises(SliceError, match=says):
        parse_slice(text)


def test_windows_from_runs_and_ranges():
    runs = [(1, 0.0), (2, 34.0)]
    assert (window(parse_slice("r#2"), runs, 80.0).start, window(parse_slice("r#2"), runs,
                                                                  80.0).end) == (34.0, 80.0)
    w = window(parse_slice("r#1"), runs, 80.0)
    assert (w.start, w.end) == (0.0, 34.0)
    with pytest.raises(SliceError, match="runs 1-2"):
        window(parse_slice("r#3"), runs, 80.0)
    with pytest.raises(SliceError, match=r"1:20 \(80.0 s\) long"):
        window(parse_slice("r@90-"), runs, 80.0)
    with pytest.raises(SliceError, match="long"):
        window(parse_slice("r@10-2:00"), runs, 80.0)


# --- statistics -------------------------------------------------------------------


@pytest.mark.parametrize("seed, n1, n2, shift, rounding", [
    (7, 30, 25, 4.0, None), (1, 10, 10, 0.0, None), (2, 12, 40, 10.0, None),
    (3, 20, 20, 1.0, 0),  # many ties
    (4, 10, 15, 30.0, 0), (5, 300, 200, 0.5, 1),
])
def test_p_value_is_scipys_two_sided_mann_whitney(seed, n1, n2, shift, rounding):
    rng = np.random.default_rng(seed)
    a, b = rng.normal(100, 5, n1), rng.normal(100 + shift, 5, n2)
    if rounding is not None:
        a, b = a.round(rounding), b.round(rounding)
    expected = mannwhitneyu(a, b, alternative="two-sided", method="asymptotic").pvalue
    assert stats.mann_whitney_p(list(a), list(b)) == pytest.approx(expected, rel=1e-9, abs=1e-300)
    # from 10 readings a side (the verdicts' minimum) with ties, scipy's default is this method
    if rounding is not None:
        assert stats.mann_whitney_p(list(a), list(b)) == pytest.approx(
            mannwhitneyu(a, b, alternative="two-sided").pvalue, rel=1e-9)


def test_summary_percentiles_are_numpys():
    values = [3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0, 5.0, 3.0, 5.0]
    s = stats.summarize(values)
    assert (s.median, s.p10, s.p90, s.n) == pytest.approx(
        (np.percentile(values, 50), np.percentile(values, 10), np.percentile(values, 90), 11))


def test_verdicts_are_direction_aware_and_gated():
    low, high = [100.0 + i % 3 for i in range(20)], [130.0 + i % 3 for i in range(20)]
    assert stats.judge(low, high, "higher").verdict == "improved"
    assert stats.judge(low, high, "lower").verdict == "regressed"
    assert stats.judge(high, low, "lower").verdict == "improved"
    # significant (every reading moved) but 2 %: the effect gate says no change
    nudged = [v * 1.02 for v in low]
    j = stats.judge(low, nudged, "higher")
    assert j.p_value is not None and j.p_value < stats.ALPHA and j.verdict == "no change"
    assert stats.judge(low, nudged, "higher", min_effect_pct=1.0).verdict == "improved"
    assert stats.judge(low[:9], high, "higher").verdict == "not enough data"
    assert stats.judge(low, low, "higher").p_value == 1.0


# --- change points ------------------------------------------------------------------


def test_change_point_of_the_h200_run_is_where_the_fast_phase_starts(h200):
    ts, vs = h200.readings("decode_tps", "localhost", 0, h200.duration)
    found = changepoints.phases(ts, vs)
    assert len(found) == 2
    slow, fast = found
    assert 33 <= fast.start <= 35
    assert slow.median == pytest.approx(13.59, abs=0.1)
    assert fast.median == pytest.approx(108.85, abs=0.2)


def test_a_steady_series_and_a_spike_make_no_phase(h200):
    ts, vs = h200.readings("decode_tps", "localhost", *FAST)
    assert len(changepoints.phases(ts, vs)) == 1
    spiky = list(vs)
    spiky[10] = 5.0
    assert changepoints.change_points(spiky) == []


# --- verdicts on the real run ---------------------------------------------------------


def test_slow_to_fast_improves_tok_s_and_traffic_ratio(h200):
    out = compare(side(h200, *SLOW), side(h200, *FAST))
    for metric in ("decode_tps", "traffic_ratio", "useful_gbs", "gap", "idle_pct"):
        assert by_metric(out, metric)["verdict"] == "improved", metric
    tps = by_metric(out, "decode_tps")
    assert tps["a"]["median"] == pytest.approx(13.59, abs=0.05)
    assert tps["b"]["median"] == pytest.approx(108.85, abs=0.1)
    assert tps["p_value"] < 0.001
    assert out["summary"].startswith("B is 8.0× faster than A in decode throughput")
    assert "p < 0.001" in out["summary"] and "GPU idle 43.5 → 9.6 %" in out["summary"]


def test_fast_to_slow_regresses_them(h200):
    out = compare(side(h200, *FAST), side(h200, *SLOW))
    assert by_metric(out, "decode_tps")["verdict"] == "regressed"
    assert by_metric(out, "traffic_ratio")["verdict"] == "regressed"
    assert by_metric(out, "traffic_ratio", "viadmon")["verdict"] == "regressed"
    assert "slower" in out["summary"]


def test_the_standin_session_from_the_shared_fixtures():
    rec = load(STANDIN)
    out = compare(side(rec, 0, 30), side(rec, 40, rec.duration))
    tps = by_metric(out, "decode_tps", "h200")
    assert tps["verdict"] == "improved" and tps["ratio"] == pytest.approx(8.0, abs=0.2)


def test_no_false_alarms_between_slices_of_one_steady_phase(h200):
    """24 pairs of 10-s slices cut from the fast phase: at most one verdict in
    all of them is anything but 'no change'."""
    others, pairs = [], 0
    lo, hi = FAST
    for start in range(lo, hi - 30):
        for gap in (15, 20):
            if start + gap + 10 > hi or pairs >= 24:
                continue
            pairs += 1
            out = compare(side(h200, start, start + 10), side(h200, start + gap, start + gap + 10))
            others += [(start, r["name"], r["verdict"]) for r in out["metrics"]
                       if r["verdict"] != "no change"]
            assert len(out["metrics"]) >= 10
    assert pairs >= 20
    assert len(others) <= 1, others


def test_a_slice_across_the_switch_says_where_it_straddles(h200):
    out = compare(side(h200, 0, h200.duration), side(h200, *FAST))
    assert not out["comparable"]
    assert any("A straddles a phase change at 0:3" in w and "decode throughput 13.6 → 109" in w
               for w in out["warnings"]), out["warnings"]
    assert not any(w.startswith("B straddles") for w in out["warnings"])


def test_too_few_readings_name_the_metric_and_counts(h200):
    out = compare(side(h200, 5, 9), side(h200, *FAST))
    tps = by_metric(out, "decode_tps")
    assert tps["verdict"] == "not enough data" and tps["p_value"] is None
    assert any(w.startswith("decode throughput · localhost: not enough data (A 4, B 42 readings")
               for w in out["warnings"]), out["warnings"]


# --- two runs: profile, what else changed ---------------------------------------------


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return load(two_runs(tmp_path_factory.mktemp("cmp") / "moe.jsonl"))


def test_runs_profile_per_step_and_what_changed(runs):
    a = Side(runs, window(parse_slice("moe#1"), runs.segments, runs.duration))
    b = Side(runs, window(parse_slice("moe#2"), runs.segments, runs.duration))
    assert (a.window.end, b.window.start) == (RUN2_T, RUN2_T)
    out = compare(a, b)
    p = out["profile"]
    # eager 19.53 ms over 5 steps vs the graph replay 3.01 ms (the real traces' windows)
    assert p["step_ms"]["a"] == pytest.approx(3.906, abs=0.01)
    assert p["step_ms"]["b"] == pytest.approx(0.603, abs=0.01)
    assert p["step_ms"]["verdict"] == "improved"
    assert p["step_ms_per_rank"]["a"] == {"TP-0": pytest.approx(3.906, abs=0.01)}
    assert p["idle_pct"]["verdict"] == "improved"
    assert p["kernel_ms"]["verdict"] == "no change"  # the same kernels, replayed
    copy = next(k for k in p["kernels"] if k["bucket"] == "memcpy/memset")
    assert copy["change"] == "replaced" and "memcpy32_post" in copy["name"]
    assert "step 3.9 → 0.60 ms (6.5× faster)" in out["summary"]
    ch = out["changes"]
    assert [c["text"] for c in ch["args"]] == ["--moe-runner-backend triton → flashinfer_cutedsl"]
    assert [c["text"] for c in ch["versions"]] == ["sglang on localhost 0.5.2 → 0.5.3"]
    assert [c["text"] for c in ch["hypotheses"]] == ["the MoE kernel is the gap: open → supported"]
    assert any("A holds a profile capture (prof1" in w for w in out["warnings"])


def test_different_models_warn(tmp_path):
    rec = load(two_runs(tmp_path / "m.jsonl", model_b="deepseek-ai/DeepSeek-V3"))
    a = Side(rec, window(parse_slice("m#1"), rec.segments, rec.duration))
    b = Side(rec, window(parse_slice("m#2"), rec.segments, rec.duration))
    out = compare(a, b)
    assert not out["comparable"]
    assert any("different models: Qwen/Qwen3-30B-A3B in A, deepseek-ai/DeepSeek-V3 in B" in w
               for w in out["warnings"])


# --- reading a recording: the fast paths read what the reducer's parse reads ------------


def test_slices_read_alone_give_the_readings_of_a_whole_read(h200):
    from perftriage.core.compare.load import load as load_part

    part = load_part(H200_RUN, windows=[SLOW, FAST])
    for (metric, host, gpu) in h200.series:
        for start, end in (SLOW, FAST):
            assert part.readings(metric, host, start, end, gpu) == \
                h200.readings(metric, host, start, end, gpu), (metric, host, gpu)
    assert part.duration == h200.duration


def test_log_batches_in_bulk_match_the_reducers_parse_batch_by_batch():
    """The standin's SGLang decode lines (one findall over many batches) and a
    real vLLM 0.33 and SGLang 0.5 TP8 log (batch by batch, through LogMetrics)
    give the readings the reducer's parse gives."""
    from perftriage.core.compare.recording import Recording
    from perftriage.core.model import events as ev
    from perftriage.core.parse.log_metrics import LogMetrics
    from tests.support.compare_recordings import FIX

    logs = {"standin": (FIX / "gpm" / "standin-server.log").read_text().splitlines(),
            "vllm": (FIX / "logs" / "vllm-0.33.0.log").read_text().splitlines(),
            "sglang": (FIX / "logs" / "sglang-0.5.23-tp8.log").read_text().splitlines()}
    for (name, lines), bulk in [(item, b) for item in logs.items() for b in (True, False)]:
        rec = Recording(bulk_logs=bulk)
        rec.feed(ev.LogSourceOpened(source_id=name, host="h", path=name))
        for i in range(0, len(lines), 3):
            rec.feed(ev.LogLines(source_id=name, lines=lines[i:i + 3], t=float(i)))
        lm = LogMetrics(maxlen=100_000)
        lm.feed(lines, 1)
        got = rec.readings("decode_tps", "h", 0, 1e9)[1]
        flat = rec.series[("decode_tps", "h", -1)].v if got else []
        assert list(flat) == [float(v) for v in lm.gen_tps], name
        assert len(flat) > 0, name


def test_a_gpu_shows_on_its_own_row_only_where_its_verdict_differs_from_its_hosts():
    from perftriage.core.compare.recording import Recording
    from perftriage.core.model import events as ev

    rec = Recording()
    for t in range(60):
        after = t >= 30
        gpus = [ev.GpuCounters(index=0, sm_active_pct=(80.0 if after else 50.0) + t % 3),
                ev.GpuCounters(index=1, sm_active_pct=50.0 + t % 3)]
        rec.feed(ev.GpuCountersSample(host="n1", source="nvml-gpm", gpus=gpus, t=float(t)))
    out = compare(side(rec, 0, 29), side(rec, 30, 59))
    rows = [(r["name"], r["gpu"], r["verdict"]) for r in out["metrics"]]
    assert rows == [("SM active · n1", None, "improved"), ("SM active · n1 GPU 1", 1, "no change")]


def test_fed_live_a_flood_is_read_a_few_batches_a_second():
    """The cockpit's live recording reads a source's batches at most every
    0.25 s (a flood's per-second medians from a few batches), every batch of
    a server that logs once a second."""
    from perftriage.core.compare.recording import Recording
    from perftriage.core.model import events as ev
    from tests.support.compare_recordings import FIX

    lines = [ln for ln in (FIX / "gpm" / "standin-server.log").read_text().splitlines()
             if "Decode batch" in ln]
    flood = Recording(bulk_logs=False, log_every_s=0.25)
    calm = Recording(bulk_logs=False, log_every_s=0.25)
    for i, line in enumerate(lines):
        flood.feed(ev.LogLines(source_id="s", lines=[line], t=i * 0.05))
        calm.feed(ev.LogLines(source_id="s", lines=[line], t=float(i)))
    read = len(flood.series[("decode_tps", "?", -1)].t)
    assert read == len(range(0, len(lines), 5))  # one batch in five (0.25 s / 0.05 s)
    assert len(calm.series[("decode_tps", "?", -1)].t) == len(lines)


@pytest.mark.parametrize("a, b, shown", [
    (0.02553, 0.02441, ("0.0255", "0.0244")),  # 0.96×: not 0.03 → 0.02
    (0.0024, 0.0035, ("0.0024", "0.0035")),
    (13.6, 109.0, ("13.6", "109")),  # fmt's digits already give the ratio
    (3076.0, 3100.0, ("3,076", "3,100")),
    (0.0, 0.5, ("0", "0.50")),
])
def test_a_pair_shows_the_digits_its_ratio_needs(a, b, shown):
    from perftriage.core.compare.numbers import pair_texts

    assert pair_texts(a, b) == shown
    ta, tb = (float(x.replace(",", "")) for x in shown)
    if ta and tb:
        assert f"{tb / ta:.2f}" == f"{b / a:.2f}"


def test_buckets_and_kernels_below_the_noise_floor_read_no_change(tmp_path):
    """The real eager (TP 2) and graph-replay (TP 1) H200 captures: memcpy goes
    0.0024 → 0.0035 ms of a 3.9 ms step, 1.48×: noise, not a regression; the
    rank counts differ, and every view says so."""
    from perftriage.core.compare.profile_diff import NOISE_SHARE, diff
    from perftriage.core.view.baseline_view import profile_lines

    rec = load(two_runs(tmp_path / "tp2.jsonl", eager_ranks=2))
    a, b = (next(p for p in rec.profiles if p.capture_id == c) for c in ("prof1", "prof2"))
    d = diff(a, b)
    assert d.noise_ms == pytest.approx(NOISE_SHARE * d.step_ms.a)
    copy = next(f for f in d.buckets if f.name == "memcpy/memset")
    assert (copy.ratio or 0) > 1.4 and copy.verdict == "no change"
    assert all(f.verdict == "no change" for f in d.buckets if abs(f.b - f.a) < d.noise_ms)
    assert all(f.verdict == "no change" for f in d.kernels
               if abs((f.b or 0) - (f.a or 0)) < d.noise_ms)
    assert d.step_ms.verdict == "improved"  # the floor is for buckets and kernels only
    assert d.warnings() == ["profiles of different rank counts (prof1 2, prof2 1): "
                            "the work per rank differs"]
    lines = [text for text, _ in profile_lines(d)]
    assert lines[3] == "⚠ profiles of different rank counts (prof1 2, prof2 1): " \
                       "the work per rank differs"
    assert not any("memcpy" in t and "regressed" in t for t in lines)
    assert "  attention 0.0255 → 0.0244 ms (0.96×, unchanged) = no change" in lines
    # the CLI's and the report's comparison: the same floor, the warning among the rest
    out = compare(Side(rec, window(parse_slice("x#1"), rec.segments, rec.duration)),
                  Side(rec, window(parse_slice("x#2"), rec.segments, rec.duration)))
    assert out["profile"]["noise_ms"] == pytest.approx(d.noise_ms)
    assert out["profile"]["ranks"] == [2, 1]
    assert d.warnings()[0] in out["warnings"] and not out["comparable"]
    assert next(f for f in out["profile"]["buckets"]
                if f["bucket"] == "memcpy/memset")["verdict"] == "no change"
