"""`perftriage hosts`: the configured hosts; `--check` connects to each.

Exit status with ``--check``: 0 when every host answered, 3 when any host
could not be reached or authenticated (host key, auth, refused, DNS,
timeout, lost), 1 for any other failure.
"""

from __future__ import annotations

import asyncio
import time

import click

from perftriage.cli.globals import FiniteRange

from perftriage.core.sanitize import visible
from perftriage.cli import EXIT_FAILED, EXIT_OK, EXIT_UNREACHABLE

UNREACHABLE_KINDS = frozenset(
    {"host_key_unknown", "host_key_changed", "auth", "refused", "dns", "timeout", "lost"}
)


def _target(host) -> str:
    return host.config.ssh or "local"


async def _check_one(host, timeout: float) -> tuple[str, str | None, str]:
    """(name, error kind or None when OK, the reason or the latency)."""
    from perftriage.transport.base import ChecksConnection, TransportError

    start = time.perf_counter()
    try:
        if isinstance(host.transport, ChecksConnection):
            async with asyncio.timeout(timeout):
                await host.transport.check()
        else:
            result = await host.transport.run("true", timeout=timeout)
            if not result.ok:
                return host.name, "other", f"`true` exited with {result.exit_status}"
    except TransportError as exc:
        return host.name, exc.kind, exc.reason
    except TimeoutError:
        return host.name, "timeout", f"no answer within {timeout:g}s"
    return host.name, None, f"{(time.perf_counter() - start) * 1000:.0f} ms"


async def _check_all(registry, timeout: float):
    try:
        return await asyncio.gather(*(_check_one(h, timeout) for h in registry.hosts.values()))
    finally:
        await registry.close()


@click.command("hosts")
@click.option("--check", is_flag=True, help="Connect to each host and run `true`.")
@click.option("--timeout", type=FiniteRange(min=0.1), default=30.0, show_default=True,
              metavar="SECONDS", help="Per-host limit for --check.")
@click.pass_obj
def command(g, check: bool, timeout: float) -> None:
    """List hosts (localhost, the config's [[hosts]], or those given with -H).

    With --check, connect to each and print OK or the one-line reason; exit
    status 3 when a host cannot be reached or authenticated.
    """
    config = g.load_config()
    registry = g.resolve_hosts(config)
    hosts = list(registry.hosts.values())
    width = max((len(h.name) for h in hosts), default=4)
    if not check:
        for h in hosts:
            extra = []
            if h.config.preamble:
                extra.append(f"preamble: {h.config.preamble}")
            if h.config.tags:
                extra.append("tags: " + ", ".join(h.config.tags))
            click.echo(f"{h.name:<{width}}  {_target(h)}" + ("  " + "; ".join(extra) if extra else ""))
        return
    results = asyncio.run(_check_all(registry, timeout))
    code = EXIT_OK
    for name, kind, detail in results:
        if kind is None:
            click.echo(visible(f"{name:<{width}}  OK      {detail}"))
            continue
        click.echo(visible(f"{name:<{width}}  FAILED  {detail}"))
        code = max(code, EXIT_UNREACHABLE if kind in UNREACHABLE_KINDS else EXIT_FAILED)
    if code:
        raise SystemExit(code)
