"""`perftriage demo`: the cockpit on a SIMULATED SGLang server, on localhost.

No GPU, no config: a bundled simulator (``perftriage.simulator.sglang_sim``) writes
SGLang 0.5.23 startup lines, then decode / prefill lines (and now and then an
error); the launcher starts it from a server profile, so the Logs pane
follows it, plots its throughput and shows time-to-ready, and a few example
probes are queued. The investigation is an ordinary one: recorded in the
sessions directory (``perftriage sessions`` and ``replay --latest`` find it),
named and continued with ``-s NAME``, started with ``--hypotheses`` packs.

The server always runs a scenario: without ``--scenario`` the README's story
(:data:`DEFAULT_SCENARIO`: the slow MoE backend, its kernel below its roofline,
fixed by ``S`` with ``backend=flashinfer_cutedsl``), so its log, its GPUs and
its captures tell one story. ``--scenario NAME`` plants another cause
(``perftriage.simulator.scenarios``: healthy, host-stall, launch-bound, ...),
started with the server flags that plant it (``--disable-cuda-graph``, ...);
``S`` applies the fix line its finding prints (the flags it names, or
``--simulated-fix CAUSE`` for a code change; the note says which):
its log and /metrics, the CPU its scheduler loop burns (what ``k`` samples),
its profile captures (synthesised traces) and its GPUs' readings follow that
state. The GPUs are SIMULATED too: the demo's process reads them through
NVML's calls answered by the simulated server (``simulator/nvml_sim``), every
name saying "(SIMULATED)"; and so is the host's CPU contention: the demo's
host sampler reads PSI and the cgroup's CFS counters from the simulated
server (``simulator/cpu_sim``), not from this machine's
``/proc/pressure/cpu``, ``/sys/fs/cgroup/cpu.stat`` and ``cpu.pressure`` — throttled in the
cpu-throttle scenario, zero in the others (a busy machine running the demo
adds no cpu-throttle of its own).
"""

from __future__ import annotations

import contextlib
import socket
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import click

from perftriage.cli.globals import FiniteRange
from perftriage.core.model.findings import DIAGNOSES

DEMO_SERVER = "sglang-sim"
# the seed case's hardware (README): TP8 on RTX PRO 6000 Blackwell Server cards
SIMULATED_GPUS = (8, "RTX PRO 6000 Blackwell Server Edition")


# the demo's [[servers]] profile_command: what the ncu step runs under ncu
DEMO_BENCH = ("{python} -m perftriage.simulator.sglang_sim --lines 8 --rate 0 --startup-s 0"
              " --tp {tp} --moe-runner-backend {backend} --scenario {scenario}")


def free_loopback_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def demo_config(log: Path, rate: float, metrics_port: int | None = None,
                scenario: str | None = None):
    from perftriage.core.store.config import Config, ServerProfile
    from perftriage.simulator.sglang_sim import DEFAULT_BACKEND

    from perftriage.simulator.scenarios import GAP_INPUTS

    port = metrics_port or free_loopback_port()
    # S can restart it with another scenario (sglang-sim scenario=healthy) or with the
    # flags a finding's fix names (sglang-sim --mem-fraction-static 0.9)
    command = ("{python} -m perftriage.simulator.sglang_sim --rate {rate} --startup-s {startup}"
               " --metrics-port {metrics_port} --tp {tp} --moe-runner-backend {backend}"
               " --scenario {scenario}")
    # the simulated model's bytes a step: the gap form (G) takes them from here
    extra = {"scenario": scenario or DEFAULT_SCENARIO,
             "active_params_b": f"{GAP_INPUTS['active_params_b']:g}",
             "bits": f"{GAP_INPUTS['bits']:g}"}
    profile = ServerProfile(
        name=DEMO_SERVER,
        command=command,
        host="localhost",
        log=str(log),
        args={"python": sys.executable, "rate": f"{rate:g}", "startup": "1.5",
              "metrics_port": str(port),
              # the simulated GPUs: the gap form (G) reads a profile's tp and gpu
              "tp": str(SIMULATED_GPUS[0]), "gpu": SIMULATED_GPUS[1],
              # S restarts it with another (sglang-sim backend=flashinfer_cutedsl): a before/after
              "backend": DEFAULT_BACKEND, **extra},
        metrics_url=f"http://127.0.0.1:{port}/metrics",  # read by the engine source
        # the triage's ncu step: a short simulated bench (a few steady lines, then it
        # exits), never a second copy of the server on its port
        profile_command=DEMO_BENCH,
    )
    return Config(servers=[profile])


