"""What the config file (TOML) may hold: the sections as strict structs,
the :class:`ConfigError` a bad file raises, and :func:`locate`, which finds
the line an error is about. Loading is :mod:`perftriage.core.store.config`.
"""

from __future__ import annotations

import re
from pathlib import Path

import msgspec


class ConfigError(Exception):
    def __init__(self, path: Path | str, line: int | None, message: str) -> None:
        self.path, self.line, self.message = str(path), line, message
        where = f"{path}:{line}" if line else str(path)
        super().__init__(f"{where}: {message}")


class Strict(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    pass


class HostConfig(Strict):
    name: str
    ssh: str | None = None  # "user@host:port" or an ~/.ssh/config alias; None = local
    preamble: str | None = None
    python: str = "python3"
    logs: list[str] = []
    tags: list[str] = []
    accept_new_host_key: bool = False
    max_channels: int = 8
    connect_timeout: float = 10.0
    keepalive_interval: float = 15.0
    metrics_url: str | None = None  # engine /metrics, fetched through this host


class ProbeTemplate(Strict):
    name: str
    kind: str
    args: list[str] = []
    description: str = ""
    timeout: float | None = None


class ServerProfile(Strict):
    name: str
    command: str
    host: str = "localhost"
    log: str | None = None
    ready_pattern: str | None = None
    health_url: str | None = None
    metrics_url: str | None = None  # engine /metrics on the profile's host
    args: dict[str, str] = {}
    workdir: str | None = None
    # what the triage's ncu step profiles (a bounded run, e.g. a one-batch bench), with
    # the placeholders of `command`; never the server's own command (a second copy)
    profile_command: str | None = None


class UIConfig(Strict):
    theme: str | None = None
    keymap: dict[str, str] = {}
    sample_interval: float = 1.0
    log_ring_lines: int = 100_000
    transcript_log_cap: int = 200_000
    show_power_history: bool = False


class FleetConfig(Strict):
    prometheus: str | None = None  # http://host:9090, read by the Fleet view and `perftriage fleet`
    interval: float = 5.0  # seconds between fleet reads in the cockpit
    threshold: float = 5.0  # robust distance |value - median| / MAD past which a value is an outlier
    ssh: str = "{host}"  # how to reach a fleet host picked in the Fleet view ({host}: its name)
    preamble: str | None = None  # shell lines run first on such a host (venv, PATH)


class SecurityConfig(Strict):
    redact: list[str] = []  # extra regexes whose matches never reach a transcript or report


class KernelRuleConfig(Strict):
    bucket: str  # a built-in bucket (gemm, moe, ...) or a new name
    pattern: str  # regex searched in the kernel name, case-insensitive


class ProfileConfig(Strict):
    # kernel-name rules tried before the built-in table (core/profile/buckets.py)
    rules: list[KernelRuleConfig] = []
    steps: int = 5  # decode steps a capture asks the engine to profile
    timeout: float = 120.0  # seconds to wait for all rank files of a capture
    vllm_trace_dir: str | None = None  # where a vLLM server writes its traces
    # the largest trace file read, in MiB, on disk and once decompressed
    # (core/profile/reader.py)
    max_trace_mb: int = 1024


class TriageConfig(Strict):
    # run the cheap witnesses a finding asks for (stacks, engine /metrics, a log
    # scan) without a key: never a profile capture or ncu, once per phase per kind
    auto: bool = False


class HypothesisEntry(Strict):
    """One ``[[hypotheses]]`` table (config or hypothesis pack): a title, a
    note and an optional check (an expression over signals, core/checks),
    held ``for`` ("10s", or seconds) before it counts as supported, in a
    ``scope`` (gpu / host / engine / session, optionally ``:PATTERN``)."""

    title: str
    note: str = ""
    check: str = ""
    for_: str | float = msgspec.field(name="for", default="")
    scope: str = ""


class Config(Strict):
    hosts: list[HostConfig] = []
    probes: list[ProbeTemplate] = []
    servers: list[ServerProfile] = []
    ui: UIConfig = msgspec.field(default_factory=UIConfig)
    fleet: FleetConfig = msgspec.field(default_factory=FleetConfig)
    security: SecurityConfig = msgspec.field(default_factory=SecurityConfig)
    profile: ProfileConfig = msgspec.field(default_factory=ProfileConfig)
    triage: TriageConfig = msgspec.field(default_factory=TriageConfig)
    hypotheses: list[HypothesisEntry] = []

    def host(self, name: str) -> HostConfig | None:
        return next((h for h in self.hosts if h.name == name), None)


_PATH_PART = re.compile(r"\.(\w+)|\[(\d+)\]")


def locate(text: str, path: str, key: str | None) -> int | None:
    """Best-effort line number for a msgspec error path like ``$.hosts[1].nmae``."""
    parts = [m.group(1) if m.group(1) else int(m.group(2)) for m in _PATH_PART.finditer(path)]
    if key:
        parts.append(key)
    lines = text.splitlines()
    table: str | None = None
    seen: dict[str, int] = {}
    # Find the array-of-tables block, then the key inside it.
    target_table = parts[0] if parts and isinstance(parts[0], str) else None
    target_index = parts[1] if len(parts) > 1 and isinstance(parts[1], int) else None
    leaf = next((p for p in reversed(parts) if isinstance(p, str)), None)
    block_start: int | None = None
    for i, raw in enumerate(lines, 1):
        line = raw.strip()
        m = re.match(r"^\[\[\s*([\w.]+)\s*\]\]", line) or re.match(r"^\[\s*([\w.]+)\s*\]", line)
        if m:
            table = m.group(1)
            idx = seen.get(table, -1) + 1 if line.startswith("[[") else 0
            seen[table] = idx
            in_block = table == target_table and (target_index is None or idx == target_index)
            if in_block and block_start is None:
                block_start = i
            elif block_start is not None and not in_block:
                if leaf == target_table:
                    return block_start
                break
            continue
        in_target = table == target_table and (
            target_index is None or (table is not None and seen.get(table) == target_index)
        )
        if leaf and (in_target or (table is None and target_table == leaf)):
            if re.match(rf'^"?{re.escape(leaf)}"?\s*=', line):
                return i
    if block_start is not None:
        return block_start
    if leaf:  # inline tables and dotted keys: first mention of the key
        for i, raw in enumerate(lines, 1):
            if re.match(rf'^\s*"?{re.escape(leaf)}"?\s*=', raw):
                return i
    return None
