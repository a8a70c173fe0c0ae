"""`perftriage demo`: the cockpit on a SIMULATED SGLang server, on localhost.

No GPU, no config: a bundled simulator (``perftriage.simulator.sglang_sim``) writes
SGLang 0.5.23 startup lines, then decode / prefill lines (and now and then an
error); the launcher starts it from a server profile, so the Logs pane
follows it, plots its throughput and shows time-to-ready, and a few example
probes are queued. The investigation is an ordinary one: recorded in the
sessions directory (``perftriage sessions`` and ``replay --latest`` find it),
named and continued with ``-s NAME``, started with ``--hypotheses`` packs.
"""

from __future__ import annotations

import socket
import sys
import tempfile
from pathlib import Path

import click

DEMO_SERVER = "sglang-sim"
# the seed case's hardware (README): TP8 on RTX PRO 6000 Blackwell Server cards
SIMULATED_GPUS = (8, "RTX PRO 6000 Blackwell Server Edition")


def free_loopback_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def demo_config(log: Path, rate: float, metrics_port: int | None = None):
    from perftriage.core.store.config import Config, ServerProfile
    from perftriage.simulator.sglang_sim import DEFAULT_BACKEND

    port = metrics_port or free_loopback_port()
    profile = ServerProfile(
        name=DEMO_SERVER,
        command="{python} -m perftriage.simulator.sglang_sim --rate {rate} --startup-s {startup}"
                " --metrics-port {metrics_port} --tp {tp} --moe-runner-backend {backend}",
        host="localhost",
        log=str(log),
        args={"python": sys.executable, "rate": f"{rate:g}", "startup": "1.5",
              "metrics_port": str(port),
              # the simulated GPUs: the gap form (G) reads a profile's tp and gpu
              "tp": str(SIMULATED_GPUS[0]), "gpu": SIMULATED_GPUS[1],
              # S restarts it with another (sglang-sim backend=flashinfer_cutedsl): a before/after
              "backend": DEFAULT_BACKEND},
        metrics_url=f"http://127.0.0.1:{port}/metrics",  # read by the engine source
    )
    return Config(servers=[profile])


EXAMPLE_PROBES = (("import", ["json"]), ("which", ["python3"]), ("shell", ["uname -a"]))


async def start_demo(cockpit) -> None:
    """Start the simulated server and queue the example probes."""
    cockpit.servers.start(DEMO_SERVER)
    for kind, args in EXAMPLE_PROBES:
        try:
            cockpit.probes.enqueue("localhost", kind, args)
        except (ValueError, KeyError) as exc:  # a probe kind this build lacks
            click.echo(f"demo: probe {kind} skipped: {exc}", err=True)


def build(g, rate: float, workdir: Path):
    """The demo's cockpit: the simulated server's config in place of the
    config file, everything else as for the cockpit itself (``-s NAME``,
    ``--hypotheses``, ``--sessions-dir``, ``-H``)."""
    from perftriage.cli.launch import build_cockpit

    return build_cockpit(g, name="demo", config=demo_config(workdir / "sglang-sim.log", rate))


@click.command("demo")
@click.option("--rate", type=click.FloatRange(min=0.1), default=8.0, show_default=True,
              help="Simulated decode/prefill log lines per second.")
@click.pass_obj
def command(g, rate: float) -> None:
    """Open the cockpit on a SIMULATED SGLang server (no GPU, no config).

    The simulator's log is followed and its throughput plotted; press S to
    restart it with other arguments (e.g. `sglang-sim rate=200`), K to stop it.
    A before/after: b marks a baseline, S restarts the server with another
    MoE backend (`sglang-sim backend=flashinfer_cutedsl`, simulated 3.3x
    faster decode), and 30 s later the Gap view (G) and the Logs pane's
    engine line give the verdicts. Afterwards `perftriage compare` or the
    report tell it: a restart is not a new run, so compare session times
    either side of it, e.g. `perftriage compare NAME@0:20-0:50
    NAME@1:20-1:50`, where NAME is the investigation's name (give one with
    `perftriage -s NAME demo`; `perftriage sessions` lists them) or the
    transcript path printed on exit.
    """
    from perftriage.ui.app import PerftriageApp
    from perftriage.cli.launch import app_options

    options = app_options(g)  # a bad --theme starts nothing
    workdir = Path(tempfile.mkdtemp(prefix="perftriage-demo-"))
    cockpit = build(g, rate, workdir)

    class DemoApp(PerftriageApp):
        def on_mount(self) -> None:
            self.run_worker(start_demo(self.cockpit), exit_on_error=False, group="demo")

    app = DemoApp(cockpit, theme=options["theme"])  # not config_path: C saves no simulator
    app.run()
    if cockpit.session.path:
        click.echo(f"transcript: {cockpit.session.path}", err=True)
    click.echo(f"simulated server log: {workdir / 'sglang-sim.log'}", err=True)
