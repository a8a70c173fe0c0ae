"""Fast structural copies of a session state (a player's keyframes).

``copy.deepcopy`` of a state with 10k-line log rings and a few hundred
history points per GPU spends most of its time copying tuples and strings
that nothing ever mutates (60 % of a first scan was deepcopy). The reducer
mutates containers (dicts, lists, deques) and dataclass instances in place,
but never an event, a string, a number or a tuple. So a snapshot copies the
containers and dataclasses and shares everything immutable. A value of a
kind not known here is deep-copied: a state field added later stays correct,
only slower.
"""

from __future__ import annotations

import copy
import dataclasses
from collections import deque
from enum import Enum
from typing import Any, TypeVar

import msgspec

T = TypeVar("T")
_IMMUTABLE = (str, int, float, bool, type(None), bytes, tuple, frozenset, Enum, msgspec.Struct)


def _immutable(value: Any) -> bool:
    return isinstance(value, _IMMUTABLE)


def _items_immutable(seq: Any) -> bool:
    return not seq or (_immutable(seq[0]) and _immutable(seq[-1]))


def structural_copy(value: T) -> T:
    """A copy of ``value`` of the same type (see the module)."""
    return _copy(value)


def _copy(value: Any) -> Any:
    if _immutable(value):
        return value
    kind = type(value)
    if kind is deque:
        if _items_immutable(value):
            return deque(value, value.maxlen)
        return deque((_copy(v) for v in value), value.maxlen)
    if kind is list:
        return value[:] if _items_immutable(value) else [_copy(v) for v in value]
    if kind is dict:
        return {k: _copy(v) for k, v in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        new = copy.copy(value)
        for f in dataclasses.fields(value):
            v = getattr(value, f.name)
            if not _immutable(v):
                object.__setattr__(new, f.name, _copy(v))
        return new
    return copy.deepcopy(value)
