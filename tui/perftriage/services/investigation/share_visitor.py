"""One ``perftriage share`` visitor's app process, and its bounded end.

textual-serve's :class:`~textual_serve.app_service.AppService` starts the
command through a shell and, when the visitor's websocket closes, sends the
app a ``quit`` and waits for its output to end -- without a limit, so an app
still starting (importing, under load) lives on long after the visitor left
(seen: 40 processes still alive 23 s after 20 visitors closed). Here the
command runs without a shell (argv as given) in a process group of its own,
and :meth:`VisitorApp.end` is bounded: the app gets :data:`QUIT_GRACE_S` to
quit by itself, then its group gets SIGTERM, then SIGKILL -- everything the
visitor started is gone within :data:`END_WITHIN_S` of the websocket closing.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from asyncio.subprocess import PIPE, Process

from textual_serve.app_service import AppService

QUIT_GRACE_S = 0.5  # the app's own quit (it saves nothing: a watcher writes nothing)
TERM_GRACE_S = 0.3  # then SIGTERM to its process group
END_WITHIN_S = 2.0  # then SIGKILL: the whole group is gone by now


class VisitorApp(AppService):
    """An AppService for ``argv``: no shell, its own process group, a bounded end."""

    def __init__(self, argv: list[str], **kwargs) -> None:
        super().__init__(" ".join(argv), **kwargs)
        self.argv = argv

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    async def _open_app_process(self, width: int = 80, height: int = 24) -> Process:
        self._process = process = await asyncio.create_subprocess_exec(
            *self.argv, stdin=PIPE, stdout=PIPE, stderr=PIPE,
            env=self._build_environment(width=width, height=height),
            start_new_session=True)  # a group of its own: ended whole
        assert process.stdin is not None
        self._stdin = process.stdin
        return process

    async def end(self) -> None:
        """Quit the app, then TERM and KILL its process group: all of it has
        ended within :data:`END_WITHIN_S`. Safe to call again."""
        process = self._process
        if process is None:
            return
        if process.returncode is None:
            with contextlib.suppress(Exception):  # a dead pipe is no reason to wait
                await asyncio.wait_for(self.send_meta({"type": "quit"}), timeout=0.2)
            for sig, grace in ((None, QUIT_GRACE_S), (signal.SIGTERM, TERM_GRACE_S),
                               (signal.SIGKILL, END_WITHIN_S)):
                if sig is not None:
                    _signal_group(process.pid, sig)
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(process.wait(), timeout=grace)
                    break
        # what the app started (its group) goes with it, even when the app quit by itself
        _signal_group(process.pid, signal.SIGKILL)
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task


def _signal_group(pgid: int, sig: int) -> None:
    # the group's id stays reserved while any member lives, so this never
    # reaches another program's group
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)
