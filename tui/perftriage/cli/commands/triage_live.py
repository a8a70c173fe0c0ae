"""``perftriage triage --host H --url URL``: watch a live server for a while,
headless, and say what the cockpit's own live triage found.

A cockpit without a UI samples the host (GPUs, CPU), reads the engine's
``/metrics`` and follows the server log (``--log``); halfway through it
takes a 3 s stacks record of the server behind the URL (the process tree
listening on its port on the host) and, only with
``--allow-capture``, a profile capture. The diagnosis is the cockpit's live
triage (``services/triage/live.py``, the one the Triage view shows),
evaluated once more when the watch ends: no second recording beside it.
Everything is recorded like any investigation (``perftriage sessions``
lists it, ``triage.updated`` included), so the report and ``triage NAME``
can read it again later.
"""

from __future__ import annotations

import asyncio
import time

import click

from perftriage.cli.globals import EXIT_UNREACHABLE

STACKS_ARGS = ["--seconds", "3"]
CONNECT_WAIT_S = 10.0  # past the first half, how long a host may still be connecting


class Unreachable(Exception):
    """The host was not up halfway through the watch (exit 3, docs/triage.md)."""


def watch(g, host: str, url: str, log_path: str | None, seconds: float, allow_capture: bool):
    """(the phases of the watched host by the cockpit's live triage, the session's duration)."""
    from perftriage.core.parse.http_url import parse_http_url
    from perftriage.core.sanitize import visible
    from perftriage.services.cockpit import Cockpit
    from perftriage.services.triage.next_step import stacks_args
    from perftriage.services.profile.capture import CaptureFailed
    from perftriage.transport.base import TransportError
    from perftriage.transport.http_request import endpoint

    config, registry, name = g.one_host_for_url(host, url)
    cockpit = Cockpit(config, sessions_dir=g.resolved_sessions_dir(), registry=registry,
                      name=f"triage-{name}-{time.strftime('%H%M%S')}")
    live = cockpit.triage
    assert live is not None  # a live cockpit has its triage

    def say(msg: str) -> None:
        click.echo(f"· {visible(msg)}", err=True)

    async def main() -> None:
        await cockpit.start()
        try:
            host_state = cockpit.session.state.hosts.get(name)
            cockpit.add_engine(endpoint(url, "metrics"), name)
            if log_path:
                cockpit.follow_log(name, log_path)
            say(f"watching {name} for {seconds:g} s (GPUs, {url} /metrics"
                + (f", {log_path}" if log_path else "") + ")")
            await asyncio.sleep(seconds / 2)
            states = cockpit.session.state.hosts
            for _ in range(int(CONNECT_WAIT_S * 10)):  # a slow handshake: not yet a verdict
                if (hs := states.get(name)) is not None and hs.conn_state != "connecting":
                    break
                await asyncio.sleep(0.1)
            hs = states.get(name)
            if hs is None or hs.conn_state != "up":  # refused, not resolved, auth, host key
                raise Unreachable(f"{name}: {hs.reason if hs and hs.reason else 'unreachable'}")
            # the server behind the URL (the tree of the process on its port), never a
            # name's best guess on the host
            stacks = stacks_args(cockpit, name) or [*STACKS_ARGS, "--port",
                                                     str(parse_http_url(url).port)]
            probe_id = cockpit.probes.enqueue(name, "stacks", stacks)
            say(f"stacks record of the engine ({' '.join(stacks)}): {probe_id}")
            if allow_capture:
                say("profile capture (pauses an eager server for seconds)")
                try:
                    await cockpit.profiles.capture(name, url, None, say)
                except (CaptureFailed, TransportError) as exc:
                    say(f"capture failed: {exc}")
            await asyncio.sleep(seconds / 2)
            try:
                await asyncio.wait_for(cockpit.probes.wait(probe_id), timeout=60)
            except TimeoutError:
                say("the stacks record did not finish in 60 s: triaged without it")
            live.evaluate(cockpit.session.state.last_t)  # with what came last
        finally:
            await cockpit.stop()

    try:
        asyncio.run(main())
    except (TransportError, Unreachable) as exc:
        click.echo(f"perftriage triage: {visible(str(exc))}", err=True)
        raise SystemExit(EXIT_UNREACHABLE) from None
    if cockpit.session.path:
        say(f"recorded: {cockpit.session.path}")
    return live.phases.get(name, []), cockpit.session.state.last_t
