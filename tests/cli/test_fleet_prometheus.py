"""The fleet read from a real Prometheus (tests/support/prometheus.py) scraping
emulated dcgm-exporter and SGLang pages for 16 hosts x 8 GPUs with two
planted outliers: `perftriage fleet`, the client, and the fleet Source."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from tests.conftest import FLEET_OUTLIERS
from tests.support.helpers import wait_for
from tests.support.sshd import free_port
from perftriage.cli import EXIT_FAILED, EXIT_UNREACHABLE, cli
from perftriage.core.model import events as ev
from perftriage.services.cockpit import Cockpit
from perftriage.services.hosts.registry import HostRegistry
from perftriage.services.sources.fleet import FleetSource
from perftriage.transport.prometheus import PrometheusClient, PrometheusError

assert len(FLEET_OUTLIERS) == 2


def _invoke(*args):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_fleet_json_counts_medians_and_ranked_outliers(prometheus_fleet):
    r = _invoke("fleet", "--prometheus", prometheus_fleet.url, "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert list(out) == ["hosts", "gpus", "medians", "outliers"]
    assert (out["hosts"], out["gpus"]) == (16, 128)
    assert set(out["medians"]) == {
        "DCGM_FI_PROF_DRAM_ACTIVE", "DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
        "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_POWER_USAGE",
        "sglang:gen_throughput", "sglang:num_running_reqs", "sglang:num_queue_reqs",
        "sglang:token_usage"}  # the counter and the histogram are not per-instant values
    assert out["medians"]["DCGM_FI_PROF_DRAM_ACTIVE"] == pytest.approx(0.56, abs=0.01)
    # gen_throughput 300 vs ~1450 is further (in MADs) than DRAM 0.31 vs 0.56
    assert out["outliers"] == [
        {"host": "node007", "gpu": None, "metric": "sglang:gen_throughput", "value": 300.0,
         "fleet_median": out["medians"]["sglang:gen_throughput"]},
        {"host": "node003", "gpu": 3, "metric": "DCGM_FI_PROF_DRAM_ACTIVE", "value": 0.31,
         "fleet_median": out["medians"]["DCGM_FI_PROF_DRAM_ACTIVE"]},
    ]


def test_fleet_text_ranks_with_the_numbers_and_folds_hosts(prometheus_fleet):
    r = _invoke("fleet", "--prometheus", prometheus_fleet.url.removeprefix("http://"))
    assert r.exit_code == 0, r.output
    assert r.output.startswith("16 hosts, 128 GPUs\n")
    assert "node003 GPU3 DRAM active 0.31 vs fleet median 0.56" in r.output
    assert "hosts with outliers: node[003,007]" in r.output


def test_fleet_reads_the_configured_prometheus(prometheus_fleet, tmp_path):
    cfg = tmp_path / "config.toml"
    cfg.write_text(f'[fleet]\nprometheus = "{prometheus_fleet.url}"\nthreshold = 1000\n')
    out = json.loads(_invoke("--config", str(cfg), "fleet", "--json").output)
    assert out["hosts"] == 16 and out["outliers"] == []  # nothing is 1000 MADs away


def test_unreachable_prometheus_exits_3_with_one_line():
    r = CliRunner().invoke(cli, ["fleet", "--prometheus", f"http://127.0.0.1:{free_port()}"])
    assert r.exit_code == EXIT_UNREACHABLE
    assert r.output.count("\n") == 1 and "Traceback" not in r.output


def test_no_prometheus_is_a_usage_error():
    r = CliRunner().invoke(cli, ["fleet"])
    assert r.exit_code == 2 and "--prometheus URL" in r.output


async def test_a_bad_query_is_an_api_error(prometheus_fleet):
    async with PrometheusClient(prometheus_fleet.url) as client:
        with pytest.raises(PrometheusError) as info:
            await client.query("sum(")
    assert info.value.kind == "api" and "bad_data" in info.value.reason


async def test_history_of_one_gpu_and_the_fleet_median(prometheus_fleet):
    async with PrometheusClient(prometheus_fleet.url) as client:
        one, median = await client.history("DCGM_FI_PROF_DRAM_ACTIVE", "node003", 3,
                                           seconds=30, step=1)
        engine, _ = await client.history("sglang:gen_throughput", "node007", None,
                                         seconds=30, step=1)
    assert one and all(v == pytest.approx(0.31) for _, v in one)
    assert median and all(v == pytest.approx(0.56, abs=0.01) for _, v in median)
    assert engine and engine[-1][1] == pytest.approx(300.0)


async def test_fleet_source_feeds_the_session(prometheus_fleet):
    cockpit = Cockpit(registry=HostRegistry())
    seen = []
    src = FleetSource(cockpit.session, prometheus_fleet.url, interval=0.2,
                      on_update=lambda snap, summary: seen.append(summary))
    cockpit.add_source(src)
    try:
        await wait_for(lambda: cockpit.session.state.fleet is not None, timeout=20)
        fleet = cockpit.session.state.fleet
        assert isinstance(fleet, ev.FleetUpdated) and src.state == "up"
        assert (fleet.hosts, fleet.gpus, fleet.outlier_count) == (16, 128, 2)
        assert [(o.host, o.gpu) for o in fleet.outliers] == [("node007", None), ("node003", 3)]
        assert src.snapshot is not None and len(src.snapshot.samples) == 16 * 8 * 6 + 16 * 4
        assert seen and seen[0].gpus == 128
    finally:
        await cockpit.stop()


async def test_fleet_source_says_why_it_is_not_live():
    cockpit = Cockpit(registry=HostRegistry())
    src = cockpit.add_source(FleetSource(cockpit.session, f"127.0.0.1:{free_port()}",
                                         interval=0.1))
    try:
        await wait_for(lambda: src.state == "retrying", timeout=10)
        assert "127.0.0.1" in src.reason and cockpit.session.state.fleet is None
    finally:
        await cockpit.stop()
    assert src.state == "stopped"


def test_api_kind_exit_status_is_1(prometheus_fleet, monkeypatch):
    from perftriage.core.fleet import promql

    monkeypatch.setattr(promql, "ENGINE_QUERY", "sum(")  # Prometheus itself rejects it
    r = CliRunner().invoke(cli, ["fleet", "--prometheus", prometheus_fleet.url])
    assert r.exit_code == EXIT_FAILED and "bad_data" in r.output


async def test_the_cockpit_reads_the_configured_fleet(prometheus_fleet):
    from perftriage.core.store.config import Config, FleetConfig

    config = Config(fleet=FleetConfig(prometheus=prometheus_fleet.url, interval=0.5))
    cockpit = Cockpit(config, registry=HostRegistry())
    await cockpit.start()
    try:
        await wait_for(lambda: cockpit.session.state.fleet is not None, timeout=20)
        assert cockpit.sources.get("fleet").state == "up"
        assert cockpit.session.state.fleet.source == prometheus_fleet.url
    finally:
        await cockpit.stop()


def test_a_bad_prometheus_url_stops_the_cockpit_before_it_starts(tmp_path):
    r = CliRunner().invoke(cli, ["--prometheus", "ftp://x", "--sessions-dir", str(tmp_path)])
    assert r.exit_code == 2 and "not an http(s) URL" in r.output


def test_the_transcript_records_a_read_when_what_it_says_changes():
    from tests.support.fleet_exporters import emulated_snapshot, parse_outliers
    from perftriage.services.investigation.session import Session

    session = Session(name="fleet")
    src = FleetSource(session, "http://127.0.0.1:9")
    calm = emulated_snapshot(8, 8, {})
    odd = emulated_snapshot(8, 8, parse_outliers(["node002:5:DCGM_FI_DEV_GPU_UTIL=3"]))
    for snap in (calm, calm, calm, odd, odd, calm):
        src.accept(snap)
    assert session.state.versions["fleet"] == 3  # calm, odd, calm again
    assert session.state.fleet.outlier_count == 0 and src.summary.hosts == 8


async def test_a_read_is_exactly_what_the_exporters_hold(prometheus_fleet):
    # every GPU's value of every dcgm field and every engine gauge, read through
    # Prometheus (labels decoded into structs, host names remembered), equals
    # the emulated pages' own values: same samples, same medians, MADs, outliers
    from tests.support.fleet_exporters import emulated_snapshot, parse_outliers

    async with PrometheusClient(prometheus_fleet.url) as client:
        snapshot = await client.read_fleet()
    expected = emulated_snapshot(16, 8, parse_outliers(FLEET_OUTLIERS))
    def key(s):
        return (s.metric, s.host, -1 if s.gpu is None else s.gpu)
    assert sorted(snapshot.samples, key=key) == sorted(expected.samples, key=key)
    got, want = snapshot.summarize(), expected.summarize()
    assert got.record() == want.record() and got.stats == want.stats
    assert len(got.outliers) == 2
