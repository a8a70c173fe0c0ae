"""Host lists folded into node sets (``node[001-064]``), like ClusterShell's
``clubak``, with ClusterShell's own :class:`NodeSet` (no hand-written folding).

ClusterShell reads ``@`` as a group, ``,`` ``!`` ``&`` ``^`` as set
operators and ``[`` as a range: a host name holding any of those (an
``user@host:port`` spec, say) would be misread, so only plain names
(letters, digits, ``.``, ``_``, ``-``) are folded; any other name is kept
as it is, after the folded ones. Names are never resolved as groups.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

from ClusterShell.NodeSet import RESOLVER_NOGROUP, NodeSet, NodeSetException

NodeSetError = NodeSetException

_PLAIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*\Z")


def fold(names: Iterable[str]) -> str:
    """``["node01", "node02", "node03"]`` -> ``"node[01-03]"``."""
    plain: list[str] = []
    other: list[str] = []
    seen: set[str] = set()
    for name in names:
        if name in seen:
            continue
        seen.add(name)
        (plain if _PLAIN.match(name) else other).append(name)
    parts = [_fold_plain(tuple(plain))] if plain else []
    parts.extend(other)
    return ",".join(parts)


@lru_cache(maxsize=64)
def _fold_plain(names: tuple[str, ...]) -> str:
    # remembered: a fleet view folds the same few hundred names every refresh
    return str(NodeSet.fromlist(names, resolver=RESOLVER_NOGROUP))


def expand(nodeset: str) -> list[str]:
    """``"node[01-03]"`` -> ``["node01", "node02", "node03"]`` (plain names only)."""
    return list(NodeSet(nodeset, resolver=RESOLVER_NOGROUP))
