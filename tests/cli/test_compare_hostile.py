"""`perftriage compare` on hostile input (issue 42, items 6, 9, 14, 15): a
number in a slice, a reading or a time that arithmetic cannot hold, a name
of 10,000 characters. Each ends in exit 2 with one bounded line naming the
value, or in the value skipped with a count of what was skipped: never a
traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from perftriage.cli import cli

HEADER = '{"format":"perftriage-session","version":1,"started_at":"","hosts":["h"]}'


def gap(t: float, value: float | str) -> str:
    return ('{"type":"gap.sample","host":"h","gap":%s,"dram_bw_gbs":%s,"t":%s}'
            % (value, value, t))


def host_sample(t: str, power: str = "100.0") -> str:
    return ('{"type":"host.sample","host":"h","cpu_pct":1.0,"gpus":[{"index":0,"name":"G",'
            '"power_w":%s}],"t":%s}' % (power, t))


def log_lines(t: str) -> str:
    return '{"type":"log.lines","source_id":"s","lines":["x"],"t":%s}' % t


def transcript(tmp_path: Path, lines: list[str], name: str = "t.jsonl") -> Path:
    path = tmp_path / name
    path.write_text(HEADER + "\n" + "\n".join(lines) + "\n")
    return path


def at(line: str) -> float:
    """A line's t (its last key)."""
    return float(line.rsplit(":", 1)[1][:-1])


def steady(n: int = 100) -> list[str]:
    """One gap reading a second for ``n`` s, 2.0 ± 1."""
    return [gap(i, 1.0 + i % 3) for i in range(n)]


def run(*args: str):
    return CliRunner().invoke(cli, ["compare", *args])


def one_line_failure(r, says: str, limit: int = 400) -> str:
    assert r.exit_code == 2, r.output
    assert "Traceback" not in r.output and isinstance(r.exception, SystemExit)
    lines = r.output.strip().splitlines()
    assert len(lines) == 1, lines
    assert says in lines[0], lines[0]
    assert len(lines[0]) <= limit, len(lines[0])
    return lines[0]


# --- item 6: numbers that arithmetic cannot hold -----------------------------------


def test_a_run_number_of_5000_digits_is_exit_2(tmp_path):
    path = transcript(tmp_path, steady())
    for which in ("A", "B"):
        slices = [f"{path}#{'9' * 5000}", str(path)]
        if which == "B":
            slices.reverse()
        line = one_line_failure(run(*slices), f"{which}: ")
        assert "run number" in line


def test_readings_of_1_7e308_are_skipped_and_counted(tmp_path):
    # fsum overflowed on these (the phase search), and a median of two made inf
    huge = [gap(i + 0.5, "1.7e308") for i in range(0, 100, 7)]
    path = transcript(tmp_path, sorted(steady() + huge, key=at))
    for extra in ((), ("--json",)):
        r = run(f"{path}@0-40", f"{path}@50-90", *extra)
        assert r.exit_code == 0, r.output
        assert "Traceback" not in r.output
        assert "readings skipped" in r.output and "1e+12" in r.output
    out = json.loads(r.stdout)
    row = next(m for m in out["metrics"] if m["metric"] == "gap")
    assert row["a"]["median"] == 2.0 and row["b"]["median"] == 2.0


def test_only_huge_readings_leave_no_readings_exit_2(tmp_path):
    path = transcript(tmp_path, [gap(i, "1.7e308" if i % 2 else "1e308") for i in range(100)])
    r = run(f"{path}@0-40", f"{path}@50-90")
    assert r.exit_code == 2, r.output
    assert "Traceback" not in r.output
    assert "no readings" in r.output


@pytest.mark.parametrize("where", ["host.sample", "log.lines"])
@pytest.mark.parametrize("t", ["1e999", "1e300", "-1e999"])
def test_a_time_beyond_any_clock_outside_the_slices_is_a_bad_line(tmp_path, where, t):
    # read for its time only (outside both slices): the duration became infinite
    bad = host_sample(t) if where == "host.sample" else log_lines(t)
    path = transcript(tmp_path, [*steady(), bad])
    for slices in ((f"{path}@0-40", f"{path}@50-90"), (f"{path}@0-40", f"{path}@50-")):
        r = run(*slices)
        assert r.exit_code == 0, r.output
        assert "line 102" in r.output
        assert "0:50–1:39" in r.output or "0:50–1:30" in r.output
        assert max(len(line) for line in r.output.splitlines()) < 300


@pytest.mark.parametrize("t", ["1e999", "1e300"])
def test_a_time_beyond_any_clock_inside_a_slice_is_a_bad_line(tmp_path, t):
    path = transcript(tmp_path, [*steady(), host_sample(t)])
    r = run(str(path), f"{path}@50-")
    assert r.exit_code == 0, r.output
    assert "line 102" in r.output
    assert max(len(line) for line in r.output.splitlines()) < 300


def test_power_of_1e308_is_skipped(tmp_path):
    lines = [*steady(), *(host_sample(str(i + 0.5), "1.7e308" if i % 10 == 0 else "100.0")
                          for i in range(100))]
    path = transcript(tmp_path, sorted(lines, key=at))
    r = run(f"{path}@0-40", f"{path}@50-90", "--json")
    assert r.exit_code == 0, r.output
    power = next(m for m in json.loads(r.stdout)["metrics"] if m["metric"] == "power_w")
    assert power["a"]["median"] == 100.0
    assert "power" in r.stderr and "readings skipped" in r.stderr


# --- item 14: --min-effect -----------------------------------------------------------


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "NaN"])
def test_min_effect_not_finite_is_exit_2(tmp_path, value):
    path = transcript(tmp_path, steady())
    r = run(f"{path}@0-40", f"{path}@50-90", "--min-effect", value)
    assert r.exit_code == 2, r.output
    assert "--min-effect" in r.output
    assert "Traceback" not in r.output


# --- item 15: names and clocks bounded and shown ----------------------------------------


@pytest.mark.parametrize("slices", [
    ("x" * 10_000, "{path}"),
    ("{path}", "y" * 10_000 + "#3"),
    ("{path}#" + "7" * 3000, "{path}"),
    ("{path}@" + "9" * 5000 + "-", "{path}"),
    ("{path}@5-" + "9" * 400, "{path}"),
    ("\x1b[2J\x9b\u202e" + "z" * 10_000 + "@1-2", "{path}"),
    ("{path}@1-x\x1b]0;t\x07" + "w" * 10_000, "{path}"),
])
def test_a_long_or_hostile_name_is_echoed_bounded_and_visible(tmp_path, slices):
    path = transcript(tmp_path, steady())
    r = run(*(s.replace("{path}", str(path)) for s in slices))
    line = one_line_failure(r, ": ")
    assert "\x1b" not in line and "\x9b" not in line and "\u202e" not in line
    assert "\x07" not in line
    assert "…" in line


def test_a_time_range_beyond_the_clock_is_exit_2(tmp_path):
    path = transcript(tmp_path, steady())
    line = one_line_failure(run(f"{path}@{'9' * 300}-", str(path)), "A: ")
    assert "not a time" in line or "outside the session" in line
