"""`perftriage compare A B [--json] [--min-effect PCT]` end to end: the
documented JSON shape, runs of a named investigation, time ranges of a
transcript path, and bad input (exit 2 naming the slice and what it lacks,
a range outside the session giving its length)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from perftriage.cli import cli
from perftriage.core.store import investigations
from tests.support.compare_recordings import H200_RUN, two_runs

RUN = str(H200_RUN)


def run(*args: str, sessions: Path | None = None):
    base = ["--sessions-dir", str(sessions)] if sessions else []
    return CliRunner().invoke(cli, [*base, "compare", *args])


def test_json_shape_is_the_documented_one(tmp_path):
    r = run(f"{RUN}@5-33", f"{RUN}@36-78", "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert list(out) == ["a", "b", "comparable", "warnings", "summary", "metrics", "profile",
                         "changes"]
    assert list(out["a"]) == ["label", "from", "to", "hosts"]
    assert (out["a"]["from"], out["a"]["to"], out["b"]["from"]) == (5.0, 33.0, 36.0)
    m = out["metrics"][0]
    assert list(m)[:10] == ["name", "unit", "better", "a", "b", "ratio", "change_pct",
                            "p_value", "verdict", "metric"]
    assert list(m["a"]) == ["median", "p10", "p90", "n"]
    assert m["better"] in ("higher", "lower")
    assert out["profile"] is None
    assert list(out["changes"])[:3] == ["args", "versions", "hypotheses"]


def test_runs_of_an_investigation_by_name(tmp_path):
    two_runs(investigations.path_for("moe-restart", tmp_path))
    r = run("moe-restart#1", "moe-restart#2", "--json", sessions=tmp_path)
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert list(out["profile"])[:5] == ["a", "b", "per", "step_ms", "kernel_ms"]
    assert list(out["profile"]["step_ms"]) == ["a", "b", "ratio", "verdict"]
    assert out["changes"]["args"][0]["a"] == "triton"
    text = run("moe-restart#1", "moe-restart#2", sessions=tmp_path)
    assert text.exit_code == 0, text.output
    assert text.output.splitlines()[3].startswith("B is 8.0× faster than A in decode throughput")
    assert "Profile: prof1 → prof2, per step" in text.output
    assert "server arguments: --moe-runner-backend triton → flashinfer_cutedsl" in text.output


def test_min_effect_moves_the_gate():
    # the power of the two phases differs by ~16 %: changed at 5 % (power is what the GPUs
    # ran under, neither better nor worse), no change at 20 %
    def power(*extra):
        r = run(f"{RUN}@5-33", f"{RUN}@36-78", "--json", *extra)
        return next(m for m in json.loads(r.output)["metrics"] if m["metric"] == "power_w")
    assert power()["verdict"] == "changed"
    assert power("--min-effect", "20")["verdict"] == "no change"


@pytest.mark.parametrize("a, b, says", [
    (f"{RUN}@0-1", f"{RUN}@36-78", "A (" ),
    (f"{RUN}@36-78", f"{RUN}@0-1", "B ("),
    (f"{RUN}@90-", f"{RUN}@36-78", "1:20 (80.6 s) long"),
    (f"{RUN}@5-2:00", f"{RUN}@36-78", "long"),
    (f"{RUN}@x-", f"{RUN}@36-78", "FROM"),
    (f"{RUN}#2", f"{RUN}@36-78", "run 1 only"),
    ("no-such-session", f"{RUN}@36-78", "no session 'no-such-session'"),
])
def test_bad_input_exits_2_naming_it(a, b, says):
    r = run(a, b)
    assert r.exit_code == 2, r.output
    assert says in r.output
    assert "Traceback" not in r.output


def test_a_slice_without_readings_says_what_it_lacks():
    r = run(f"{RUN}@0-1", f"{RUN}@36-78")
    assert r.exit_code == 2
    assert "no readings in 0:00–0:01" in r.output and "decode log lines" in r.output


def test_hostile_names_and_commands_reach_the_terminal_as_text(tmp_path):
    """A host named with an escape sequence and a server command holding one
    (remote text is hostile): shown, never obeyed, in the text and the JSON."""
    from perftriage.core.model import events as ev
    from tests.support.compare_recordings import real_events

    evil = "\x1b[2J\x1b]0;pwned\x07gpu"
    import msgspec

    events = [msgspec.structs.replace(e, host=evil) if getattr(e, "host", None) == "localhost"
              else e for e in real_events()]
    events.insert(0, ev.ServerEvent(server="s\x1b[31m", host=evil, state="starting",
                                    command="x --moe-runner-backend \x1b[5mtriton", t=0.0))
    events.append(ev.ServerEvent(server="s\x1b[31m", host=evil, state="starting",
                                 command="x --moe-runner-backend cutedsl\x1b]0;t\x07", t=34.0))
    path = tmp_path / "evil.jsonl"
    header = '{"format":"perftriage-session","version":1,"started_at":"","hosts":[]}'
    path.write_text(header + "\n" + "\n".join(
        ev.encode(e).decode() for e in sorted(events, key=lambda e: e.t)) + "\n")
    for extra in ((), ("--json",)):
        r = run(f"{path}@5-33", f"{path}@36-78", *extra)
        assert r.exit_code == 0, r.output
        assert "\x1b" not in r.output and "\x07" not in r.output
    assert "--moe-runner-backend" in r.output


def test_load_readings_change_but_are_never_better_or_worse():
    # the fast phase serves its requests sooner: fewer running is not a regression
    r = run(f"{RUN}@5-33", f"{RUN}@36-78", "--json")
    rows = json.loads(r.output)["metrics"]
    load = [m for m in rows if m["metric"] in ("running", "engine_running", "power_w")]
    assert load and all(m["verdict"] in ("changed", "no change", "not enough data")
                        for m in load), [(m["metric"], m["verdict"]) for m in load]


def test_profile_noise_and_rank_counts_in_the_terminal(tmp_path):
    # run 1's capture is the real eager trace of both ranks (TP 2), run 2's one rank
    two_runs(investigations.path_for("tp", tmp_path), "tp", eager_ranks=2)
    r = run("tp#1", "tp#2", sessions=tmp_path)
    assert r.exit_code == 0, r.output
    rows = r.output.splitlines()
    assert rows[0].startswith("A  tp#1 (0:00–0:34)  (localhost")  # the range once
    copy = next(line for line in rows if line.startswith("memcpy/memset per step"))
    assert copy.endswith("= no change") and "1.48×" in copy  # 2 % of the step is the floor
    attention = next(line for line in rows if line.startswith("attention per step"))
    assert "0.0255 ms" in attention and "0.0244 ms" in attention and "0.96×" in attention
    at = rows.index("Not comparable:")
    assert "  - profiles of different rank counts (prof1 2, prof2 1): the work per rank differs" \
        in rows[at:]
