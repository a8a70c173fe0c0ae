"""`perftriage share NAME [--port P]`: `watch NAME` in a browser, behind a token."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket

import click

from perftriage.cli.globals import UsageFailure
from perftriage.cli.commands.watch import resolve


@click.command("share")
@click.argument("name")
@click.option("--port", type=click.IntRange(1, 65535), metavar="P",
              help="Port on 127.0.0.1 (default: a free one).")
@click.option("--max-visitors", type=click.IntRange(1, 64), default=4, show_default=True,
              metavar="N", help="Browser pages served at once (each runs its own watcher).")
@click.pass_obj
def command(g, name: str, port: int | None, max_visitors: int) -> None:
    """Serve `perftriage watch NAME` to a browser (textual-serve): bound to
    127.0.0.1 only, every path answering 403 without the 128-bit token in
    the printed URL (then a cookie), or with a Host other than 127.0.0.1 /
    localhost, or an Origin from elsewhere. It serves the read-only player
    of the transcript, nothing else, to at most N visitors at once (the next
    one is told so); a visitor's watcher ends within 2 s of its page
    closing. Prints the URL and the `ssh -L` line a colleague runs to reach
    it; stops on Ctrl+C."""
    from perftriage.core.store.investigations import shown_name
    from perftriage.services.investigation.share import ShareServer, bind, watch_command

    resolve(g, name)  # exit 2 now for an unknown name, not in each visitor's page
    try:
        sock = bind(port)
    except OSError as exc:
        raise UsageFailure(f"--port {port}: {exc.strerror or exc}") from None
    command_line = watch_command(name, g.resolved_sessions_dir(),
                                 g.config_path if g.config_explicit else None)
    server = ShareServer(command_line, sock, title=f"perftriage watch {shown_name(name)}",
                         max_visitors=max_visitors)
    share = server.share
    click.echo(f"sharing investigation {shown_name(name)} read-only (Ctrl+C stops)")
    click.echo(f"  open:       {share.url}")
    click.echo(f"  from afar:  {share.ssh_line(socket.gethostname())}")
    click.echo("              then open the URL above on that machine")
    click.echo(f"  visitors:   at most {max_visitors} at once (--max-visitors); "
               "the next one is asked to come back later")
    asyncio.run(_serve(server))


async def _serve(server) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    runner = await server.start()
    try:
        await stop.wait()
    finally:
        await runner.cleanup()
