"""`perftriage probe [--host SPEC | --all] KIND ARG... [--json] [--timeout S]`.

Runs one probe headless through the same runner as the cockpit and prints
the result. KIND is a probe kind (its usage line in ``--help`` comes from
the kind itself, :mod:`perftriage.core.probe_kinds`) or a template name from
the config's ``[[probes]]``. Under the result line come the lines that back
the verdict, rendered by :func:`perftriage.core.probes.answer_lines` as in
the cockpit's output view.

Hosts: ``--host SPEC`` (a config name, an ssh alias or user@host[:port]);
``--all`` every host (localhost plus the configured ones, or the global
``-H`` specs); neither: the global ``-H`` hosts if given, else localhost.

``--group`` folds identical answers (verdict, exit status, summary, stdout,
stderr) into one, headed by their hosts' node set (``node[01-64] (64)``),
like ClusterShell's clubak; with ``--json`` it prints a list of ``{nodeset,
count, hosts, verdict, exit_status, summary, stdout, stderr}``, largest
group first. ``--window N`` (default 64) bounds how many hosts are
connected to and probed at once.

``--json`` prints one object with ``host, kind, args, verdict,
exit_status, duration_s, stdout, stderr, detail`` — or, with ``--all`` (or
several hosts), a JSON list of such objects, one per host.

``verdict`` is ok, failed, no-match (the probe ran and found nothing: a
grep with 0 matches), error, timeout or cancelled.

Exit status: 0 ok; 1 the probe ran and failed, found nothing (like grep) or
could not answer;
2 usage error; 3 could not reach or authenticate to the host; 4 timeout.
Over several hosts the worst wins, in the order 3, 4, 1.
"""

from __future__ import annotations

import asyncio
import sys

import click

from perftriage.cli.globals import FiniteRange

from perftriage.cli.json_out import json_text
from perftriage.core import probes
from perftriage.core.sanitize import visible_lines
from perftriage.cli import EXIT_FAILED, EXIT_OK, EXIT_TIMEOUT, EXIT_UNREACHABLE, UsageFailure

# TransportError kinds that mean "could not reach or authenticate"
UNREACHABLE_KINDS = frozenset(
    {"host_key_unknown", "host_key_changed", "auth", "refused", "dns", "timeout", "lost",
     "channel_limit"}
)
FIELDS = ("host", "kind", "args", "verdict", "exit_status", "duration_s", "stdout", "stderr",
          "detail")


def exit_code(p) -> int:
    """The exit status one probe's result maps to."""
    if p.status == "ok":
        return EXIT_OK
    if p.status == "timeout":
        return EXIT_TIMEOUT
    if p.status == "error" and p.detail.get("error_kind") in UNREACHABLE_KINDS:
        return EXIT_UNREACHABLE
    return EXIT_FAILED


def combined_exit_code(codes: list[int]) -> int:
    for code in (EXIT_UNREACHABLE, EXIT_TIMEOUT, EXIT_FAILED):
        if code in codes:
            return code
    return EXIT_OK


def as_record(p) -> dict:
    spec = probes.KINDS.get(p.kind)
    extra = spec.json_fields(p) if spec is not None and spec.json_fields is not None else {}
    return {
        "host": p.host,
        **extra,
        "kind": p.kind,
        "args": list(p.args),
        "verdict": p.status,
        "exit_status": p.exit_status,
        "duration_s": p.duration_s,
        "stdout": p.stdout,
        "stderr": p.stderr,
        "detail": p.detail,
    }


def _text(p, width: int) -> str:
    dur = f"{p.duration_s:.3f}s" if p.duration_s is not None else "-"
    return "\n".join([f"{p.host:<{width}}  {p.status:<9} {dur:>8}  {p.summary}", *_body(p)])


def _grouped_text(group) -> str:
    """One folded answer, like clubak: the node set, then the answer once."""
    rule = "-" * 15
    head = f"{group.nodeset} ({len(group.hosts)})  {group.verdict}  {group.summary}"
    return "\n".join([rule, head, rule, *_body(group.probes[0])])


def _body(p) -> list[str]:
    """What backs the verdict (the kind's answer, or stdout where that is the
    answer), then a failure's stderr tail, less the lines the answer showed."""
    spec = probes.KINDS.get(p.kind)
    answer = probes.answer_lines(p)
    if spec is not None and spec.stdout_answers and p.stdout.strip():
        answer += p.stdout.rstrip("\n").splitlines()
    lines = [f"    {x}" for x in answer]
    if p.status != "ok" and p.stderr.strip():
        shown = {x.strip() for x in answer}
        lines += [f"    stderr: {x}" for x in p.stderr.strip().splitlines()[-10:]
                  if x.strip() not in shown]
    return lines


DEFAULT_TIMEOUT_S = 60.0


def _kind_options(kind: str, kernel: str | None, launches: int | None,
                  must_read: tuple[str, ...], args: tuple[str, ...],
                  steps: int | None = None, expert_gb: float | None = None) -> tuple[str, ...]:
    """``--kernel``/``--launches``/``--bytes``/``--steps``/``--expert-gb`` are
    the ncu kind's: they go before its COMMAND (then ``--``, so a COMMAND word
    is never read as one)."""
    valued = (("--kernel", kernel), ("--launches", launches), ("--steps", steps),
              ("--expert-gb", expert_gb))
    if all(v is None for _, v in valued) and not must_read:
        return args
    if kind != "ncu":
        raise UsageFailure("--kernel, --launches, --bytes, --steps and --expert-gb are options "
                           "of the ncu probe")
    opts = [w for flag, v in valued if v is not None for w in (flag, str(v))] + \
        [w for spec in must_read for w in ("--bytes", spec)]
    return (*opts, "--", *args)


