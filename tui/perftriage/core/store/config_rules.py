"""The config's values, checked after its types: each bad value is one
:class:`~perftriage.core.store.config.ConfigError` (``file:line: reason``),
never a flood of samples, a silently hidden log, or a traceback later.
"""

from __future__ import annotations

import math
import re
import shlex
import string
from pathlib import Path
from urllib.parse import urlsplit

from perftriage.core.parse.ssh_target import parse_target
from perftriage.core.sanitize import is_safe
from perftriage.core.store.config_schema import (
    Config,
    ConfigError,
    FleetConfig,
    HostConfig,
    ProbeTemplate,
    ProfileConfig,
    UIConfig,
    locate,
)

MIN_SAMPLE_INTERVAL_S = 0.05  # the same floor as --sample-interval
# an ssh target or ~/.ssh/config alias: user@host:port, [v6]:port; never shell
_SSH_TARGET = re.compile(r"^[A-Za-z0-9_.%+\[\]:@-]+$")

DAY_S = 86400.0
# every number the config holds: finite, and within (lowest, highest)
BOUNDS: dict[type, dict[str, tuple[float, float]]] = {
    UIConfig: {"sample_interval": (MIN_SAMPLE_INTERVAL_S, 3600.0),
               "log_ring_lines": (1, 10_000_000), "transcript_log_cap": (0, 100_000_000)},
    FleetConfig: {"interval": (0.1, DAY_S), "threshold": (0.0, 1e6)},
    HostConfig: {"max_channels": (1, 1000), "connect_timeout": (0.0, 3600.0),
                 "keepalive_interval": (0.0, DAY_S)},
    ProbeTemplate: {"timeout": (0.001, 7 * DAY_S)},
    ProfileConfig: {"max_trace_mb": (1, 1 << 20)},
}


def check(config: Config, text: str, path: Path | str) -> None:
    """Raise ConfigError for the first bad value (in file order of sections)."""
    def fail(where: str, key: str | None, message: str) -> None:
        raise ConfigError(path, locate(text, where, key), message)

    sections = _numeric_sections(config)
    for where, label, obj in sections:  # a NaN or an infinity passes every comparison below
        _check_numbers(where, label, obj, fail, finite_only=True)
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

        if h.ssh is not None:
            _check_ssh_port(h.ssh, where, "ssh", f"host {h.name!r}", fail)

    for where, label, obj in sections:
        _check_numbers(where, label, obj, fail, finite_only=False)
    _check_fleet(config.fleet, fail)
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
        _check_metrics_url(s.health_url, f"server {s.name!r}", where, fail, key="health_url")
        for key, template in (("command", s.command), ("profile_command", s.profile_command)):
            problem = template_problem(template) if template is not None else None
            if problem:
                fail(where, key, f"server {s.name!r}: {key} template: {problem}")
        if s.profile_command is not None and not template_problem(s.profile_command):
            _check_profile_command(s.name, s.profile_command, s.args, where, fail)
        if s.log is not None and not s.log.startswith("/"):
            fail(where, "log", f"server {s.name!r}: log path {s.log!r} is relative: "
                 "give an absolute path")


def _check_metrics_url(url: str | None, owner: str, where: str, fail,
                       key: str = "metrics_url") -> None:
    """An engine's /metrics is fetched through the host: http://HOST:PORT/PATH only."""
    from perftriage.core.parse.http_url import BadUrl, parse_http_url

    if url is None:
        return
    try:
        parse_http_url(url)
    except BadUrl as exc:
        fail(where, key, f"{owner}: {key}: {exc}")


def _numeric_sections(config: Config) -> list[tuple[str, str, object]]:
    """(msgspec path, how a message names it, the struct) for each struct with numbers."""
    return [("$.ui", "ui.", config.ui), ("$.fleet", "fleet.", config.fleet),
            ("$.profile", "profile.", config.profile),
            *((f"$.hosts[{i}]", f"host {h.name!r}: ", h) for i, h in enumerate(config.hosts)),
            *((f"$.probes[{i}]", f"probe template {t.name!r}: ", t)
              for i, t in enumerate(config.probes))]


