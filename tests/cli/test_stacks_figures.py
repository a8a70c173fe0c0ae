"""Numbers and names that read right (issue 51 item 5, the stacks parts), on
the demo's real straggler (its stall burns in a helper, ``_burn``, called by
``simulated_late_rank_stall``) sampled by a real py-spy:

- ``--json``: each frame's ``wall_pct`` (share of wall time) beside its
  ``self_pct`` (share of the busy samples), the top frame too;
- the summary line's figures are the frame table's, one figure each;
- a helper leaf is named with its chain, ``_burn ← simulated_late_rank_stall``,
  by the probe and by the triage's host-stall; a public leaf alone."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import uuid

import pytest
from click.testing import CliRunner

from perftriage.cli import cli
from perftriage.core.probe_kinds.stacks_kind import own_pyspy
from perftriage.core.stacks.summary import (
    ProcessStacks,
    StackRow,
    chain,
    from_detail,
    is_helper,
)
from perftriage.core.triage.host_side import host_work

pytestmark = pytest.mark.skipif(own_pyspy() is None, reason="py-spy is not installed")


@pytest.fixture(scope="module")
def straggler():
    seed = str(uuid.uuid4().int % 10**9)
    proc = subprocess.Popen([sys.executable, "-m", "perftriage.simulator.sglang_sim", "--rate",
                             "20", "--startup-s", "0", "--seed", seed, "--scenario",
                             "straggler", "--tp", "8"], stdout=subprocess.DEVNULL)
    yield proc.pid
    proc.kill()
    proc.wait()


def _probe(tmp_path, *args: str) -> tuple[int, str]:
    conf = tmp_path / "config.toml"
    conf.write_text(f'[[hosts]]\nname = "localhost"\npython = "{sys.executable}"\n')
    r = CliRunner().invoke(cli, ["--config", str(conf), "probe", *args])
    return r.exit_code, r.output


def test_json_has_wall_beside_busy_and_the_summary_says_the_tables_figures(tmp_path,
                                                                          straggler):
    code, out = _probe(tmp_path, "--json", "stacks", "--pid", str(straggler), "--seconds", "2")
    assert code == 0, out
    doc = json.loads(out)
    (proc,) = doc["processes"]
    busy = 1 - proc["idle_pct"] / 100
    for f in proc["frames"]:
        assert list(f)[3:6] == ["self_pct", "total_pct", "wall_pct"]
        assert f["wall_pct"] == round(f["self_pct"] * busy, 2)
    top, first = doc["top"], proc["frames"][0]
    assert (top["name"], top["self_pct"], top["wall_pct"]) == (first["name"], first["self_pct"],
                                                              first["wall_pct"])
    assert top["name"] == "_burn" and top["chain"] == ["_burn", "simulated_late_rank_stall"]
    # the triage's host-stall names the same chain, with the table's busy figure
    work = host_work(from_detail(doc["detail"]))
    assert work is not None and work.stall_frame == "_burn ← simulated_late_rank_stall"
    assert round(work.stall_frame_busy_pct, 1) == round(first["self_pct"], 1)

    code, out = _probe(tmp_path, "stacks", "--pid", str(straggler), "--seconds", "2")
    assert code == 0, out
    head, *rest = out.splitlines()
    m = re.search(r"  (\S+ ← \S+) \(perftriage/simulator/sglang_sim\.py:\d+\) ([\d.]+) % of "
                  r"wall time, ([\d.]+) % of pid \d+'s \d+ busy samples", head)
    assert m is not None and m.group(1) == "_burn ← simulated_late_rank_stall", head
    table = next(r for r in rest if r.rstrip().endswith(")") and "_burn (" in r)
    assert float(table.split()[0]) == float(m.group(3))  # one figure: the table's self %


def test_dump_has_no_wall_share(tmp_path, straggler):
    code, out = _probe(tmp_path, "--json", "stacks", "--pid", str(straggler), "--dump")
    assert code == 0, out
    frames = json.loads(out)["processes"][0]["frames"]
    assert frames and all(f["wall_pct"] is None for f in frames)


def _proc(*stacks: list[str]) -> ProcessStacks:
    return ProcessStacks(pid=1, name="p", samples=10, idle_pct=0.0, gil_pct=None, threads=[],
                         frames=[], stacks=[StackRow(5, 50.0, list(s)) for s in stacks])


def test_the_chain_climbs_helpers_to_the_frame_to_act_on():
    assert is_helper("_burn") and is_helper("Sched._step") and is_helper("<lambda>")
    assert not is_helper("simulated_host_stall") and not is_helper("__call__")
    assert not is_helper("<module>")
    p = _proc(["main (m.py:1)", "run (m.py:5)", "_loop (m.py:9)", "<lambda> (m.py:12)",
               "_burn (m.py:20)"])
    assert chain(p, "_burn", "m.py") == ["_burn", "<lambda>", "_loop", "run"]
    assert chain(p, "run", "m.py") == []  # a public leaf says it itself
    deep = _proc(["main (m.py:1)", *[f"_h{i} (m.py:{i})" for i in range(9)]])
    assert len(chain(deep, "_h8", "m.py")) == 4  # CHAIN_LINKS at most