# the default demo's story (README): the slow MoE backend, its kernel below its roofline;
# S with backend=flashinfer_cutedsl is the fix
DEFAULT_SCENARIO = "kernel-below-roofline"
# the healthy server, then one scenario per cause (the one cause list; the
# simulator's SCENARIOS in the same order): imported light, for --scenario's choices
SCENARIO_NAMES = ("healthy", *DIAGNOSES)

EXAMPLE_PROBES = (("import", ["json"]), ("which", ["python3"]), ("shell", ["uname -a"]))


def scenario_of(cockpit) -> str | None:
    """The scenario the demo's server was configured with (the default demo's
    is :data:`DEFAULT_SCENARIO`); None without the demo's server."""
    profile = next((p for p in cockpit.config.servers if p.name == DEMO_SERVER), None)
    return profile.args.get("scenario") if profile is not None else None


@contextlib.contextmanager
def simulated_gpus(cockpit) -> Iterator[None]:
    """This process's NVML answers from the simulated server's GPUs
    (``/simulated/gpus`` on its port) until the end of the block."""
    profile = next((p for p in cockpit.config.servers if p.name == DEMO_SERVER), None)
    if profile is None or scenario_of(cockpit) is None:
        yield
        return
    from perftriage.simulator.nvml_sim import installed

    url = f"http://127.0.0.1:{profile.args['metrics_port']}/simulated/gpus"
    with installed(url, int(profile.args.get("tp") or SIMULATED_GPUS[0])):
        yield


@contextlib.contextmanager
def simulated_cpu(cockpit) -> Iterator[None]:
    """The demo's host sampler reads PSI and the cgroup's CFS counters from
    the simulated server (``/simulated/cpu`` on its port), not from this
    machine's files, until the end of the block: no contention without a
    scenario or in another one, so a busy machine running the demo (a CI
    box under a test run) never adds a cpu-throttle to its story."""
    profile = next((p for p in cockpit.config.servers if p.name == DEMO_SERVER), None)
    if profile is None:
        yield
        return
    from perftriage.services.sampling.local_sampler import contention_source
    from perftriage.simulator.cpu_sim import SimulatedContention

    with contention_source(SimulatedContention(
            f"http://127.0.0.1:{profile.args['metrics_port']}/simulated/cpu")):
        yield


@contextlib.contextmanager
def simulated_host(cockpit) -> Iterator[None]:
    """The demo's GPUs (with a scenario) and CPU contention (always) are the
    simulated server's (:func:`simulated_gpus`, :func:`simulated_cpu`)."""
    with simulated_gpus(cockpit), simulated_cpu(cockpit):
        yield


def fix_words(sc) -> str:
    """How ``S`` applies the fix line of ``sc``'s finding in the demo."""
    if sc.fix:
        return f"S sglang-sim {sc.fix}"
    if sc.flags:
        return f"S sglang-sim without {' '.join(sc.flags)}"
    return "nothing to fix"


async def start_demo(cockpit, announce: bool = True) -> None:
    """Start the simulated server with the flags its scenario plants and
    queue the example probes; a chosen scenario's note (``announce``) says
    what it plants, which witness reveals it and how ``S`` applies its fix."""
    from perftriage.core.model import events as ev
    from perftriage.simulator.scenarios import SCENARIOS

    name = scenario_of(cockpit)
    sc = SCENARIOS.get(name or "")
    if sc is not None and announce:
        cockpit.session.emit(ev.NoteAdded(
            text=f"demo scenario {sc.name} (SIMULATED server, GPUs and CPU contention): plants {sc.plants}; "
                 f"seen by {sc.witness}; the fix: {fix_words(sc)}", host="localhost"))
    cockpit.servers.start(DEMO_SERVER, " ".join(sc.flags) if sc is not None else "")
    for kind, args in EXAMPLE_PROBES:
        try:
            cockpit.probes.enqueue("localhost", kind, args)
        except (ValueError, KeyError) as exc:  # a probe kind this build lacks
            click.echo(f"demo: probe {kind} skipped: {exc}", err=True)


