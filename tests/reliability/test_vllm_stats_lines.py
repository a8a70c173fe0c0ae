"""vLLM stats lines of every engine generation give a metric record:
the V0 engine's (older releases, no ``[`` before the file name) and the
data-parallel aggregated line (its prompt throughput was lost)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from perftriage.cli import cli
from perftriage.core.parse.logparse import Metric, parse_line
from tests.support.helpers import FIXTURES

LOGS = FIXTURES / "logs"


def metrics_of(name: str) -> list[Metric]:
    lines = (LOGS / name).read_text().splitlines()
    return [m for m in map(parse_line, lines) if isinstance(m, Metric)]


def test_v0_engine_stats_lines_are_metrics():
    got = metrics_of("vllm-v0-0.6.log")
    assert [(m.engine, m.kind, m.gen_tps, m.input_tps, m.running, m.queued, m.token_usage)
            for m in got] == [
        ("vllm", "stats", 48.7, 512.3, 2, 1, 0.034),
        ("vllm", "stats", 97.1, 0.0, 2, 0, 0.041),
        ("vllm", "stats", 0.0, 0.0, 0, 0, 0.0),
    ]
    assert got[0].ts == "08-15 10:30:12"


def test_aggregated_multi_engine_line_keeps_its_prompt_throughput():
    got = metrics_of("vllm-dp-aggregated.log")
    assert [(m.gen_tps, m.input_tps, m.running, m.queued) for m in got] == [
        (50.3, 1503.9, 1, 0), (61.8, 0.0, 2, 1)]


def test_the_v1_fixture_still_parses_the_same():
    got = metrics_of("vllm-0.33.0.log")
    assert got and all(m.input_tps is not None and m.gen_tps is not None for m in got)


def test_metrics_command_on_a_v0_log():
    r = CliRunner().invoke(cli, ["metrics", "--json", str(LOGS / "vllm-v0-0.6.log")])
    assert r.exit_code == 0, r.output
    records = [json.loads(line) for line in r.output.splitlines()]
    assert [rec["gen_tps"] for rec in records] == [48.7, 97.1, 0.0]
    assert records[0]["input_tps"] == 512.3
