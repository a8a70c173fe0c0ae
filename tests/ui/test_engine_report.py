"""The report shows what the engine's /metrics said over the session."""

from __future__ import annotations

from perftriage.core.model import events as ev
from perftriage.core.model.reducer import replay
from perftriage.core.parse.engine_metrics import parse_exposition
from perftriage.core.report.markdown import render
from tests.support.helpers import FIXTURES


def page(name: str):
    return parse_exposition((FIXTURES / "metrics" / f"{name}.prom").read_text())


def engine_events(base: str, pages: list[str]) -> list[ev.Event]:
    out: list[ev.Event] = [ev.EngineStatus(source="engine:n1", host="n1", state="connecting",
                                           url="http://127.0.0.1:30000/metrics", t=0.0)]
    out += [ev.EngineSample(source="engine:n1", host="n1", snapshot=page(f"{base}-{p}"),
                            t=10.0 * i) for i, p in enumerate(pages)]
    return out


def engine_transcript(path):
    """A transcript of the two scrapes of :func:`engine_events`."""
    from perftriage.core.store import transcript

    writer = transcript.TranscriptWriter(path, transcript.make_header("2026-12-01T00:00:00+00:00",
                                                                      ["n1"], name="s"))
    for event in engine_events("sglang-0.5", ["a", "b"]):
        writer.write(event)
    writer.close()
    return path


def test_report_has_the_session_figures():
    text = render(replay(engine_events("sglang-0.5", ["a", "b"])))
    assert "## Engine metrics" in text
    assert "`engine:n1` (sglang, `http://127.0.0.1:30000/metrics` read on n1): 2 scrapes " \
           "over 10 s, endpoint up" in text
    assert "session mean: generation 500.0 tok/s, prompt 2000.0 tok/s" in text
    # says why it is not the log's gen throughput (issue 41 item 13)
    assert "not the log's figure: the log's `gen throughput` is the scheduler's" in text
    assert ("inter-token latency: p50 10.0 / p90 15.0 / p99 58.0 ms, mean 14.3 ms over 100 "
            "observations") in text
    assert "last: running 32, queued 5, KV usage 50%, prefix-cache hit 25%, " \
           "spec accept length 3.10" in text


def test_report_sums_across_a_restart():
    text = render(replay(engine_events("vllm-0.11", ["a", "b", "c"])))
    # 3000 tokens before the restart, 100 after it, over 20 s; 100 + 10 ITL observations
    assert "generation 155.0 tok/s" in text
    assert "over 110 observations" in text


def test_no_engine_no_section():
    assert "Engine metrics" not in render(replay([]))


def test_report_of_a_transcript_file(tmp_path):
    from perftriage.core.report.from_file import render_file

    path = engine_transcript(tmp_path / "s.jsonl")
    text = render_file(path)
    assert "inter-token latency: p50 10.0 / p90 15.0 / p99 58.0 ms" in text


def test_roofline_panel_takes_measured_ms_from_the_itl():
    from perftriage.ui.screens.roofline import prefill

    line = ("[2026-11-28 09:16:06 TP0] Decode batch, #running-req: 1, #token: 852, "
            "token usage: 0.00, cuda graph: True, gen throughput (token/s): 10.00, #queue-req: 0")
    log = [ev.LogSourceOpened(source_id="l1", host="n1", path="/x"),
           ev.LogLines(source_id="l1", lines=[line])]
    got = prefill(replay(log))
    assert got.values["measured_ms"] == "100.0"  # the log's 10 tok/s
    assert (got.measured_from, got.measured_batch) == ("the log", 1.0)
    # with the endpoint: mean ITL over the window, (50 x 9 + 40 x 12 + 10 x 50) / 100 ms
    both = replay(log + engine_events("sglang-0.5", ["a", "b"]))
    got = prefill(both)
    assert got.values["measured_ms"] == "14.3"
    assert got.measured_from.endswith(": mean ITL, last 10 s") and got.notes["measured_ms"].startswith("from engine")


def test_the_gap_form_takes_the_model_bytes_from_a_server_profile():
    """A [[servers]] profile that declares its model's bytes (the demo's
    scenarios: 40 B active parameters at 4 bits) fills the form: G then Enter."""
    from perftriage.core.model.state import SessionState
    from perftriage.core.store.config import ServerProfile
    from perftriage.ui.screens.roofline import prefill

    profile = ServerProfile(name="sglang", command="x", host="h",
                            args={"tp": "8", "active_params_b": "40", "bits": "4"})
    got = prefill(SessionState(), [profile])
    assert (got.values["active_params_b"], got.values["bits"], got.values["gpus"]) == (
        "40", "4", "8")
    assert got.notes["active_params_b"] == "server sglang: active_params_b 40"
    from perftriage.core.analysis.roofline import ceiling_words

    assert ceiling_words(311.1, 32) == ("ceiling 311.1 tok/s per sequence (9955 tok/s aggregate "
                                        "at batch 32)")
    assert "weights_gb" not in prefill(SessionState(), [ServerProfile(
        name="s", command="x", host="h", args={"bits": "4"})]).values  # bits alone: nothing


async def test_the_gap_form_records_where_its_measured_figure_came_from(tmp_path):
    from perftriage.ui.screens.roofline import RooflineScreen
    from tests.support.helpers import replay_app

    path = engine_transcript(tmp_path / "s.jsonl")
    app = replay_app(path)
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause()
        screen = RooflineScreen(app.cockpit.session.state)
        app.push_screen(screen)
        await pilot.pause()
        # the prefilled figure: the engine's mean ITL (the batch: its running gauge)
        source, _ = screen.measured_source()
        assert source == "engine n1: mean ITL, last 10 s"
        screen.query_one("#rl-measured_ms").value = "20"
        assert screen.measured_source() == ("typed in", None)
