"""What a capture expects and keeps, from what the server says and writes.

``/get_server_info`` is the server's word, not a fact: ``tp_size`` of 10^18
once made a capture build ``range(10**18)``. Rank counts are whole numbers
1..MAX_RANKS, else a clear error naming the field and the bound. Rank file
names are made safe for the local disk; two that become equal after that
(``a b-TP-5`` and ``a_b-TP-5``) get distinct local names, so no file is
counted twice.
"""

from __future__ import annotations

import math
import re

MAX_RANKS = 4096  # ranks (tp_size x pp_size, or --ranks) a capture accepts
TRACE_NAME = re.compile(r"\.(?:pt\.)?trace\.json(?:\.gz)?$")
SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]")
_TP = re.compile(r"TP-(\d{1,6})(?!\d)")
MAX_NAME = 200  # characters kept of a remote name (a local name stays under 255 bytes)


class ServerInfoError(ValueError):
    """``/get_server_info`` said something a capture cannot use (one line)."""


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def rank_count(info: dict, key: str) -> int:
    """``info[key]`` as a whole number 1..MAX_RANKS (absent or null: 1)."""
    value = info.get(key)
    if value is None:
        return 1
    whole = (isinstance(value, int) and not isinstance(value, bool)) or (
        isinstance(value, float) and math.isfinite(value) and value.is_integer())
    if not whole or not isinstance(value, (int, float)):
        raise ServerInfoError(f"/get_server_info: {key} is {_shown(value)}, not a whole number "
                              f"(expected 1..{MAX_RANKS})")
    n = int(value)
    if n < 1:
        raise ServerInfoError(f"/get_server_info: {key} is {n}, below the lower bound 1")
    if n > MAX_RANKS:
        raise ServerInfoError(f"/get_server_info: {key} is {_shown(value)}, above the upper "
                              f"bound {MAX_RANKS}")
    return n


def expected_ranks(info: dict) -> int:
    """tp_size x pp_size from SGLang's ``/get_server_info``, bounded."""
    n = rank_count(info, "tp_size") * rank_count(info, "pp_size")
    if n > MAX_RANKS:
        raise ServerInfoError(f"/get_server_info: tp_size x pp_size is {n}, above the upper "
                              f"bound {MAX_RANKS}")
    return n


def missing_ranks(names: list[str], expected: int | None) -> list[str]:
    """``TP-r`` of the expected ranks no file name mentions."""
    if not expected:
        return []
    seen = {int(m.group(1)) for n in names if (m := _TP.search(n))}
    return [f"TP-{r}" for r in range(min(expected, MAX_RANKS)) if r not in seen]


def local_names(names: list[str]) -> dict[str, str]:
    """A distinct safe local file name for each remote name (in order): unsafe
    characters become ``_``; a name that collides gets ``-2``, ``-3``, ...
    before its trace suffix."""
    taken: set[str] = set()
    out: dict[str, str] = {}
    for name in names:
        safe = SAFE_NAME.sub("_", name)
        if len(safe) > MAX_NAME:
            safe = safe[:MAX_NAME - 20] + safe[-20:]
        m = TRACE_NAME.search(safe)
        stem, suffix = (safe[:m.start()], safe[m.start():]) if m else (safe, "")
        candidate, n = safe, 1
        while candidate in taken or candidate in (".", ".."):
            n += 1
            candidate = f"{stem}-{n}{suffix}"
        taken.add(candidate)
        out[name] = candidate
    return out
