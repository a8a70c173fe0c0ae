"""The one shape of everything that feeds events from a host.

A *source* is a long-running producer: the local NVML sampler, the remote
nvidia-smi sampler, a followed log, GPU bandwidth counters, an engine's
``/metrics``, a Prometheus fleet query. Each one

- has a ``name`` (unique in a cockpit, e.g. ``"gpu:node1"``) and the ``host``
  it reads from (``None`` for fleet-wide sources);
- ``run()``s until cancelled, emitting events through the session it was
  given (``Session.emit`` is the only way in);
- reports its connection ``state`` (one of :data:`SOURCE_STATES`) and the
  ``reason`` for it, so panes can say *why* a source is not live;
- ``stop()``s cleanly: nothing it started on a host survives it.

The :class:`perftriage.services.cockpit.Cockpit` keeps a list of sources and
starts and stops them; it never reaches into one. Each module declares its
kind of source as a :class:`SourceKind` (how it starts, and how it joins a
running cockpit), listed once in ``factories.py``. Adding a data source is
that module, its line there, a parser in ``core/parse/`` and a pane (see
docs/architecture.md).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

from perftriage.core.model.events import Growable

if TYPE_CHECKING:  # pragma: no cover
    from perftriage.core.store.config import Config
    from perftriage.services.hosts.registry import HostRegistry
    from perftriage.services.investigation.session import Session

SourceState = Literal["starting", "up", "retrying", "down", "stopped"]
SOURCE_STATES: tuple[str, ...] = ("starting", "up", "retrying", "down", "stopped")


async def cancel_and_wait(task: asyncio.Task) -> None:
    """Cancel ``task`` and wait until it has finished, whatever it raised;
    a cancellation of the caller itself still propagates (not swallowed)."""
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        current = asyncio.current_task()
        if current is not None and current.cancelling():
            raise
    except Exception:  # noqa: BLE001 - the source reported it already
        pass


@runtime_checkable
class Source(Protocol):
    name: str

    @property
    def host(self) -> str | None:
        """The host it reads from (read-only here: a source may narrow it to ``str``)."""

    @property
    def state(self) -> SourceState: ...

    @property
    def reason(self) -> str | None: ...

    async def run(self) -> None:
        """Produce events until cancelled (or until there is nothing left to read)."""

    async def stop(self) -> None:
        """Stop producing and end whatever was started remotely; idempotent."""


class BaseSource:
    """Bookkeeping most sources share: state + reason, and a stop that
    cancels the task running :meth:`run` (set by :class:`SourceSet`)."""

    name: str = "source"
    host: str | None = None

    def __init__(self) -> None:
        self._state: SourceState = "starting"
        self._reason: str | None = None
        self._task: asyncio.Task | None = None

    @property
    def state(self) -> SourceState:
        return self._state

    @property
    def reason(self) -> str | None:
        return self._reason

    def set_state(self, state: SourceState, reason: str | None = None) -> None:
        self._state, self._reason = state, reason

    async def run(self) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None and not task.done():
            await cancel_and_wait(task)
        self.set_state("stopped", self._reason)


class SourceSet:
    """The sources a cockpit runs: add (starts it), stop one, stop all."""

    def __init__(self) -> None:
        self._sources: dict[str, Source] = {}
        self._tasks: dict[str, asyncio.Task] = {}

    def __iter__(self):
        return iter(list(self._sources.values()))

    def __len__(self) -> int:
        return len(self._sources)

    def get(self, name: str) -> Source | None:
        return self._sources.get(name)

    def add(self, source: Source) -> Source:
        if source.name in self._sources:
            raise ValueError(f"a source named {source.name!r} is already running")
        task = asyncio.get_running_loop().create_task(source.run(), name=f"source:{source.name}")
        self._sources[source.name] = source
        self._tasks[source.name] = task
        if isinstance(source, BaseSource):
            source._task = task
        return source

    def forget(self, name: str) -> None:
        """Drop a source whose run() ended by itself (nothing left to stop)."""
        self._sources.pop(name, None)
        self._tasks.pop(name, None)

    async def remove(self, name: str) -> None:
        source = self._sources.pop(name, None)
        task = self._tasks.pop(name, None)
        if source is not None:
            await source.stop()
        if task is not None and not task.done():
            await cancel_and_wait(task)

    async def stop_all(self) -> None:
        for name in list(self._sources):
            await self.remove(name)


class JoinError(Exception):
    """Something cannot join the running cockpit: a one-line reason to show."""


@dataclass(frozen=True)
class Joining:
    """What a source that joins at run time is made from: the cockpit's
    config, hosts and session, what the person typed (``value``, on
    ``host``), and the names of the sources running (``taken``)."""

    config: Config
    registry: HostRegistry
    session: Session
    value: str
    host: str | None
    taken: Callable[[str], bool]


@dataclass(frozen=True)
class Joined:
    """A joining source, the value its ``cockpit.added`` records (as
    normalised), and the config it reads from now on (None: unchanged)."""

    source: Source | None
    value: str
    config: Config | None = None


SourceFactory = Callable[["Config", "HostRegistry", "Session"], Iterable[Source]]


@dataclass(frozen=True)
class SourceKind:
    """One kind of source: how it starts with the cockpit (``start``), and,
    for a kind that can join a running one, the ``cockpit.added`` word it
    answers to (``joins``) and how it is made from what was typed (``join``,
    which raises :class:`JoinError` with the reason); a continued
    investigation joins it again from its recorded event. A joined source
    whose name is running already replaces it (``replaces``) or takes a new
    name (``join`` asks ``taken``)."""

    name: str
    start: SourceFactory
    joins: Growable | None = None
    join: Callable[[Joining], Joined] | None = None
    replaces: bool = False