async def _run(registry, names: list[str], kind: str, args: list[str], timeout: float,
               templates, window: int) -> list:
    from perftriage.services.probes.runner import ProbeRunner
    from perftriage.services.investigation.session import Session

    session = Session(name="probe", hosts=names)
    runner = ProbeRunner(session, registry, templates=templates, default_timeout=timeout,
                         window=window)
    try:
        if len(names) == 1:
            ids = [runner.enqueue(names[0], kind, args, timeout=timeout)]
        else:
            ids = runner.enqueue_all(kind, args, hosts=names, timeout=timeout)
        await runner.wait(ids)
        return [session.state.probes[i] for i in ids]
    finally:
        await runner.close()
        await registry.close()


HELP = """Run one probe (KIND ARG...) and print the result.

\b
Kinds: {kinds}
Exit: 0 ok, 1 failed, 2 usage, 3 host unreachable, 4 timeout.
Put `--` before arguments that start with a dash.

A [[probes]] template of kind shell gets its extra arguments quoted
(shlex.quote: data, never shell), where its command says {{args}} or at
the end; write {{args_raw}} in the command to insert them unquoted, as shell.
"""


def _kinds_usage(width: int = 72) -> str:
    """Every kind's usage, ``|``-separated, wrapped under ``Kinds:``."""
    lines, line = [], ""
    for usage in [*(k.usage for k in probes.KINDS.values()), "a [[probes]] template name"]:
        word = usage if not line else f" | {usage}"
        if line and len(line) + len(word) > width:
            lines.append(line)
            line = usage
        else:
            line += word
    return "\n       ".join([*lines, line])


# a kind's own options (stacks --pid 12) pass through to it as arguments
@click.command("probe", help=HELP.format(kinds=_kinds_usage()),
               context_settings={"ignore_unknown_options": True})
@click.option("--host", "host", metavar="SPEC",
              help="Run on this host: a config name, an ssh alias or user@host[:port].")
@click.option("--all", "all_hosts", is_flag=True, help="Run on every host (JSON: a list).")
@click.option("--group", "grouped", is_flag=True,
              help="Fold identical answers into one, by node set (node[01-64]).")
@click.option("--window", type=click.IntRange(min=1), default=64, show_default=True,
              help="Hosts connected to and probed at once.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.option("--timeout", type=FiniteRange(min=0.01), default=None,
              metavar="SECONDS",
              help="Limit for the probe on each host (default 60; ncu: 600).")
@click.option("--kernel", metavar="REGEX", help="ncu: profile only kernels matching REGEX.")
@click.option("--launches", type=click.IntRange(min=1), metavar="N",
              help="ncu: profile at most N kernel launches.")
@click.option("--bytes", "must_read", multiple=True, metavar="KERNEL=N",
              help="ncu: bytes a launch of KERNEL (a regex) must read, e.g. its weights.")
@click.option("--steps", type=click.IntRange(min=1), metavar="N",
              help="ncu: decode steps COMMAND runs (bytes a step must read, against the "
                   "cockpit's recorded gap).")
@click.option("--expert-gb", type=FiniteRange(min=0, min_open=True), metavar="E",
              help="ncu: the routed experts' GB of a step's weights (with --steps).")
@click.argument("kind")
@click.argument("args", nargs=-1)
@click.pass_obj
def command(g, host: str | None, all_hosts: bool, grouped: bool, window: int, as_json: bool,
            timeout: float | None, kernel: str | None, launches: int | None,
            must_read: tuple[str, ...], steps: int | None, expert_gb: float | None, kind: str,
            args: tuple[str, ...]) -> None:
    from perftriage.services.hosts.registry import LOCALHOST, HostSpecError, resolve_hosts

    if host and all_hosts:
        raise UsageFailure("give --host SPEC or --all, not both")
    args = _kind_options(kind, kernel, launches, must_read, args, steps, expert_gb)
    if timeout is None:
        spec = probes.KINDS.get(kind)
        timeout = (spec.timeout_s if spec is not None else None) or DEFAULT_TIMEOUT_S
    config = g.load_config()
    try:
        probes.resolve(kind, list(args), config.probes)
    except probes.ProbeUsageError as exc:
        raise UsageFailure(str(exc)) from None
    if all_hosts or (g.hosts and not host):
        registry = g.resolve_hosts(config)
    else:
        try:
            registry = resolve_hosts(config, [host or LOCALHOST], ssh=g.ssh)
        except HostSpecError as exc:
            raise UsageFailure(str(exc)) from None
    names = registry.names
    results = asyncio.run(_run(registry, names, kind, list(args), timeout, config.probes, window))
    if grouped:
        from perftriage.core.fleet.fold import group_answers

        groups = group_answers(results)
        if as_json:
            click.echo(json_text([gr.record() for gr in groups], indent=2, default=str))
        else:
            click.echo("\n".join(_grouped_text(gr) for gr in groups))
    elif as_json:
        records = [as_record(p) for p in results]
        out = records if (all_hosts or len(records) > 1) else records[0]
        click.echo(json_text(out, indent=2, default=str))
    else:
        width = max(len(n) for n in names)
        for p in results:
            click.echo(visible_lines(_text(p, width)))
    sys.exit(combined_exit_code([exit_code(p) for p in results]))
