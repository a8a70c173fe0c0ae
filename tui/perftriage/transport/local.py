"""Local transport: asyncio subprocesses in their own process group.

Timeouts and cancellation kill the whole group (``sh -c`` plus whatever it
started), so nothing outlives a cancelled probe or a closed log follower.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import errno
import os
import signal
import time
from collections.abc import AsyncGenerator, AsyncIterator

from perftriage.transport.base import (
    BAD_COMMAND,
    CHUNK_BYTES,
    OTHER,
    LineSplitter,
    RunResult,
    TransportError,
    capped_text,
    encode_command,
    lines_of,
    trim_middle,
)

SHELL = "/bin/sh"


def _kill_group(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is not None:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


async def _read_capped(stream: asyncio.StreamReader, limit: int | None) -> tuple[bytearray, int]:
    buf, dropped = bytearray(), 0
    while chunk := await stream.read(CHUNK_BYTES):
        buf += chunk
        dropped = trim_middle(buf, limit, dropped)
    return buf, dropped


async def _communicate(proc: asyncio.subprocess.Process, stdin: str | None, limit: int | None):
    """``proc.communicate()`` that keeps at most ``limit`` (+ tail) bytes per stream."""
    async def feed() -> None:
        if proc.stdin is None:
            return
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            if stdin:
                proc.stdin.write(stdin.encode())
                await proc.stdin.drain()
            proc.stdin.close()

    assert proc.stdout is not None and proc.stderr is not None
    _, out, err = await asyncio.gather(
        feed(), _read_capped(proc.stdout, limit), _read_capped(proc.stderr, limit))
    await proc.wait()
    return out, err


class LocalTransport:
    """Runs commands on this machine; the ``localhost`` host uses it."""

    def __init__(self, name: str = "localhost", preamble: str | None = None) -> None:
        self.name = name
        self.preamble = preamble

    def wrap(self, command: str) -> str:
        return f"{self.preamble}\n{command}" if self.preamble else command

    async def _spawn(self, command: str, stdin: bool) -> asyncio.subprocess.Process:
        encode_command(command)  # a NUL would be cut by execve: refuse it whole
        try:
            return await asyncio.create_subprocess_exec(
                SHELL,
                "-c",
                self.wrap(command),
                stdin=asyncio.subprocess.PIPE if stdin else asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,
                limit=CHUNK_BYTES,
            )
        except OSError as exc:
            if exc.errno == errno.E2BIG:
                raise TransportError(
                    f"argument list too long: the command is {len(command)} characters and "
                    "the kernel takes at most 128 KiB in one argument", BAD_COMMAND,
                    self.name) from None
            raise TransportError(f"cannot start {SHELL}: {exc.strerror or exc}", OTHER,
                                 self.name) from None

    async def run(
        self, command: str, timeout: float | None = None, stdin: str | None = None,
        limit: int | None = None,
    ) -> RunResult:
        start = time.perf_counter()
        proc = await self._spawn(command, stdin is not None)
        try:
            async with asyncio.timeout(timeout):
                (out, out_dropped), (err, err_dropped) = await _communicate(proc, stdin, limit)
        except TimeoutError:
            _kill_group(proc)
            with contextlib.suppress(Exception):
                await proc.wait()
            return RunResult(None, "", "", time.perf_counter() - start, timed_out=True)
        except BaseException:
            _kill_group(proc)
            raise
        finally:
            _kill_group(proc)  # stray children of a finished shell
        return RunResult(
            proc.returncode,
            capped_text(out, limit, out_dropped),
            capped_text(err, limit, err_dropped),
            time.perf_counter() - start,
            stdout_dropped=out_dropped,
            stderr_dropped=err_dropped,
        )

    async def stream_batches(self, command: str, *,
                             label: str | None = None) -> AsyncGenerator[list[str], None]:
        proc = await self._spawn(command, stdin=False)
        assert proc.stdout is not None
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        splitter = LineSplitter()
        try:
            while True:
                chunk = await proc.stdout.read(CHUNK_BYTES)
                if not chunk:
                    break
                lines = splitter.feed(decoder.decode(chunk))
                if lines:
                    yield lines
            tail = splitter.feed(decoder.decode(b"", final=True)) + splitter.flush()
            if tail:
                yield tail
        finally:
            _kill_group(proc)
            with contextlib.suppress(Exception):
                await proc.wait()

    def stream(self, command: str) -> AsyncIterator[str]:
        return lines_of(self.stream_batches(command))

    async def close(self) -> None:
        return None
