"""One bad ``session.summary`` line (a duration of "abc", null, 1e400, NaN,
a negative or boolean count) makes that one file unreadable, with the
reason; every other file in the directory is still listed."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from perftriage.cli import cli

HEADER = '{"format":"perftriage-session","version":1,"started_at":"2026-11-28T09:00:00","hosts":["a"]}\n'
EVENT = '{"type":"note","text":"x","t":1.0}\n'
GOOD = '{"type":"session.summary","events":1,"duration_s":1.0,"ended":true,"counts":{"note":1}}\n'
BAD = {
    "duration-abc": '{"type":"session.summary","events":1,"duration_s":"abc","ended":true}\n',
    "duration-null": '{"type":"session.summary","events":1,"duration_s":null,"ended":true}\n',
    "duration-huge": '{"type":"session.summary","events":1,"duration_s":1e400,"ended":true}\n',
    "duration-nan": '{"type":"session.summary","events":1,"duration_s":NaN,"ended":true}\n',
    "events-negative": '{"type":"session.summary","events":-3,"duration_s":1.0,"ended":true}\n',
    "events-bool": '{"type":"session.summary","events":true,"duration_s":1.0,"ended":true}\n',
    "events-text": '{"type":"session.summary","events":"many","duration_s":1.0,"ended":true}\n',
    "counts-list": '{"type":"session.summary","events":1,"duration_s":1.0,"counts":[1]}\n',
    "ended-text": '{"type":"session.summary","events":1,"duration_s":1.0,"ended":"yes"}\n',
    "not-an-object": '{"type":"session.summary"}[1]\n',
}


@pytest.mark.parametrize("name", list(BAD))
def test_a_bad_summary_is_one_unreadable_row(tmp_path, name):
    (tmp_path / "2026-11-28-good.jsonl").write_text(HEADER + EVENT + GOOD)
    (tmp_path / "2026-11-29-bad.jsonl").write_text(HEADER + EVENT + BAD[name])
    r = CliRunner().invoke(cli, ["--sessions-dir", str(tmp_path), "sessions"])
    assert r.exit_code == 0, r.output
    good = next(line for line in r.output.splitlines() if "good" in line)
    bad = next(line for line in r.output.splitlines() if "bad" in line)
    assert " 0:01 " in good, good  # the one clock (core/clock.py)
    assert "unreadable: " in bad and "session.summary" in bad, bad
    r = CliRunner().invoke(cli, ["--sessions-dir", str(tmp_path), "sessions", "--json"])
    assert r.exit_code == 0, r.output
    rows = json.loads(r.output, parse_constant=lambda c: pytest.fail(f"{c} in JSON"))
    errors = {row["path"].rsplit("/", 1)[-1]: row["error"] for row in rows}
    assert errors["2026-11-28-good.jsonl"] is None and errors["2026-11-29-bad.jsonl"]
