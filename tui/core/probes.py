"""Probe kinds: each builds a remote command from its arguments and turns
the result into a verdict.

Every argument goes through ``shlex.quote``: probe arguments are data,
never shell. ``shell`` is the one kind whose argument *is* a shell command,
and it is shown as such.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


class ProbeUsageError(ValueError):
    """Bad probe arguments (unknown kind, missing argument)."""


@dataclass
class Verdict:
    status: str  # ok / failed / error
    summary: str = ""
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass
class HostContext:
    """What a probe needs to know about the host it runs on."""

    python: str = "python3"


@dataclass
class ProbeKind:
    name: str
    usage: str
    help: str
    min_args: int
    max_args: int | None
    build: Callable[[list[str], HostContext], str]
    interpret: Callable[[list[str], int | None, str, str], Verdict]

    def validate(self, args: list[str]) -> None:
        if len(args) < self.min_args:
            raise ProbeUsageError(f"usage: {self.usage}")
        if self.max_args is not None and len(args) > self.max_args:
            raise ProbeUsageError(f"usage: {self.usage} (too many arguments)")


KINDS: dict[str, ProbeKind] = {}


def register(kind: ProbeKind) -> ProbeKind:
    KINDS[kind.name] = kind
    return kind


def get(name: str) -> ProbeKind:
    try:
        return KINDS[name]
    except KeyError:
        raise ProbeUsageError(
            f"unknown probe kind {name!r}; known: {', '.join(sorted(KINDS))}"
        ) from None


def build_command(kind: str, args: list[str], ctx: HostContext | None = None) -> str:
    spec = get(kind)
    spec.validate(args)
    return spec.build(args, ctx or HostContext())


def _exit_verdict(args: list[str], status: int | None, out: str, err: str) -> Verdict:
    if status == 0:
        return Verdict("ok", (out.strip().splitlines() or ["exit 0"])[-1][:200])
    last = (err.strip() or out.strip()).splitlines()
    return Verdict("failed", f"exit {status}" + (f": {last[-1][:200]}" if last else ""))


register(
    ProbeKind(
        name="shell",
        usage="shell COMMAND",
        help="raw shell command (runs as shell, not quoted)",
        min_args=1,
        max_args=None,
        build=lambda args, ctx: " ".join(args),
        interpret=_exit_verdict,
    )
)

# `import` is defined here in its first form; tui.core.probe_kinds adds the rest.
_IMPORT_SCRIPT = r"""
import importlib, sys, time, json
spec = sys.argv[1]
mod, _, attr = spec.partition(":")
t0 = time.perf_counter()
try:
    m = importlib.import_module(mod)
    if attr:
        getattr(m, attr)
except BaseException as e:
    print(json.dumps({"ok": False, "error": type(e).__name__, "message": str(e)}))
    sys.exit(1)
print(json.dumps({"ok": True, "file": getattr(m, "__file__", None),
                  "version": str(getattr(m, "__version__", "") or "") or None,
                  "import_s": round(time.perf_counter() - t0, 4)}))
"""


def _python(ctx: HostContext, script: str, args: list[str]) -> str:
    return " ".join(
        [shlex.quote(ctx.python), "-c", shlex.quote(script), *(shlex.quote(a) for a in args)]
    )


def _import_verdict(args: list[str], status: int | None, out: str, err: str) -> Verdict:
    import json

    last = out.strip().splitlines()[-1] if out.strip() else ""
    try:
        data = json.loads(last)
    except ValueError:
        return Verdict("error", f"no result (exit {status}): {err.strip()[-200:]}")
    if data.get("ok"):
        return Verdict("ok", f"{args[0]} imported from {data.get('file')}", data)
    return Verdict("failed", f"{data['error']}: {data['message']}", data)


register(
    ProbeKind(
        name="import",
        usage="import MODULE[:ATTR]",
        help="import a module (and attribute) in the host's python",
        min_args=1,
        max_args=1,
        build=lambda args, ctx: _python(ctx, _IMPORT_SCRIPT, args),
        interpret=_import_verdict,
    )
)
