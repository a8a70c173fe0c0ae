"""The demo's kernel-below-roofline lead: its ncu step has a profile_command
to run (a short simulated bench, never a second copy of the server), so
Enter runs it; where the host has no ncu the Triage view says "ncu not
found" and what to do, not that there is nothing to run."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from perftriage.cli.commands.demo import DEMO_SERVER
from perftriage.core.probe_kinds.ncu_kind import MISSING_FIX
from perftriage.core.model.findings import Finding, NextStep
from perftriage.core.triage.phase import Phase
from perftriage.services.triage import next_step
from perftriage.services.triage.live import HostTriage
from perftriage.ui.widgets.triage_text import step_status
from tests.support.demo import fast_demo


def test_the_demo_s_profile_command_is_a_short_simulated_bench(tmp_path):
    cockpit = fast_demo(tmp_path)
    got = next_step.profile_argv(cockpit.config, "localhost")
    assert not isinstance(got, str), got
    name, argv = got
    assert name == DEMO_SERVER and "perftriage.simulator.sglang_sim" in argv
    assert "--metrics-port" not in argv  # not the server's port: a bench beside it
    r = subprocess.run(argv, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("Decode batch") == 8  # a bounded run: it ends


async def test_the_demo_s_ncu_step_without_ncu_says_ncu_not_found(tmp_path, monkeypatch):
    bare = tmp_path / "bin"  # the shell and what the wrapper needs, but no ncu
    bare.mkdir()
    for tool in ("sh", "mktemp", "rm", "find", "id", "timeout", "true", "env"):
        if (where := shutil.which(tool)) is not None:
            os.symlink(where, bare / tool)
    if os.path.exists("/usr/local/cuda/bin/ncu"):
        pytest.skip("this host has /usr/local/cuda/bin/ncu, which the probe takes")
    monkeypatch.setenv("PATH", str(bare))
    cockpit = fast_demo(tmp_path)
    host = "localhost"
    lead = Finding("kernel-below-roofline", "busy, below its roofline", 40.0, host=host,
                   confirmed=False, next=NextStep("ncu", [], "which kernel, how far",
                                                  kernels=("fused_moe_kernel",)))
    assert cockpit.triage is not None
    cockpit.triage.current[host] = HostTriage(host, Phase(host, 0.0, 5.0, [lead], False))
    plan = next_step.plan(cockpit, host, lead.public())
    assert plan is not None and plan.problem is None, plan  # not refused: it runs
    assert "sglang-sim's profile_command" in plan.text
    out = next_step.run(cockpit, plan)
    assert out.started and out.probe_id is not None
    await cockpit.probes.wait(out.probe_id)
    state = cockpit.session.state
    done = state.probes[out.probe_id]
    assert done.status == "failed" and done.summary == MISSING_FIX
    said = step_status(state, host, "ncu", 0.0)
    assert said is not None
    assert f"ncu {out.probe_id} failed: ncu not found" in said.plain
    assert "what to do: install Nsight Compute" in said.plain
    cockpit.session.close()
