"""Probe kinds: each builds a remote command from its arguments and turns
the result into a verdict.

Every argument goes through ``shlex.quote``: probe arguments are data,
never shell. The Python-based kinds pass their arguments as ``argv`` to a
fixed ``python -c SCRIPT`` — an argument is never interpolated into script
text. ``shell`` is the one kind whose argument *is* a shell command, and it
is shown as such.

The kinds themselves live in :mod:`perftriage.core.probe_kinds` (what a kind
is and the helpers they share: :mod:`~perftriage.core.probe_kinds.kind`);
this module collects them in :data:`KINDS`.
User templates (``[[probes]]`` in the config) resolve to a kind plus
arguments through :func:`resolve`.
"""

from __future__ import annotations

import json
import shlex
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from perftriage.core import probe_kinds
from perftriage.core.probe_kinds.kind import (  # noqa: F401 - the probe API, re-exported
    RESULT_MARK,
    HostContext,
    ProbeKind,
    ProbeResult,
    ProbeUsageError,
    Verdict,
    authentic,
    shown_stdout,
    without_result,
)

# every kind by name (kind names are unique: a test holds it)
KINDS: dict[str, ProbeKind] = {kind.name: kind for kind in probe_kinds.ALL}


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


def answer_lines(p: ProbeResult) -> list[str]:
    """What backs a probe's verdict, under its summary: its kind's ``answer``,
    else the detail's error (empty when the summary says it all). The one
    rendering of an answer: the output view and ``perftriage probe`` print it."""
    spec = KINDS.get(p.kind)
    lines = spec.answer(p) if spec is not None and spec.answer is not None else []
    if not lines and p.detail.get("error"):
        return [str(p.detail["error"])]
    return lines


def report_lines(p: ProbeResult) -> tuple[str, list[str]]:
    """What the Markdown report adds for a probe: (heading, lines), empty
    lines when its kind adds nothing."""
    spec = KINDS.get(p.kind)
    if spec is None or spec.report is None:
        return "", []
    return spec.report_heading, spec.report(p)


# --- templates -------------------------------------------------------------


@dataclass
class Resolved:
    kind: str
    args: list[str]
    template: str | None = None
    timeout: float | None = None


def resolve(name: str, args: list[str], templates: Iterable[Any] = ()) -> Resolved:
    """A kind name or a user template (``[[probes]]``: name, kind, args).

    A template's own arguments come first; extra ``args`` are appended (for
    a ``shell`` template: quoted, see :func:`shell_template`). Kind names win
    over template names (a template cannot shadow ``import``).
    """
    if name in KINDS:
        spec = KINDS[name]
        spec.validate(list(args))
        return Resolved(name, list(args))
    for t in templates:
        if t.name == name:
            spec = get(t.kind)
            full = [shell_template(t.args, args)] if t.kind == "shell" else [*t.args, *args]
            spec.validate(full)
            return Resolved(t.kind, full, template=t.name, timeout=t.timeout)
    known = sorted(KINDS) + sorted(t.name for t in templates)
    raise ProbeUsageError(f"unknown probe kind {name!r}; known: {', '.join(known)}")


def shell_template(template: Sequence[str], args: Sequence[str]) -> str:
    """The command of a ``shell`` template given extra ``args``: each is
    ``shlex.quote``d (data, never shell) and put where ``{args}`` is, or at
    the end; ``{args_raw}`` is the explicit way to put them in unquoted. Only
    these two words are replaced: the shell's own braces (``${HOME}``, awk's
    ``{print $1}``) stay as they are."""
    command = " ".join(template)
    if "{args_raw}" in command:
        return command.replace("{args_raw}", " ".join(args))
    quoted = " ".join(shlex.quote(a) for a in args)
    if "{args}" in command:
        return command.replace("{args}", quoted)
    return f"{command} {quoted}" if quoted else command


# --- comparing a fan-out ----------------------------------------------------


def compare_key(kind: str, status: str, summary: str, detail: dict[str, Any]) -> Any:
    spec = KINDS.get(kind)
    if spec is not None and spec.compare is not None and status in ("ok", "failed", "no-match"):
        return (status, spec.compare(status, summary, detail))
    return (status, summary)


def differing(results: Sequence[tuple[str, Any]]) -> set[str]:
    """Ids whose key is not the most common one; all ids when there is a
    tie for most common. ``results`` is ``[(probe_id, key), ...]``."""
    if len(results) < 2:
        return set()
    counts = Counter(json.dumps(k, sort_keys=True, default=str) for _, k in results)
    if len(counts) == 1:
        return set()
    (top, n), *rest = counts.most_common()
    if rest and rest[0][1] == n:
        return {pid for pid, _ in results}
    return {pid for pid, k in results if json.dumps(k, sort_keys=True, default=str) != top}
