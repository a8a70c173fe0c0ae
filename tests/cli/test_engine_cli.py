"""`perftriage engine`: JSON fields and exit codes (a public interface), against
a real HTTP server on 127.0.0.1, directly and through the loopback sshd."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from perftriage.cli import cli
from tests.support.helpers import FIXTURES
from tests.support.metrics_server import MetricsServer
from tests.support.sshd import free_port

PAGES = [(FIXTURES / "metrics" / f"sglang-0.5-{x}.prom").read_text() for x in "ab"]
FIELDS = ["engine", "running", "queued", "token_usage", "gen_tps", "prompt_tps", "ttft_s",
          "itl_s", "e2e_s", "cache_hit_rate", "spec_accept_length", "metrics_seen",
          "engine_read_gbs", "preemptions"]


def run(*args):
    return CliRunner().invoke(cli, ["engine", *args])


def test_json_over_the_window():
    with MetricsServer(pages=PAGES) as server:
        r = run("--url", server.url, "--seconds", "1", "--json")
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert list(data) == FIELDS
    assert data["engine"] == "sglang"
    assert (data["running"], data["queued"], data["token_usage"]) == (32, 5, 0.5)
    # first scrape (page a) vs last (page b): the hand-checked fixture quantiles
    assert data["itl_s"] == pytest.approx({"p50": 0.010, "p90": 0.015, "p99": 0.058})
    assert data["e2e_s"] == pytest.approx({"p50": 3.0, "p90": 3.8, "p99": 3.98})
    assert 5000 / 2.0 < data["gen_tps"] <= 5000 / 0.9  # 5000 tokens over ~1 s
    assert data["cache_hit_rate"] == pytest.approx(0.25)
    assert data["spec_accept_length"] == 3.1 and data["metrics_seen"] > 10


def test_one_scrape_has_gauges_and_nulls():
    with MetricsServer(PAGES[1]) as server:
        r = run("--url", server.url, "--seconds", "0", "--json")
    data = json.loads(r.output)
    assert r.exit_code == 0 and data["running"] == 32
    assert data["gen_tps"] is None and data["itl_s"] == {"p50": None, "p90": None, "p99": None}


def test_text_output():
    with MetricsServer(pages=PAGES) as server:
        r = run("--url", server.url, "--seconds", "1")
    assert r.exit_code == 0, r.output
    assert "sglang at" in r.output and "ITL   p50/p90/p99 10.0 / 15.0 / 58.0 ms" in r.output


@pytest.mark.parametrize("url", ["not a url", "https://127.0.0.1:1/metrics", "http:///metrics"])
def test_malformed_url_exits_2(url):
    r = run("--url", url)
    assert r.exit_code == 2 and "invalid URL" in r.output


def test_unreachable_endpoint_exits_3():
    r = run("--url", f"http://127.0.0.1:{free_port()}/metrics", "--seconds", "0")
    assert r.exit_code == 3 and "refused" in r.output
    assert r.output.count("\n") == 1  # one line, no traceback


def test_a_page_that_is_not_metrics_exits_1():
    with MetricsServer("nope", status=404) as server:
        r = run("--url", server.url, "--seconds", "0")
    assert r.exit_code == 1 and "HTTP 404" in r.output


@pytest.mark.ssh
def test_through_the_ssh_forward(sshd):
    with MetricsServer(pages=PAGES) as server:
        r = CliRunner().invoke(cli, ["--ssh-config", str(sshd.ssh_config), "engine",
                                     "--host", sshd.alias, "--url", server.url,
                                     "--seconds", "1", "--json"])
        assert server.connections == 1
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["itl_s"]["p99"] == pytest.approx(0.058)


@pytest.mark.ssh
def test_unreachable_host_exits_3(sshd, tmp_path):
    r = CliRunner().invoke(cli, ["--ssh-config", str(sshd.ssh_config), "engine", "--host",
                                 f"{sshd.user}@127.0.0.1:{free_port()}", "--url",
                                 "http://127.0.0.1:30000/metrics"])
    assert r.exit_code == 3 and "refused" in r.output
