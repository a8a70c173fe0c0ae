"""Command line: ``perftriage`` opens the cockpit; subcommands are headless.

Subcommands live in ``tui/perftriage/cli/commands/<name>.py`` (one module each, exposing a
click command called ``command``) and are imported only when used, so
``perftriage --version`` stays fast and never imports Textual.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import sys
import weakref
from pathlib import Path

import click

from perftriage import __version__

# name -> (module, one-line help shown in --help without importing it)
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "engine": ("perftriage.cli.commands.engine", "An SGLang/vLLM server's figures from its /metrics."),
    "sessions": ("perftriage.cli.commands.sessions", "List investigations and saved sessions."),
    "replay": ("perftriage.cli.commands.replay", "Open a saved session in the cockpit, read-only."),
    "hosts": ("perftriage.cli.commands.hosts", "List configured hosts; --check connects to each."),
    "probe": ("perftriage.cli.commands.probe", "Run one probe headless and print the result."),
    "status": ("perftriage.cli.commands.status", "Print a snapshot of hosts, CPUs and GPUs."),
    "metrics": ("perftriage.cli.commands.metrics", "Extract throughput metrics from SGLang/vLLM logs."),
    "roofline": ("perftriage.cli.commands.roofline", "Compute the decode floor and the gap to it."),
    "gap": ("perftriage.cli.commands.gap", "Sample GPU bandwidth counters and explain the gap."),
    "report": ("perftriage.cli.commands.report", "Write a Markdown report of a session."),
    "themes": ("perftriage.cli.commands.themes", "List available themes."),
    "demo": ("perftriage.cli.commands.demo", "Open the cockpit on a simulated SGLang server."),
    "fleet": ("perftriage.cli.commands.fleet", "Fleet medians and outliers from Prometheus."),
    "trace": ("perftriage.cli.commands.trace", "Which kernels eat the step: summarise profiler traces."),
    "kernels": ("perftriage.cli.commands.kernels", "How far each kernel is from its roofline (ncu CSV)."),
    "profile": ("perftriage.cli.commands.profile", "Capture a profile from a running server and summarise it."),
    "check": ("perftriage.cli.commands.check", "Evaluate a hypothesis pack against a saved session."),
    "watch": ("perftriage.cli.commands.watch", "Follow an investigation being recorded, read-only."),
    "compare": ("perftriage.cli.commands.compare", "Did the change help? Two slices, a verdict per metric."),
    "share": ("perftriage.cli.commands.share", "Serve `watch NAME` to a browser, behind a token."),
    "triage": ("perftriage.cli.commands.triage", "What is wrong, phase by phase: findings with their cost."),
}

# What the commands share (exit codes, UsageFailure) lives in globals.py and is
# re-exported by the cli package: nothing the group imports imports it back.
from perftriage.cli.globals import FiniteRange, Globals  # noqa: E402
from perftriage.transport.ssh_options import SshOptions  # noqa: E402


def _store_global(name: str):
    """Callback of a global option given after the subcommand: it lands in
    the same :class:`Globals` as when given before it."""

    def store(ctx: click.Context, param: click.Parameter, value) -> None:
        # not given: None, () or False. (Not ctx.get_parameter_source: click
        # 8.4 records the source only after the callback has run.)
        if value is None or value == () or value is False:
            return
        g = ctx.find_object(Globals)
        if g is None:
            return
        if name in ("hosts", "hypotheses"):
            getattr(g, name).extend(value)
        elif name == "config_path":
            g.config_path, g.config_explicit = value, True
        elif name == "ssh_config":
            g.ssh = dataclasses.replace(g.ssh, config=value)
        elif name == "accept_new_host_keys":
            g.ssh = dataclasses.replace(g.ssh, accept_new_host_keys=value)
        else:
            setattr(g, name, value)

    return store


# commands that already got the global options (a command object is reused)
_WITH_GLOBALS: weakref.WeakSet[click.Command] = weakref.WeakSet()


def with_global_options(cmd: click.Command, group: click.Group) -> click.Command:
    """Let the global options also follow the subcommand (``perftriage hosts
    --check --accept-new-host-keys``). An option string the subcommand uses
    itself stays the subcommand's (``probe --host`` is probe's own; ``-H``
    still adds a global host there)."""
    if cmd in _WITH_GLOBALS:
        return cmd
    taken = {o for p in cmd.params for o in (*p.opts, *p.secondary_opts)}
    for p in group.params:
        if not isinstance(p, click.Option) or p.is_eager or p.name in ("help", "version"):
            continue
        opts = [o for o in p.opts if o not in taken]
        if not opts:
            continue
        cmd.params.append(click.Option(
            [*opts, f"global_{p.name}"], type=p.type, multiple=p.multiple, is_flag=p.is_flag,
            metavar=p.metavar, expose_value=False, hidden=True,
            callback=_store_global(p.name or "")))
    _WITH_GLOBALS.add(cmd)
    return cmd


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        eager = super().list_commands(ctx)
        lazy = [n for n, (mod, _) in SUBCOMMANDS.items() if importlib.util.find_spec(mod)]
        return eager + sorted(lazy)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in SUBCOMMANDS:
            module_name = SUBCOMMANDS[name][0]
            if importlib.util.find_spec(module_name) is None:
                return None
            return with_global_options(importlib.import_module(module_name).command, self)
        return super().get_command(ctx, name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(n, SUBCOMMANDS[n][1]) for n in self.list_commands(ctx) if n in SUBCOMMANDS]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


@click.group(cls=LazyGroup, invoke_without_command=True,
             context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", "-V", prog_name="perftriage")
@click.option("--sessions-dir", type=click.Path(file_okay=False, path_type=Path),
              help="Where transcripts are written (default: the user data dir, see README).")
@click.option("--config", "config_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Config file (default: the user config dir's config.toml).")
@click.option("-H", "--host", "hosts", multiple=True, metavar="SPEC",
              help="Host to use: a config name, an ssh alias or user@host[:port]. Repeatable.")
@click.option("--ssh-config", type=click.Path(dir_okay=False, path_type=Path),
              help="OpenSSH client config to use instead of ~/.ssh/config.")
@click.option("--accept-new-host-keys", is_flag=True,
              help="Record first-seen host keys in known_hosts (like accept-new). "
                   "Changed keys are always refused.")
@click.option("--theme", help="Theme name (see `perftriage themes`).")
@click.option("--sample-interval", type=FiniteRange(min=0.05), metavar="SECONDS",
              help="Host sampling/recording period (default 1.0).")
@click.option("--prometheus", metavar="URL",
              help="Prometheus the Fleet view reads (default: the config's [fleet] prometheus).")
@click.option("--hypotheses", "hypotheses", multiple=True, metavar="FILE|NAME",
              help="Hypothesis pack to start with (TOML [[hypotheses]]; a file, or a bundled "
                   "pack's name such as 'seed'). Repeatable.")
@click.option("-s", "--session", "session", metavar="NAME",
              help="Open the investigation NAME: a new one, or continue it where it was.")
@click.pass_context
def cli(ctx: click.Context, sessions_dir, config_path, hosts, ssh_config,
        accept_new_host_keys, theme, sample_interval, prometheus, hypotheses,
        session) -> None:
    """perftriage: a terminal cockpit for chasing performance gaps on GPU servers.

    With no command it opens the cockpit on localhost plus the configured
    hosts, recording the session to a transcript. The options below may also
    follow the command (`perftriage hosts --check --accept-new-host-keys`);
    where the command has an option of the same name (`probe --host`), that
    one is the command's.
    """
    ctx.obj = Globals(
        sessions_dir=sessions_dir,
        config_path=config_path,
        config_explicit=config_path is not None,
        hosts=list(hosts),
        ssh=SshOptions(config=ssh_config, accept_new_host_keys=accept_new_host_keys),
        theme=theme,
        sample_interval=sample_interval,
        prometheus=prometheus,
        hypotheses=list(hypotheses),
        session=session,
    )
    if ctx.invoked_subcommand is None:
        from perftriage.cli.launch import run_cockpit

        sys.exit(run_cockpit(ctx.obj))


def main() -> None:
    cli(prog_name="perftriage")
