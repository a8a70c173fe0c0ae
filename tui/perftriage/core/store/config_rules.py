"""The config's values, checked after its types: each bad value is one
:class:`~perftriage.core.store.config.ConfigError` (``file:line: reason``),
never a flood of samples, a silently hidden log, or a traceback later.
"""

from __future__ import annotations

import re
from pathlib import Path
from perftriage.core.sanitize import is_safe
from perftriage.core.store.config_schema import Config, ConfigError, locate

MIN_SAMPLE_INTERVAL_S = 0.05  # the same floor as --sample-interval
# an ssh target or ~/.ssh/config alias: user@host:port, [v6]:port; never shell
_SSH_TARGET = re.compile(r"^[A-Za-z0-9_.%+\[\]:@-]+$")


def check(config: Config, text: str, path: Path | str) -> None:
    """Raise ConfigError for the first bad value (in file order of sections)."""
    def fail(where: str, key: str | None, message: str) -> None:
        raise ConfigError(path, locate(text, where, key), message)

    ui = config.ui
    if not ui.sample_interval >= MIN_SAMPLE_INTERVAL_S:
        fail("$.ui", "sample_interval",
             f"ui.sample_interval must be at least {MIN_SAMPLE_INTERVAL_S} s (got {ui.sample_interval:g})")
    if ui.log_ring_lines < 1:
        fail("$.ui", "log_ring_lines", f"ui.log_ring_lines must be at least 1 (got {ui.log_ring_lines})")
    if ui.transcript_log_cap < 0:
        fail("$.ui", "transcript_log_cap",
             f"ui.transcript_log_cap must be 0 or more (got {ui.transcript_log_cap})")
    if not config.fleet.interval > 0:
        fail("$.fleet", "interval", f"fleet.interval must be above 0 s (got {config.fleet.interval:g})")

    names: set[str] = set()
    for i, h in enumerate(config.hosts):
        where = f"$.hosts[{i}]"
        if not h.name.strip():
            fail(where, "name", f"hosts[{i}]: empty host name")
        if not is_safe(h.name) or h.name != h.name.strip():
            fail(where, "name", f"hosts[{i}]: host name {h.name!r} has leading/trailing "
                 "spaces or control characters")
        if h.name in names:
            fail(where, "name", f"hosts[{i}]: duplicate host name {h.name!r}")
        names.add(h.name)
        if h.ssh is not None and (not _SSH_TARGET.match(h.ssh) or h.ssh.startswith("-")):
            fail(where, "ssh", f"host {h.name!r}: invalid ssh target {h.ssh!r}: "
                 "expected user@host[:port] or an ~/.ssh/config alias")
        for log in h.logs:
            if not log.startswith("/"):
                fail(where, "logs", f"host {h.name!r}: log path {log!r} is relative: give an absolute path")
        if h.max_channels < 1:
            fail(where, "max_channels", f"host {h.name!r}: max_channels must be at least 1")
        for key in ("connect_timeout", "keepalive_interval"):
            if getattr(h, key) < 0:
                fail(where, key, f"host {h.name!r}: {key} must be 0 or more")
        _check_metrics_url(h.metrics_url, f"host {h.name!r}", where, fail)

    _check_probes(config, fail)
    _check_servers(config, names, fail)
    for i, pattern in enumerate(config.security.redact):
        try:
            re.compile(pattern)
        except re.error as exc:
            fail("$.security", "redact", f"security.redact[{i}]: not a regex: {exc}")
    for i, rule in enumerate(config.profile.rules):
        try:
            re.compile(rule.pattern)
        except re.error as exc:
            fail(f"$.profile.rules[{i}]", "pattern",
                 f"profile.rules[{i}] ({rule.bucket}): not a regex: {exc}")


def _check_probes(config: Config, fail) -> None:
    from perftriage.core import probes

    templates: set[str] = set()
    for i, t in enumerate(config.probes):
        where = f"$.probes[{i}]"
        if not t.name.strip():
            fail(where, "name", f"probes[{i}]: empty template name")
        if t.name in templates:
            fail(where, "name", f"probes[{i}]: duplicate template name {t.name!r}")
        templates.add(t.name)
        if t.kind not in probes.KINDS:
            fail(where, "kind", f"probe template {t.name!r}: unknown probe kind {t.kind!r}; "
                 f"known: {', '.join(sorted(probes.KINDS))}")
        if t.timeout is not None and not t.timeout > 0:
            fail(where, "timeout", f"probe template {t.name!r}: timeout must be above 0 s")


def _check_servers(config: Config, hosts: set[str], fail) -> None:
    seen: set[str] = set()
    for i, s in enumerate(config.servers):
        where = f"$.servers[{i}]"
        if s.name in seen:
            fail(where, "name", f"servers[{i}]: duplicate server name {s.name!r}")
        seen.add(s.name)
        if s.host != "localhost" and s.host not in hosts:
            fail(where, "host", f"server {s.name!r}: unknown host {s.host!r} "
                 f"(configured: {', '.join(['localhost', *sorted(hosts)])})")
        _check_metrics_url(s.metrics_url, f"server {s.name!r}", where, fail)
        if s.log is not None and not s.log.startswith("/"):
            fail(where, "log", f"server {s.name!r}: log path {s.log!r} is relative: "
                 "give an absolute path")


def _check_metrics_url(url: str | None, owner: str, where: str, fail) -> None:
    """An engine's /metrics is fetched through the host: http://HOST:PORT/PATH only."""
    from perftriage.core.parse.http_url import BadUrl, parse_http_url

    if url is None:
        return
    try:
        parse_http_url(url)
    except BadUrl as exc:
        fail(where, "metrics_url", f"{owner}: metrics_url: {exc}")
