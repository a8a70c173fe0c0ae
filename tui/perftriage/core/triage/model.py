"""The findings vocabulary, kept importable here for code written against
its old home: everything lives in :mod:`perftriage.core.model.findings`
(Finding, Evidence, NextStep, the earlier-phase line, the cause list and
the one ``top()``). New code imports from there."""

from __future__ import annotations

from perftriage.core.model.findings import (  # noqa: F401 - the old names, re-exported
    CAUSES,
    DIAGNOSES,
    HIGH_PCT,
    INFORMATIONAL,
    MODERATE_PCT,
    NEXT_KINDS,
    Earlier,
    Evidence,
    Finding,
    NextKind,
    NextStep,
    Severity,
    pct,
    ranked,
    reportable,
    share,
    top,
)
