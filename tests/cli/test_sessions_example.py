"""`perftriage sessions` mentions the bundled example, which replays by name."""

from __future__ import annotations

from click.testing import CliRunner

from perftriage.cli import cli


def test_sessions_mentions_the_bundled_example(tmp_path):
    r = CliRunner().invoke(cli, ["--sessions-dir", str(tmp_path), "sessions"])
    assert r.exit_code == 0
    assert f"no sessions in {tmp_path}" in r.output
    assert "bundled example: perftriage replay example-moe-gap" in r.output
    r = CliRunner().invoke(cli, ["--sessions-dir", str(tmp_path), "replay", "example-moe-gap",
                                 "--json"])
    assert r.exit_code == 0 and '"hypotheses"' in r.output