def build(g, rate: float, workdir: Path, scenario: str | None = None):
    """The demo's cockpit: the simulated server's config in place of the
    config file, everything else as for the cockpit itself (``-s NAME``,
    ``--hypotheses``, ``--sessions-dir``, ``-H``)."""
    from perftriage.cli.launch import build_cockpit

    return build_cockpit(g, name="demo", config=demo_config(workdir / "sglang-sim.log", rate,
                                                            scenario=scenario))


@click.command("demo")
@click.option("--rate", type=FiniteRange(min=0.1), default=8.0, show_default=True,
              help="Simulated decode/prefill log lines per second.")
@click.option("--scenario", type=click.Choice(SCENARIO_NAMES), default=None, metavar="NAME",
              help="Plant one cause in the simulated server and its simulated GPUs (the "
                   f"names above). Default: the README's story ({DEFAULT_SCENARIO}).")
@click.pass_obj
def command(g, rate: float, scenario: str | None) -> None:
    """Open the cockpit on a SIMULATED SGLang server (no GPU, no config).

    The simulator's log is followed and its throughput plotted; press S to
    restart it with other arguments (e.g. `sglang-sim rate=200`), K to stop it.
    The default story: the slow MoE backend (its kernel below its roofline:
    Y, then a capture). A before/after: b marks a baseline, S restarts the
    server with another MoE backend (`sglang-sim backend=flashinfer_cutedsl`,
    simulated, the step 2x -> 1.1x its floor), and 30 s later the Gap view
    (G), the triage (resolved) and the Logs pane's engine line give the
    verdicts. Afterwards `perftriage compare` or the
    report tell it: a restart is not a new run, so compare session times
    either side of it, e.g. `perftriage compare NAME@0:20-0:50
    NAME@1:20-1:50`, where NAME is the investigation's name (give one with
    `perftriage -s NAME demo`; `perftriage sessions` lists them) or the
    transcript path printed on exit.

    --scenario NAME plants one cause (its note on the timeline says what
    it plants, what shows it and how S applies the fix its finding prints;
    docs in perftriage.simulator.scenarios):

    \b
      healthy                nothing: CUDA graphs on, near its floor
      host-stall             a Python stall in the scheduler (k shows it)
      launch-bound           eager decode, kernels shorter than their launch
      host-sync              a value read back per layer (D2H + sync)
      kernel-below-roofline  the slow MoE backend (S backend=... fixes it)
      wasted-traffic         DRAM moves 2x the bytes a token needs (G)
      exposed-comm           NCCL all-reduce after each layer, not overlapped
      straggler              TP rank 3 late, the others wait in NCCL
      kv-pressure            KV cache full, requests retracted
      queueing               requests queue with KV room left
      gpu-throttle           SIMULATED GPUs held at 60 % SM clock
      cpu-throttle           the engine's cgroup CFS-throttled (SIMULATED PSI)
      near-floor             1.1x the floor: nothing big left
    """
    from perftriage.ui.app import PerftriageApp
    from perftriage.cli.launch import app_options

    options = app_options(g)  # a bad --theme starts nothing
    workdir = Path(tempfile.mkdtemp(prefix="perftriage-demo-"))
    cockpit = build(g, rate, workdir, scenario)

    class DemoApp(PerftriageApp):
        def on_mount(self) -> None:
            self.run_worker(start_demo(self.cockpit, announce=scenario is not None),
                            exit_on_error=False, group="demo")

    app = DemoApp(cockpit, theme=options["theme"])  # not config_path: C saves no simulator
    with simulated_host(cockpit):
        app.run()
    if cockpit.session.path:
        click.echo(f"transcript: {cockpit.session.path}", err=True)
    click.echo(f"simulated server log: {workdir / 'sglang-sim.log'}", err=True)
