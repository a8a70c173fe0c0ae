"""What the stacks tests share: the captured py-spy output and a stacks
probe's result line built around it (as the remote script prints it)."""

from __future__ import annotations

import json

from perftriage.core.probe_kinds.kind import RESULT_MARK
from tests.support.helpers import FIXTURES

STACKS = FIXTURES / "stacks"
TARGET = "/usr/bin/python3 -m tests.support.stall_target"


def text(name: str) -> str:
    return (STACKS / name).read_text()


def result(targets: list[dict], **extra) -> str:
    """A stacks probe's stdout: its result line over ``targets``."""
    data = {"targets": targets, "seen": [], "seen_total": 0, "euid": 0, "ptrace_scope": None,
            "pyspy": "/venv/bin/py-spy", **extra}
    return f"some output\n{RESULT_MARK}{json.dumps(data)}\n"