def _check_numbers(where: str, label: str, obj: object, fail, *, finite_only: bool) -> None:
    for key, (lowest, highest) in BOUNDS[type(obj)].items():
        value = getattr(obj, key)
        if value is None:
            continue
        if isinstance(value, float) and not math.isfinite(value):
            fail(where, key, f"{label}{key} must be a finite number (got {value})")
        if not finite_only and not lowest <= value <= highest:
            fail(where, key, f"{label}{key} must be between {_number(lowest)} and "
                 f"{_number(highest)} (got {_number(value)})")


def _number(x: float) -> str:
    return f"{x:,}".replace(",", "_") if isinstance(x, int) else f"{x:g}"


def _check_ssh_port(spec: str, where: str, key: str, owner: str, fail) -> None:
    try:
        parse_target(spec)
    except ValueError as exc:
        fail(where, key, f"{owner}: {exc}")


def _check_fleet(fleet: FleetConfig, fail) -> None:
    if fleet.prometheus is not None:
        problem = url_problem(fleet.prometheus)
        if problem:
            fail("$.fleet", "prometheus", f"fleet.prometheus: {problem}")
    if fleet.ssh.count("{host}") != 1 or "{" in fleet.ssh.replace("{host}", "") \
            or "}" in fleet.ssh.replace("{host}", ""):
        fail("$.fleet", "ssh", f"fleet.ssh: {fleet.ssh!r} must hold {{host}} once and no other "
             "placeholder")
    example = fleet.ssh.replace("{host}", "node001")
    if not _SSH_TARGET.match(example):
        fail("$.fleet", "ssh", f"fleet.ssh: invalid ssh target {fleet.ssh!r}: "
             "expected user@{host}[:port]")
    _check_ssh_port(example, "$.fleet", "ssh", "fleet.ssh", fail)


def url_problem(url: str) -> str | None:
    """Why ``url`` (``host:port`` or ``http(s)://host:port/path``) is no HTTP URL, or None."""
    full = url.strip() if "://" in url else "http://" + url.strip()
    if not is_safe(url) or any(c.isspace() for c in url.strip()):
        return f"{url!r} holds spaces or control characters"
    parts = urlsplit(full)
    if parts.scheme not in ("http", "https"):
        return f"{url!r}: only http:// and https:// URLs"
    try:
        parts.port  # noqa: B018 - raises ValueError for a port out of range
    except ValueError:
        return f"{url!r}: the port is not 1-65535"
    if not parts.hostname:
        return f"{url!r}: no host"
    return None


def _check_profile_command(name: str, template: str, args: dict[str, str], where: str,
                           fail) -> None:
    """ncu runs it as one program (argv, no shell): every placeholder has a
    value in ``args`` (no S form gives one), no shell-only syntax."""
    unset = sorted({f for _, f, _, _ in string.Formatter().parse(template)
                    if f and f not in args})
    if unset:
        fail(where, "profile_command", f"server {name!r}: profile_command placeholder(s) "
             f"{', '.join('{' + u + '}' for u in unset)} have no value in args")
    shell = shell_only(template)
    if shell is not None:
        fail(where, "profile_command", f"server {name!r}: profile_command: {shell} needs a "
             "shell; ncu runs one program with its arguments (VAR=value prefixes are fine)")


def shell_only(template: str) -> str | None:
    """What a command template's own text (not its values) does that only a
    shell does — ``$``, a backquote, ``|``, ``;``, ``&&``, a redirection —
    or None. A template that does not parse is :func:`template_problem`'s."""
    try:
        literal = "".join(text for text, _, _, _ in string.Formatter().parse(template))
    except ValueError:
        return None
    for ch, what in (("$", "a $ expansion"), ("`", "a backquote")):
        if ch in literal:
            return what
    lexer = shlex.shlex(literal, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        for token in lexer:
            if token and set(token) <= _OPERATORS:
                return f"the shell operator {token!r}"
    except ValueError as exc:
        return f"an unbalanced quote ({exc})"
    return None


_OPERATORS = frozenset("|&;<>()")


def template_problem(template: str) -> str | None:
    """Why ``template`` is no command template (``{name}`` placeholders only), or None."""
    try:
        fields = list(string.Formatter().parse(template))
    except ValueError as exc:
        return f"{exc} (write {{{{ and }}}} for literal braces)"
    for _, name, spec, conversion in fields:
        if name is None:
            continue
        if not name.isidentifier() or spec or conversion:
            shown = name + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "")
            return f"placeholder {{{shown}}} is not a plain {{name}}"
    return None
