"""``version PKG...``: installed distribution versions.

Answered by the shell where it can be, without starting Python: when the
host's python is a virtual environment's (``pyvenv.cfg`` next to its
``bin/``, system site-packages off, no ``PYTHONPATH``), its one
``lib/python3*/site-packages`` is where ``importlib.metadata`` would look,
so one ``awk`` reads the ``Version:`` header of each matching
``NAME-VER.dist-info/METADATA`` (names compared as importlib compares them:
lower case, runs of ``-_.`` as one ``_``). Anything else — not a venv, a
name without a dist-info there (maybe an egg-info, or missing), two
site-packages — runs the Python lookup instead, in the same command
(``exec python -c``), so an answer is never guessed.

The Python lookup also answers for an import name that is not a
distribution's name (the box that has ``import flashinfer`` working while
``pip show flashinfer`` finds nothing: the distribution is
``flashinfer-python``): ``importlib.metadata.packages_distributions()`` maps
it to the distributions that provide it, and both names are shown.
``nvidia`` (the namespace of the ``nvidia-*`` CUDA wheels) lists every
distribution under it.

Either way each distribution comes with its top-level import names and,
for each, the ``__version__`` its source assigns, read as text and never
imported (a stale copy, or a wheel whose metadata was not bumped, shows as
"``flashinfer.__version__ is 0.5.2, not 0.5.3``"); the rule, and when a
module is imported after all, is in :mod:`.version_lookup`.

The shell's answer is the marked result line the Python lookup prints
too (so it never shows in the output), holding the versions, the
distributions' names and their import rows in the order the names were
given (``sh_versions``, ``sh_dists``); the verdict's ``dists`` has the
Python lookup's shape whichever answered.
"""

from __future__ import annotations

import shlex

from perftriage.core.sanitize import visible
from perftriage.core.probe_kinds.kind import (
    ProbeKind,
    Verdict,
    lookup_verdict,
    no_result,
    script_result,
)
from perftriage.core.probe_kinds.version_lookup import (
    KEY,
    METADATA_AWK,
    PYTHON_LOOKUP,
    SET_AT_IMPORT,
    VERSION_SCRIPT,
)

FOUND = "{name} {value}"
MISSING = "{name} MISSING"


def _build(args: list[str], ctx) -> str:
    return " ".join(["sh", "-c", shlex.quote(VERSION_SCRIPT), "version",
                     *(shlex.quote(a) for a in (ctx.python, PYTHON_LOOKUP, METADATA_AWK, *args))])


def _dist_words(name: str, rows: list) -> str:
    """``name``'s answer: the distributions, their import names when they
    differ, module versions that disagree and those not read."""
    words = []
    for row in rows:
        if not isinstance(row, dict):
            continue
        dist, ver = str(row.get("dist")), str(row.get("version"))
        text = f"{dist} {ver}" if _same(dist, name) else f"{name} → {dist} {ver}"
        mods = [m for m in row.get("imports") or [] if isinstance(m, dict)]
        shown = [str(m.get("module")) for m in mods]
        # the import names, unless one that is spelled as the distribution
        if shown and shown != [dist]:
            text += f" (import {', '.join(shown)})"
        for m in mods:
            mv = m.get("module_version")
            if mv and str(mv) != ver:
                text += f"; {m.get('module')}.__version__ is {mv}, not {ver}"
            elif not mv and m.get("note") == SET_AT_IMPORT:
                text += f"; {m.get('module')}.__version__ not read ({SET_AT_IMPORT})"
        words.append(text)
    return "; ".join(words) if words else MISSING.format(name=name)


def _same(a: str, b: str) -> bool:
    """Names equal as importlib compares them (case, and ``-_.`` alike)."""
    def norm(s: str) -> str:
        return s.lower().replace("-", "_").replace(".", "_")
    return norm(a) == norm(b)


def _interpret(args: list[str], status: int | None, out: str, err: str) -> Verdict:
    data = script_result(out)
    if data is None:
        return no_result(status, err)
    shell = data.get("sh_versions")
    if shell is None:  # the Python lookup answered
        verdict = lookup_verdict(data, KEY, FOUND, MISSING)
        dists = data.get("dists")
        if isinstance(dists, dict) and dists:
            verdict.summary = _summary(dists)
        return verdict
    rows = data.get("sh_dists")
    if not isinstance(shell, list) or len(shell) != len(args) \
            or not isinstance(rows, list) or len(rows) != len(args):
        return no_result(status, err)
    versions: dict[str, str | None] = {name: str(v) for name, v in zip(args, shell)}
    dists = {name: [{**row, "version": str(v)}] if isinstance(row, dict) else []
             for name, v, row in zip(args, shell, rows)}
    verdict = lookup_verdict({KEY: versions, "dists": dists, "missing": [], "argv": list(args),
                              "via": "dist-info METADATA (no Python started)"},
                             KEY, FOUND, MISSING)
    verdict.summary = _summary(dists)
    return verdict


def _summary(dists: dict) -> str:
    return visible(", ".join(_dist_words(str(name), rows if isinstance(rows, list) else [])
                             for name, rows in dists.items()))


VERSION_KIND = ProbeKind(
    name="version",
    usage="version PKG...",
    help="installed distribution versions (a venv's dist-info read by the shell, "
         "else importlib.metadata) with their import names; a module __version__ that "
         "differs is read from its source, not imported (an import name whose source "
         "computes it is imported); missing ones reported",
    min_args=1,
    max_args=None,
    build=_build,
    interpret=_interpret,
    compare=lambda s, summ, d: d.get(KEY),
    key="v",
    label="Version",
)

