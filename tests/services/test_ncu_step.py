"""The triage's ncu step, bounded and safe (issue 49 item 2), run for real:
the Triage view's step, from a finding this cockpit's live triage derived,
through the real probe runner, on localhost and over the loopback sshd, with
the FAKE ``ncu`` on PATH (tests/support/fake_ncu/ncu: a real script that
records its argv and runs the program as ncu does).

Also the command template's pieces it needs: an empty placeholder is no
argument (issue 49 item 7, for the launcher too), ``VAR=value`` prefixes,
shell-only syntax refused, and ``profile_command`` in the config."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from perftriage.core.store.config import Config, ConfigError, ServerProfile, parse
from perftriage.core.model.findings import Finding, NextStep
from perftriage.core.triage.phase import Phase
from perftriage.services.cockpit import Cockpit
from perftriage.services.hosts.registry import HostRegistry
from perftriage.services.logs.command_template import command_argv
from perftriage.services.logs.server_launcher import LaunchError, build_command, render
from perftriage.services.triage import next_step
from perftriage.services.triage.live import HostTriage
from tests.services.test_ncu_probe import FAKE_NCU_DIR
from tests.support.probe_support import (  # noqa: F401 - fixture
    TRANSPORTS,
    close_probe_hosts,
    fake_nvidia_smi_dir,
    make_host,
)

# the program ncu profiles: prints its PYTHONPATH and its arguments
SHOW = "import os, sys; print(os.environ.get('PYTHONPATH'), sys.argv[1:])"


@pytest.fixture(params=TRANSPORTS)
def transport(request):
    return request.param


def ncu_cockpit(transport, request, tmp_path) -> tuple[Cockpit, str, Path]:
    log = tmp_path / "ncu-argv.jsonl"
    path = f"{FAKE_NCU_DIR}:{fake_nvidia_smi_dir(tmp_path)}"
    host = make_host(transport, request, preamble=(
        f"export PATH={path}:/usr/bin:/bin FAKE_NCU_LOG={log} TMPDIR={tmp_path}"))
    reg = HostRegistry()
    reg.add(host)
    config = Config(servers=[ServerProfile(
        name="sglang", host=host.name, command="{python} -m sglang.launch_server {flags}",
        profile_command="PYTHONPATH={src} {python} -c {show} {flags} --batch-size 8",
        args={"python": sys.executable, "src": str(tmp_path / "src dir"), "show": SHOW,
              "flags": ""})])
    return Cockpit(config, registry=reg), host.name, log


async def test_the_ncu_step_is_bounded_and_never_runs_twice(transport, request,
                                                                        tmp_path):
    cockpit, host, log = ncu_cockpit(transport, request, tmp_path)
    # kernel-below-roofline's lead with ncu next, as this cockpit's live triage holds it
    # (how it derives one from a capture: test_next_step_live_only.py); the kernel names
    # as a trace spells them, three the fake ncu's capture has
    names = ("fused_moe_kernel", "nvjet_sm90_tst_128x8_64x12_4x1_v_bz_NNT",
             "void at::native::(anonymous namespace)::distribution_elementwise_grid_stride_kernel"
             "<float, 4, (lambda)>(int, at::PhiloxCudaState)")
    lead = Finding("kernel-below-roofline", "busy", 40.0, host=host, confirmed=False,
                   next=NextStep("ncu", ["--kernel", "x", "--", "sh"], "why", kernels=names))
    assert cockpit.triage is not None
    cockpit.triage.current[host] = HostTriage(host, Phase(host, 0.0, 5.0, [lead], False))
    p = next_step.plan(cockpit, host, lead.public())
    assert p is not None and p.problem is None, p
    out = next_step.run(cockpit, p)
    assert out.started and out.probe_id is not None
    # while it runs (queued or running) Enter says what and since when, and runs nothing
    again = next_step.plan(cockpit, host, lead.public())
    assert again is not None and again.problem is not None
    assert again.problem.startswith(f"ncu {out.probe_id} on {host}, ") and " since " in \
        again.problem
    assert not next_step.run(cockpit, p).started
    await cockpit.probes.wait(out.probe_id)
    done = cockpit.session.state.probes[out.probe_id]
    assert done.status == "ok", (done.summary, done.stderr)
    [start] = [json.loads(x) for x in log.read_text().splitlines()]
    argv = start["argv"]
    regex = "fused_moe_kernel|nvjet_sm90_tst_128x8_64x12_4x1_v_bz_NNT|" \
            "distribution_elementwise_grid_stride_kernel"  # re.escape of the base names
    k = argv.index("-k")
    assert argv[k + 1] == f"regex:{regex}"
    assert argv[argv.index("-c") + 1] == str(4 * len(names))  # the bound, always
    prog = argv[argv.index("node") + 1:]
    assert prog == ["env", f"PYTHONPATH={tmp_path / 'src dir'}", sys.executable, "-c", SHOW,
                    "--batch-size", "8"]
    # the program ran with its PYTHONPATH and no empty argument for {flags}
    assert done.stdout.strip() == f"{tmp_path / 'src dir'} ['--batch-size', '8']"
    assert sum(k["launches"] for k in done.detail["ncu"]["kernels"]) <= 4 * len(names)
    # done: Enter may run it again
    assert next_step.plan(cockpit, host, lead.public()).problem is None  # type: ignore[union-attr]


# --- the command template ----------------------------------------------------------


def test_an_empty_placeholder_is_no_argument_for_the_server_either():
    profile = ServerProfile(name="s", command="printf '<%s>\\n' a {flags} b {x}",
                            args={"flags": "", "x": "two words"})
    out = subprocess.run(["bash", "-c", build_command(profile)], capture_output=True,
                         text=True, check=True).stdout
    assert out.splitlines() == ["<a>", "<b>", "<two words>"]
    assert render("run {a}", {"a": ""}) == "run "


def test_the_server_command_takes_var_prefixes_as_the_shell_does(tmp_path):
    """The launcher hands the filled template to bash: ``VAR=value prog`` sets
    VAR for prog (and, in a workdir, after the cd)."""
    profile = ServerProfile(name="s", command="PYTHONPATH={src} {python} -c {show} {flags} x",
                            workdir=str(tmp_path),
                            args={"src": "/a b", "python": sys.executable, "show": SHOW,
                                  "flags": ""})
    out = subprocess.run(["bash", "-c", build_command(profile)], capture_output=True,
                         text=True, check=True).stdout
    assert out.strip() == "/a b ['x']"


def test_var_prefixes_workdir_and_shell_syntax():
    assert command_argv("A=1 B='x y' prog {v}", {"v": "a b"}) == \
        ["env", "A=1", "B=x y", "prog", "a b"]
    assert command_argv("prog -x", {}, workdir="/w d") == ["env", "-C", "/w d", "prog", "-x"]
    assert command_argv("prog {v}", {"v": "$(touch x); y | z"}) == ["prog", "$(touch x); y | z"]
    for template, what in (("prog | tee x", "'|'"), ("a && b", "'&&'"), ("prog > out", "'>'"),
                           ("prog $HOME", "$ expansion"), ("prog `id`", "backquote"),
                           ("prog; rm x", "';'")):
        with pytest.raises(LaunchError, match="needs a shell") as err:
            command_argv(template, {})
        assert what in str(err.value), (template, err.value)
    with pytest.raises(LaunchError, match="no program"):
        command_argv("A=1 B=2", {})
    with pytest.raises(LaunchError, match="no value for placeholder"):
        command_argv("prog {missing}", {})


def test_profile_command_in_the_config():
    good = parse('[[servers]]\nname = "s"\ncommand = "python -m sglang.launch_server"\n'
                 'profile_command = "PYTHONPATH=/src python -m sglang.bench_one_batch '
                 '--model-path {model}"\nargs = { model = "/m" }\n')
    assert good.servers[0].profile_command is not None
    for bad, says in (
            ('profile_command = "bench {model} {nope}"', "placeholder(s) {nope} have no value"),
            ('profile_command = "bench | tee x"', "the shell operator '|' needs a shell"),
            ('profile_command = "bench {x!r}"', "profile_command template: placeholder"),
    ):
        with pytest.raises(ConfigError, match="profile_command") as err:
            parse(f'[[servers]]\nname = "s"\ncommand = "x"\n{bad}\nargs = {{ model = "/m" }}\n')
        assert says in str(err.value), err.value
        assert ":4:" in str(err.value)  # the line of the key
