"""Growing a running cockpit: hosts, logs, engines, Prometheus, hypothesis packs.

What the engineer adds from the palette or the keys joins at once (no
restart), is recorded as a ``cockpit.added`` / ``cockpit.removed`` event
(a followed log is its ``log.opened``), and a continued investigation
starts it again (:func:`resume`). Saving an addition into the config file is
:mod:`perftriage.core.store.config_additions`, offered separately.

Every function raises :class:`GrowError` with a one-line reason the UI shows.
"""

from __future__ import annotations

from typing import Any

from perftriage.core.model import events as ev

# a services.cockpit.Cockpit (not imported: the cockpit imports this module)
Cockpit = Any



class GrowError(Exception):
    pass


def _live(cockpit: Cockpit) -> None:
    if cockpit.replay:
        raise GrowError("a replay is read-only: nothing joins it")


# --- hosts -------------------------------------------------------------------


def add_host(cockpit: Cockpit, spec: str, *, record: bool = True) -> list[str]:
    """Add the host(s) ``spec`` names (``user@host[:port]``, an ssh alias, a
    config name or a node set); returns the names added (none: all there)."""
    from perftriage.services.hosts.registry import HostSpecError, resolve_hosts  # noqa: PLC0415

    _live(cockpit)
    spec = spec.strip()
    if not spec:
        raise GrowError("a host: user@host, an ssh alias or a config name")
    try:
        # reached like the hosts given at start (--ssh-config, --accept-new-host-keys)
        found = resolve_hosts(cockpit.config, [spec], ssh=cockpit.registry.ssh,
                              with_localhost=False)
    except (HostSpecError, ValueError) as exc:
        raise GrowError(str(exc)) from None
    added = [h.name for h in found.hosts.values() if h.name not in cockpit.registry.hosts]
    for name in added:
        cockpit.add_host(found.hosts[name])
    if record and added:
        cockpit.session.emit(ev.CockpitAdded(what="host", value=spec))
    return added


async def remove_host(cockpit: Cockpit, name: str) -> None:
    """Stop sampling, following and probing ``name``; its transport is closed."""
    _live(cockpit)
    host = cockpit.registry.hosts.get(name)
    if host is None:
        raise GrowError(f"no host {name!r} in this cockpit")
    for sid, src in list(cockpit.logs.sources.items()):
        if src.host == name:
            await cockpit.logs.close(sid, "host removed")
    for source in list(cockpit.sources):
        if source.host == name:
            await cockpit.sources.remove(source.name)
    del cockpit.registry.hosts[name]
    await host.transport.close()
    cockpit.session.emit(ev.CockpitRemoved(what="host", value=name))


# --- logs, engines, Prometheus -------------------------------------------------


def follow_log(cockpit: Cockpit, host: str, path: str) -> str:
    """Follow ``path`` on ``host``; returns the log source id."""
    _live(cockpit)
    if not path.strip():
        raise GrowError("a log: the path of the file to follow")
    if host not in cockpit.registry.hosts:
        raise GrowError(f"no host {host!r} in this cockpit; known: {', '.join(cockpit.registry.names)}")
    return cockpit.logs.open_file(host, path.strip())


def add_engine(cockpit: Cockpit, url: str, host: str = "localhost", *, record: bool = True) -> str:
    """Scrape an SGLang/vLLM ``/metrics`` URL as seen from ``host``; returns the source name."""
    from perftriage.services.sources.engine_metrics import EngineMetricsSource  # noqa: PLC0415

    _live(cockpit)
    url = _http_url(url, "an engine URL")
    if host not in cockpit.registry.hosts:
        raise GrowError(f"no host {host!r} in this cockpit; known: {', '.join(cockpit.registry.names)}")
    name = f"engine:{host}"
    n = 1
    while cockpit.sources.get(name) is not None:
        n += 1
        name = f"engine:{host}-{n}"
    source = EngineMetricsSource(cockpit.session.emit, host, cockpit.registry.get(host).transport,
                                 url, name=name)
    if cockpit.started:
        cockpit.add_source(source)
    if record:
        cockpit.session.emit(ev.CockpitAdded(what="engine", value=url, host=host))
    return name


def set_prometheus(cockpit: Cockpit, url: str, *, record: bool = True) -> str:
    """Read the fleet from ``url`` (replaces the Prometheus read until now);
    returns the URL as normalised."""
    from perftriage.services.sources.fleet import configured_fleet, normalize_url  # noqa: PLC0415

    _live(cockpit)
    try:
        url = normalize_url(url.strip())
    except ValueError as exc:
        raise GrowError(f"a Prometheus URL: {exc}") from None
    cockpit.config.fleet.prometheus = url
    fleet = configured_fleet(cockpit.config, cockpit.session)
    if cockpit.started and fleet is not None:
        old = cockpit.sources.get(fleet.name)
        if old is not None:
            cockpit.spawn(_replace(cockpit, old.name, fleet))
        else:
            cockpit.add_source(fleet)
    if record:
        cockpit.session.emit(ev.CockpitAdded(what="prometheus", value=url))
    return url


