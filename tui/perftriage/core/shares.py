"""A share of the time as the house holds it: finite and within 0-100.

Shares are read from hostile places (a crafted transcript's finding, stacks
summary or profile summary), so each struct that carries one bounds it when
it is built or decoded (``__post_init__`` runs on ``msgspec`` decode and
convert too): a view, the report and ``--json`` then never show 133, 800 or
inf %. A non-finite share is no share: None where the field may be None, 0
where it must be a number."""

from __future__ import annotations

import math

import msgspec


def share(x: float | None) -> float | None:
    """None when ``x`` is no number (None, NaN, an infinity), else within 0-100."""
    if x is None or not math.isfinite(x):
        return None
    return min(100.0, max(0.0, float(x)))


def bound(struct: msgspec.Struct, *names: str, optional: tuple[str, ...] = ()) -> None:
    """Bound the share fields ``names`` (never None) and ``optional`` (None
    allowed) of a (frozen) struct in place: for its ``__post_init__``."""
    for name in names:
        msgspec.structs.force_setattr(struct, name, share(getattr(struct, name)) or 0.0)
    for name in optional:
        msgspec.structs.force_setattr(struct, name, share(getattr(struct, name)))
