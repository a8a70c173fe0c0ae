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
_EXACT_IMMUTABLE = frozenset({str, int, float, bool, type(None), bytes, tuple, frozenset})


def _immutable(value: Any) -> bool:
    return type(value) in _EXACT_IMMUTABLE or isinstance(value, _IMMUTABLE)


def _items_immutable(seq: Any) -> bool:
    return not seq or (_immutable(seq[0]) and _immutable(seq[-1]))


def structural_copy(value: T) -> T:
    """A copy of ``value`` of the same type (see the module)."""
    return _copy(value)


# per dataclass type: its field names, and whether a plain instance dict can
# be copied (no __slots__, no __copy__/__reduce__ of its own); a keyframe
# copies a thousand probes, so this is looked up once per type, not per object
_DATACLASSES: dict[type, tuple[tuple[str, ...], bool]] = {}


def _dataclass_plan(kind: type) -> tuple[tuple[str, ...], bool]:
    plan = _DATACLASSES.get(kind)
    if plan is None:
        plain = (not hasattr(kind, "__slots__") and not hasattr(kind, "__copy__")
                 and kind.__reduce_ex__ is object.__reduce_ex__
                 and kind.__reduce__ is object.__reduce__)
        plan = _DATACLASSES[kind] = (tuple(f.name for f in dataclasses.fields(kind)), plain)
    return plan


def _copy(value: Any) -> Any:
    kind = type(value)
    if kind in _EXACT_IMMUTABLE or isinstance(value, _IMMUTABLE):
        return value
    if kind is deque:
        if _items_immutable(value):
            return deque(value, value.maxlen)
        return deque((_copy(v) for v in value), value.maxlen)
    if kind is list:
        return value[:] if _items_immutable(value) else [_copy(v) for v in value]
    if kind is dict:
        return {k: _copy(v) for k, v in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        names, plain = _dataclass_plan(kind)
        if plain:  # what copy.copy does for such an object, without its detours
            new = object.__new__(kind)
            new.__dict__.update(value.__dict__)
        else:
            new = copy.copy(value)
        for name in names:
            v = getattr(value, name)
            if type(v) not in _EXACT_IMMUTABLE and not isinstance(v, _IMMUTABLE):
                object.__setattr__(new, name, _copy(v))
        return new
    return copy.deepcopy(value)
