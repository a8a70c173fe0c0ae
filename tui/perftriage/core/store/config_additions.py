"""Saving what joined a running cockpit into the config file.

Hosts, followed logs, engine ``/metrics`` URLs and the Prometheus URL added
from the cockpit live in the investigation's transcript; the engineer may
also want them in the config file (``--config``), for every later run. This
edits the file with tomlkit, so the user's comments and layout stay, checks
the result with the strict validator, and replaces the file atomically.
Hypothesis packs are not saved here (they are loaded per investigation).
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import tomlkit

from perftriage.core.store import config as config_mod
from perftriage.core.store.config import ConfigError


@dataclass
class Additions:
    """What to save: hosts (name -> ssh target, None for a local one), logs
    per host, an engine URL per host, the Prometheus URL."""

    hosts: dict[str, str | None] = field(default_factory=dict)
    logs: dict[str, list[str]] = field(default_factory=dict)
    metrics_urls: dict[str, str] = field(default_factory=dict)
    prometheus: str | None = None

    def __bool__(self) -> bool:
        return bool(self.hosts or self.logs or self.metrics_urls or self.prometheus)


def apply(text: str, additions: Additions) -> tuple[str, list[str]]:
    """``text`` with the additions in it, and one line per change made.
    A host already configured keeps its entry (its ``logs`` grow, its
    ``metrics_url`` is set); a new one gets a ``[[hosts]]`` entry."""
    doc = tomlkit.parse(text)
    changes: list[str] = []
    hosts = doc.get("hosts")
    if hosts is None:
        hosts = tomlkit.aot()
        doc.append("hosts", hosts)
    entries = {str(h.get("name")): h for h in hosts}

    def entry(name: str) -> tomlkit.items.Table:
        if name not in entries:
            table = tomlkit.table()
            table.add("name", name)
            ssh = additions.hosts.get(name)
            if ssh:
                table.add("ssh", ssh)
            hosts.append(table)
            entries[name] = hosts[-1]
            changes.append(f"host {name}" + (f" (ssh {ssh})" if ssh else ""))
        return entries[name]

    for name in additions.hosts:
        entry(name)
    for name, paths in additions.logs.items():
        table = entry(name)
        logs = table.get("logs")
        if logs is None:
            table.add("logs", tomlkit.array())
            logs = table["logs"]
        for path in paths:
            if path not in logs:
                logs.append(path)
                changes.append(f"log {name}:{path}")
    for name, url in additions.metrics_urls.items():
        table = entry(name)
        if table.get("metrics_url") != url:
            table["metrics_url"] = url
            changes.append(f"engine {url} on {name}")
    if additions.prometheus:
        fleet = doc.get("fleet")
        if fleet is None:
            doc.append("fleet", tomlkit.table())
            fleet = doc["fleet"]
        if fleet.get("prometheus") != additions.prometheus:
            fleet["prometheus"] = additions.prometheus
            changes.append(f"prometheus {additions.prometheus}")
    if not len(hosts) and "hosts" in doc:
        del doc["hosts"]  # nothing to add: the file as it was
    return tomlkit.dumps(doc), changes


def save(path: Path, additions: Additions) -> list[str]:
    """Write the additions into the config file ``path`` (created when
    missing); returns the changes made. Raises :class:`ConfigError` when the
    result would not be a valid config (nothing written then)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = ""
    try:
        new, changes = apply(text, additions)
    except tomlkit.exceptions.TOMLKitError as exc:
        raise ConfigError(path, None, f"cannot edit: {exc}") from None
    if not changes:
        return []
    config_mod.parse(new, path)  # the strict validator: a bad edit never lands on disk
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".config-", suffix=".toml")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(new)
        if path.exists():
            os.chmod(tmp, path.stat().st_mode & 0o777)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return changes
