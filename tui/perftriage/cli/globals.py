"""What every command shares: exit codes, the usage error, and the global
options given before (or after) the subcommand. Kept apart from ``main.py``
so that ``launch.py`` and the commands never import the CLI module that
imports them."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click

from perftriage.transport.ssh_options import SshOptions

# Exit codes shared by the headless commands.
EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_UNREACHABLE = 3
EXIT_TIMEOUT = 4


class FiniteRange(click.FloatRange):
    """click's FloatRange, without ``nan`` (every comparison with it is false,
    so ``--seconds nan`` passed ``min=1``) and without ``inf``."""

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Any:
        import math  # noqa: PLC0415

        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{str(value)[:40]!r} is not a finite number", param, ctx)
        return number


class UsageFailure(click.ClickException):
    """Bad input (config, arguments): message on stderr, exit status 2."""

    exit_code = EXIT_USAGE


@dataclass
class Globals:
    """Options given before the subcommand, shared by all of them."""

    sessions_dir: Path | None = None
    config_path: Path | None = None
    config_explicit: bool = False
    hosts: list[str] = field(default_factory=list)
    ssh: SshOptions = SshOptions()  # --ssh-config, --accept-new-host-keys
    theme: str | None = None
    sample_interval: float | None = None
    prometheus: str | None = None
    hypotheses: list[str] = field(default_factory=list)  # --hypotheses packs (file or name)
    session: str | None = None  # --session NAME: the named investigation to open or continue

    def resolved_sessions_dir(self) -> Path:
        from perftriage.core.store.paths import default_sessions_dir

        return self.sessions_dir or default_sessions_dir()

    def resolved_config_path(self) -> Path:
        from perftriage.core.store.paths import default_config_file

        return self.config_path or default_config_file()

    def load_config(self):
        """The validated config, or exit 2 with 'file:line: reason'."""
        import os

        from perftriage.core.store.config import ConfigError, load

        # a file named by --config or $PERFTRIAGE_CONFIG must exist (a typo
        # there would otherwise run with no hosts and no error)
        named = self.config_explicit or bool(os.environ.get("PERFTRIAGE_CONFIG"))
        try:
            return load(self.resolved_config_path(), must_exist=named)
        except ConfigError as exc:
            raise UsageFailure(str(exc)) from None

    def one_host_for_url(self, host: str | None, url: str):
        """(config, registry, host name) for a command that reads ``url`` through
        one host (default localhost); exit 2 on a bad URL or host spec."""
        from perftriage.services.hosts.registry import LOCALHOST, HostSpecError, resolve_hosts
        from perftriage.transport.http_get import BadUrl, parse_http_url

        try:
            parse_http_url(url)
        except BadUrl as exc:
            raise UsageFailure(str(exc)) from None
        config = self.load_config()
        try:
            registry = resolve_hosts(config, [host or LOCALHOST], ssh=self.ssh)
        except HostSpecError as exc:
            raise UsageFailure(str(exc)) from None
        return config, registry, registry.names[0]

    def resolve_hosts(self, config, *, with_localhost: bool | None = None):
        """The HostRegistry for ``-H`` specs (none: localhost + configured hosts),
        honouring ``--ssh-config`` and ``--accept-new-host-keys``; exit 2 on a bad spec."""
        from perftriage.services.hosts.registry import HostSpecError, resolve_hosts

        try:
            return resolve_hosts(config, self.hosts, ssh=self.ssh, with_localhost=with_localhost)
        except HostSpecError as exc:
            raise UsageFailure(str(exc)) from None


SHOWN_PROBLEMS = 20  # a file with a million bad lines: the first ones, then the count


def warn_unreadable(path: object, problems: list) -> None:
    """On stderr: the first lines of a transcript that did not decode (each
    skipped), then how many there were, ``N events unreadable``."""
    from perftriage.core.sanitize import visible
    from perftriage.core.store.stream import unreadable_text

    for problem in problems[:SHOWN_PROBLEMS]:
        click.echo(visible(f"warning: {path}: {problem}"), err=True)
    if problems:
        click.echo(visible(f"warning: {path}: {unreadable_text(len(problems))} (skipped)"),
                   err=True)