async def _replace(cockpit: Cockpit, old: str, new: Any) -> None:
    await cockpit.sources.remove(old)
    cockpit.add_source(new)


def _http_url(url: str, what: str) -> str:
    from urllib.parse import urlsplit  # noqa: PLC0415

    url = url.strip()
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise GrowError(f"{what}: an http(s) URL with a host, e.g. http://127.0.0.1:30000/metrics")
    return url


# --- hypothesis packs ------------------------------------------------------------


def load_pack(cockpit: Cockpit, spec: str, *, record: bool = True) -> int:
    """Load the hypothesis pack ``spec`` (a file or a bundled name); returns
    the hypotheses added."""
    from perftriage.core.checks import pack  # noqa: PLC0415
    from perftriage.core.store.config import ConfigError  # noqa: PLC0415
    from perftriage.services.sources.checks import add_hypotheses  # noqa: PLC0415

    _live(cockpit)
    try:
        hypotheses = pack.load(spec.strip())
    except ConfigError as exc:  # file:line and the check's error position
        raise GrowError(str(exc)) from None
    except (OSError, ValueError) as exc:
        raise GrowError(f"pack {spec!r}: {exc}") from None
    added = add_hypotheses(cockpit.session, hypotheses)
    if record:
        cockpit.session.emit(ev.CockpitAdded(what="pack", value=spec.strip()))
    return added


# --- a continued investigation ------------------------------------------------------


def resume(cockpit: Cockpit) -> list[str]:
    """Start again what the investigation's earlier runs had added and the
    logs they followed (each from the line after the last one read, so what
    the server wrote meanwhile is read too, and nothing twice).
    Returns one line per thing that could not be started."""
    problems: list[str] = []
    state = cockpit.session.state
    for added in list(state.additions):
        try:
            if added.what == "host":
                add_host(cockpit, added.value, record=False)
            elif added.what == "engine":
                add_engine(cockpit, added.value, added.host or "localhost", record=False)
            elif added.what == "prometheus" and cockpit.config.fleet.prometheus != added.value:
                set_prometheus(cockpit, added.value, record=False)
        except GrowError as exc:
            problems.append(f"{added.what} {added.value}: {exc}")
    followed = {(s.host, s.path) for s in cockpit.logs.sources.values()}
    for log in list(state.logs.values()):
        was_followed = log.open or log.closed_reason == "quit"
        if log.kind != "file" or not was_followed or (log.host, log.path) in followed:
            continue
        if log.host not in cockpit.registry.hosts:
            problems.append(f"log {log.host}:{log.path}: its host is not in this run")
            continue
        cockpit.logs.open_file(log.host, log.path, source_id=log.source_id,
                               after_line=log.total_lines)
        followed.add((log.host, log.path))
    for line in problems:
        cockpit.session.emit(ev.NoteAdded(text=f"not started again: {line}"))
    return problems


# --- saving into the config file ---------------------------------------------------


def unsaved(cockpit: Cockpit):
    """What joined this investigation and is not in the config yet, as
    :class:`perftriage.core.store.config_additions.Additions`."""
    from perftriage.core.store.config_additions import Additions  # noqa: PLC0415

    config, state = cockpit.saved_config or cockpit.config, cockpit.session.state
    out = Additions()
    configured = {h.name for h in config.hosts}
    for added in state.additions:
        if added.what == "host":
            for name, host in cockpit.registry.hosts.items():
                if name not in configured and (name == added.value or host.config.ssh == added.value):
                    out.hosts[name] = host.config.ssh
        elif added.what == "engine" and added.host:
            hc = config.host(added.host)
            if hc is None or hc.metrics_url != added.value:
                out.metrics_urls[added.host] = added.value
        elif added.what == "prometheus" and added.value != cockpit.configured_prometheus:
            out.prometheus = added.value
    for log in state.logs.values():
        hc = config.host(log.host)
        if log.kind == "file" and log.open and (hc is None or log.path not in hc.logs):
            out.logs.setdefault(log.host, []).append(log.path)
    return out


def save_to_config(cockpit: Cockpit, path) -> list[str]:
    """Write :func:`unsaved` into the config file ``path``; the changes made."""
    from perftriage.core.store.config import ConfigError, load  # noqa: PLC0415
    from perftriage.core.store.config_additions import save  # noqa: PLC0415

    additions = unsaved(cockpit)
    if not additions:
        return []
    try:
        changes = save(path, additions)
    except (ConfigError, OSError) as exc:
        raise GrowError(f"config not saved: {exc}") from None
    cockpit.saved_config = load(path)  # now configured: not offered again
    cockpit.configured_prometheus = cockpit.saved_config.fleet.prometheus
    return changes
