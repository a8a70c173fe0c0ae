"""`perftriage metrics`: the public record shape."""

from __future__ import annotations

import csv
import io
import json

from click.testing import CliRunner

from tests.support.helpers import FIXTURES
from perftriage.cli import cli

SG = str(FIXTURES / "logs" / "sglang-0.5.23-tp8.log")
VL = str(FIXTURES / "logs" / "vllm-0.33.0.log")
KEYS = ["source", "line", "ts", "engine", "kind", "gen_tps", "input_tps", "running", "queued",
        "token_usage", "spec_accept_len", "cache_hit_rate", "preemptions", "engine_index",
        "engine_read_gbs", "new_tokens", "cached_tokens"]


def test_json_lines_exact_fields() -> None:
    res = CliRunner().invoke(cli, ["metrics", SG, VL, "--json"])
    assert res.exit_code == 0, res.output
    recs = [json.loads(line) for line in res.output.splitlines()]
    assert len(recs) == 8 + 3
    assert all(list(r) == KEYS for r in recs)
    assert recs[2] == {"source": SG, "line": 19, "ts": "2026-11-28 09:16:06", "engine": "sglang",
                       "kind": "decode", "gen_tps": 10.31, "input_tps": None, "running": 1,
                       "queued": 0, "token_usage": 0.0, "spec_accept_len": None,
                       "cache_hit_rate": None, "preemptions": None, "engine_index": None,
                       "engine_read_gbs": None, "new_tokens": None, "cached_tokens": None}
    assert recs[8] == {"source": VL, "line": 7, "ts": "11-28 09:23:12", "engine": "vllm",
                       "kind": "stats", "gen_tps": 50.3, "input_tps": 1503.9, "running": 1,
                       "queued": 0, "token_usage": 0.001, "spec_accept_len": None,
                       "cache_hit_rate": 0.0, "preemptions": None, "engine_index": 0,
                       "engine_read_gbs": None, "new_tokens": None, "cached_tokens": None}
    assert [r["line"] for r in recs[:8]] == sorted(r["line"] for r in recs[:8])


def test_csv_and_table() -> None:
    res = CliRunner().invoke(cli, ["metrics", VL, "--csv"])
    assert res.exit_code == 0
    rows = list(csv.DictReader(io.StringIO(res.output)))
    assert list(rows[0]) == KEYS and len(rows) == 3 and rows[1]["gen_tps"] == "61.8"
    res = CliRunner().invoke(cli, ["metrics", SG])
    # per request at its batch (64 running): 1000 x 64 / 405.66, not 2.47 "@bs1" (issue 48.9)
    assert res.exit_code == 0 and "405.66" in res.output and "157.77 @bs64" in res.output
    res = CliRunner().invoke(cli, ["metrics", SG, "--json", "--csv"])
    assert res.exit_code == 2


def test_the_table_labels_per_request_time_at_the_batch(tmp_path) -> None:
    """1000 / gen_tps is one token of the whole batch: at 509 running requests
    and 7,950 tok/s each request waits 64 ms a token, never "0.13 ms/tok@bs1"
    (issue 48.9)."""
    log = tmp_path / "busy.log"
    log.write_text(
        "[2026-11-28 09:16:06 TP0] Decode batch, #running-req: 509, #token: 852, token usage: "
        "0.91, cuda graph: True, gen throughput (token/s): 7950.00, #queue-req: 3\n"
        "[2026-11-28 09:16:07 TP0] Decode batch, #running-req: 1, #token: 852, token usage: "
        "0.01, cuda graph: True, gen throughput (token/s): 10.00, #queue-req: 0\n")
    res = CliRunner().invoke(cli, ["metrics", str(log)])
    assert res.exit_code == 0, res.output
    assert "ms/tok per request" in res.output.splitlines()[0]
    busy, alone = res.output.splitlines()[1:3]
    assert busy.endswith("64.03 @bs509") and alone.endswith("100.00 @bs1")
    assert "bs1" not in busy and "0.13" not in busy
