"""The triage's rules, each registered where it is written: the cause it
names, its place in the diagnosis and its own witness (what can say, after a
fix, that it is gone) sit on the rule function, in one decorator::

    @rule("kv-pressure", own=("log", "engine"))
    def kv_finding(w: Witnesses, busy_pct: float | None = None) -> Finding | None: ...

A rule **beside the tree** (the default) is called by the diagnosis for
every window, in the order the rules were registered (their modules' import
order in :mod:`.diagnose`, then their order in the file), with the window's
witnesses and the GPU's busy share (None: not known). A rule **in the tree**
(``tree=True``: the host's side under "the GPU idles", the kernels under
"the GPU is busy", communication) is called by :func:`.diagnose.diagnose`
where its parent holds; the decorator still declares its cause and its own
witness here. A function that names several causes is decorated once per
cause.

``busy_time`` marks a confirmed cause that spends the busy GPU's time above
the floor: what a "kernels below their roofline?" lead may not claim again.
``per_request`` marks a cause whose fix changes the batch (more KV room, a
running cap): after it "the step got slower" is read per request at like
batch, since a smaller batch is not a slower step (:mod:`.after_fix`).

The cause ids are :data:`~perftriage.core.model.findings.CAUSES`, the one
list low in the house (the checks' fields and the demo's scenarios read it
there); :func:`check` says, when the diagnosis is imported, which listed
cause has no rule and which rule names a cause not listed, so the two
cannot drift. Adding a cause is its id in that list and its rule here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from perftriage.core.model.findings import Finding
    from perftriage.core.triage.witnesses import Witnesses

# a rule beside the tree: the window's witnesses and the GPU's busy share -> its finding
Beside = Callable[["Witnesses", "float | None"], "Finding | None"]
F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Registered:
    cause: str
    own: tuple[str, ...]  # the witnesses that can say it is gone (after_fix)
    busy_time: bool
    tree: bool  # called by the diagnosis's tree where its parent holds (not by beside())
    per_request: bool  # its outcome after a fix is read per request at like batch
    fn: Callable[..., Any]


RULES: list[Registered] = []


def rule(cause: str, *, own: tuple[str, ...] = (), busy_time: bool = False,
         tree: bool = False, per_request: bool = False) -> Callable[[F], F]:
    """Register the decorated function as a rule naming ``cause`` (see the
    module's doc); the function itself is returned unchanged."""

    def register(fn: F) -> F:
        made = Registered(cause, own, busy_time, tree, per_request, fn)
        for i, r in enumerate(RULES):
            if r.cause == cause and _name(r.fn) == _name(fn):
                RULES[i] = made  # its module read again (importlib.reload): the new one
                return fn
            if r.cause == cause and (r.own, r.busy_time, r.per_request) != (
                    own, busy_time, per_request):
                raise ValueError(f"rule {fn.__qualname__} declares {cause} otherwise than "
                                 f"{r.fn.__qualname__} (own witness, busy_time, per_request)")
        RULES.append(made)
        return fn

    return register


def _name(fn: Callable[..., Any]) -> tuple[str, str]:
    return fn.__module__, fn.__qualname__


def registered() -> list[Registered]:
    """Every rule registered so far: all of them once :mod:`.diagnose` (which
    imports every rule's module) is imported; a reader of the declarations
    (:mod:`.after_fix`) imports it first."""
    return RULES


def beside() -> list[Beside]:
    """The rules beside the tree, in registration order (each function once)."""
    seen: dict[Callable[..., Any], None] = {}
    for r in registered():
        if not r.tree:
            seen.setdefault(r.fn, None)
    return list(seen)


def own_witness() -> dict[str, tuple[str, ...]]:
    """Each cause's own witnesses: the ones that can say it is gone."""
    return {r.cause: r.own for r in registered() if r.own}


def busy_time_causes() -> frozenset[str]:
    return frozenset(r.cause for r in registered() if r.busy_time)


def per_request_causes() -> frozenset[str]:
    return frozenset(r.cause for r in registered() if r.per_request)


def check(causes: Iterable[str]) -> None:
    """Every listed cause has a rule and every rule names a listed cause."""
    listed, ruled = set(causes), {r.cause for r in RULES}
    if listed != ruled:
        raise RuntimeError(
            "the cause list (core/model/findings.py CAUSES) and the triage's rules differ: "
            f"listed without a rule {sorted(listed - ruled)}, "
            f"a rule for an unlisted cause {sorted(ruled - listed)}")
