"""Capture a profile from a running inference server and summarise it.

SGLang: ``POST /start_profile`` with a JSON body naming perftriage's own
fresh ``output_dir`` on the server's host (so it knows where the files
land), ``num_steps`` (the server stops by itself after that many forward
steps; without it perftriage sends ``POST /stop_profile`` after
``seconds``), ``activities`` and ``profile_prefix``. Each rank then writes
``[prefix-]{profile_id}-TP-{r}[-DP-..][-PP-..][-EP-..].trace.json.gz``.

vLLM: ``/start_profile`` and ``/stop_profile`` exist only when the server was
launched with ``--profiler-config`` (older releases: ``VLLM_TORCH_PROFILER_DIR``);
a 404 means profiling is off. Traces land in the server's own directory,
which perftriage must be told; new files there are the capture's.

Then: wait until the rank files are complete (present and no longer
growing), name ranks that never wrote after ``timeout``, say "no decode
steps ran during the capture" when nothing at all appeared (an idle server
runs no steps), fetch the files (SFTP over the host's SSH connection, or
an exec channel where the host has no SFTP), and parse them in a child
process (msgspec holds the GIL: a thread would freeze the UI), reporting
progress all along.

The server controls what appears in the directory it writes to, and what
``/get_server_info`` says: nothing there is followed or trusted
(``transport/capture_dir.py``: no link is followed, regular files only;
``core/profile/capture_ranks.py``: rank counts bounded, local names
distinct), the fetched bytes are bounded (``max_fetch_bytes``), and
perftriage's directory on the host is removed on every path, success or
failure.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import msgspec

from perftriage.core.json_errors import decode_error_text
from perftriage.core.profile.capture_ranks import (
    MAX_RANKS,
    TRACE_NAME,
    ServerInfoError,
    expected_ranks,
    local_names,
    missing_ranks,
)
from perftriage.core.profile.model import ProfileSummary, TraceError
from perftriage.core.profile.reader import DEFAULT_MAX_MB
from perftriage.core.sanitize import visible
from perftriage.services.profile.worker import summarize_in_child
from perftriage.transport.base import TransportError
from perftriage.transport.capture_dir import Refused
from perftriage.transport.files import Listing, open_files
from perftriage.transport.http_request import endpoint, http_request

IDLE_MESSAGE = "no decode steps ran during the capture"
VLLM_OFF = ("the server has no /start_profile (HTTP 404): profiling is off. vLLM serves it only "
            "when launched with --profiler-config '{\"profiler\": \"torch\", "
            "\"torch_profiler_dir\": \"/path/to/traces\"}' (older releases: the environment "
            "variable VLLM_TORCH_PROFILER_DIR=/path/to/traces); relaunch with one of them and "
            "give perftriage that directory")
MAX_FETCH_BYTES = 8 * 1024**3  # all rank files of one capture together


# the capture's kind of failure when every rank file was refused (profile: exit 3)
ALL_RANKS_REFUSED = "all-ranks-refused"
# the engine died while the capture ran (killed, crashed): not "no decode steps"
ENGINE_EXITED = "engine-exited"


class CaptureFailed(Exception):
    """The capture could not produce a summary (one-line reason)."""

    def __init__(self, message: str, kind: str = "failed", pid: int | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.pid = pid  # ENGINE_EXITED: the engine's pid, when the host said which it was


@dataclass
class CaptureRequest:
    url: str  # the engine's base URL as the host sees it (a path is ignored)
    steps: int | None = 5  # forward steps to profile; None or 0: `seconds`, then stop
    seconds: float = 5.0
    engine: str = "auto"  # sglang | vllm | auto (GET /get_server_info answers: sglang)
    activities: list[str] = field(default_factory=lambda: ["CPU", "GPU"])
    prefix: str = "perftriage"
    remote_parent: str = "/tmp"  # where the fresh output_dir is made (SGLang)
    vllm_dir: str | None = None  # the vLLM server's trace directory
    ranks: int | None = None  # rank files to expect; None: tp_size x pp_size from the server
    timeout: float = 120.0  # for all rank files to be complete
    idle_after: float = 20.0  # no file at all by then: no steps ran
    poll: float = 0.5
    settle: float = 2.0  # a file whose size has not changed for this long is complete
    rules: list[tuple[str, str]] = field(default_factory=list)
    max_fetch_bytes: int = MAX_FETCH_BYTES  # all rank files together
    max_trace_mb: int = DEFAULT_MAX_MB  # each file, as the parser reads it ([profile] max_trace_mb)


@dataclass
class CaptureResult:
    summary: ProfileSummary
    files: list[Path]  # the local copies, mode 0600
    remote_dir: str
    engine: str
    steps: int | None
    missing: list[str] = field(default_factory=list)  # ranks that wrote nothing in time
    via: str = "local"  # how the files came: local | SFTP | exec
    via_note: str = ""  # why not SFTP, when exec
    refused: dict[str, str] = field(default_factory=dict)  # trace-named, not a regular file


Progress = Callable[[str], None]


def _text(body: bytes, limit: int = 200) -> str:
    return visible(body.decode("utf-8", "replace").strip()[:limit])


async def _post(transport, url: str, path: str, body=None, timeout: float = 10.0):
    return await http_request(transport, endpoint(url, path), method="POST", json_body=body,
                              timeout=timeout)


def _check_start(resp) -> None:
    if resp.status != 200:
        raise CaptureFailed(f"/start_profile answered HTTP {resp.status}: {_text(resp.body)}",
                            "http")


async def _server_info(transport, url: str) -> dict | None:
    """SGLang's /get_server_info as a dict, None when the server has none
    (a vLLM answers 404). A 200 whose body is not a JSON object is an error."""
    resp = await http_request(transport, endpoint(url, "/get_server_info"))
    if resp.status != 200:
        return None
    try:
        info = msgspec.json.decode(resp.body)
    except (msgspec.DecodeError, RecursionError) as exc:
        why = decode_error_text(exc)[:120]
        raise CaptureFailed(f"/get_server_info answered HTTP 200 but no usable JSON ({why})",
                            "server_info") from None
    if not isinstance(info, dict):
        raise CaptureFailed("/get_server_info answered HTTP 200 but not a JSON object",
                            "server_info")
    return info


def _expected(req: CaptureRequest, info: dict | None) -> int | None:
    if req.ranks:
        if not 1 <= req.ranks <= MAX_RANKS:
            raise CaptureFailed(f"ranks {req.ranks} is outside 1..{MAX_RANKS}", "usage")
        return req.ranks
    if info is None:
        return None
    try:
        return expected_ranks(info)
    except ServerInfoError as exc:
        raise CaptureFailed(visible(str(exc)), "server_info") from None


def _trace_named(listing: Listing, before: dict[str, int] | None) -> tuple[dict[str, int],
                                                                            dict[str, str]]:
    files = {n: s for n, s in listing.files.items() if TRACE_NAME.search(n)
             and (before is None or before.get(n) != s)}
    refused = {n: what for n, what in listing.other.items() if TRACE_NAME.search(n)}
    return files, refused


async def wait_for_files(files, directory: str, req: CaptureRequest, expected: int | None,
                         progress: Progress, before: dict[str, int] | None = None,
                         clock: Callable[[], float] = time.monotonic,
                         refused: dict[str, str] | None = None,
                         lost: Callable[[], str | None] = lambda: None,
                         ) -> tuple[dict[str, int], list[str]]:
    """(complete trace files -> size, missing ranks). A file is complete when
    its size is non-zero and has not changed for ``req.settle`` seconds (a
    writer may pause between chunks); with the number of ranks unknown, the
    set is complete once no file appeared or grew for ``req.settle`` seconds.
    A trace-named entry that is not a regular file (a link, a FIFO) is
    refused: recorded in ``refused`` and counted as a rank that is done."""
    start = clock()
    last: dict[str, int] = {}
    since: dict[str, float] = {}  # name -> when its size last changed
    quiet_since = start
    refused = {} if refused is None else refused
    while True:
        if (why := lost()) is not None:  # the pending /start_profile broke: the engine?
            raise CaptureFailed(why, "lost")
        now, bad = _trace_named(await files.listing(directory), before)
        for name, what in bad.items():
            if name not in refused:
                progress(f"refused {name}: {what}, not a regular file")
            refused[name] = what
        t = clock()
        if now != last:
            quiet_since = t
        for name, size in now.items():
            if last.get(name) != size:
                since[name] = t
        last = now
        done = {n: size for n, size in sorted(now.items())
                if size and t - since[n] >= req.settle}
        waited = t - start
        if expected and len(done) + len(refused) >= expected:
            return done, missing_ranks(list(done), expected) if refused else []
        if not expected and done and len(done) == len(now) and t - quiet_since >= req.settle:
            return done, []
        if not now and not refused and waited >= req.idle_after:
            raise CaptureFailed(f"{IDLE_MESSAGE} (no trace file in {directory} after "
                                f"{req.idle_after:g}s; send the server some load and capture "
                                "again)", "idle")
        if waited >= req.timeout:
            if not done:
                raise CaptureFailed(f"no complete trace file in {directory} after "
                                    f"{req.timeout:g}s (still being written: "
                                    f"{', '.join(sorted(now)) or 'none'}"
                                    + (f"; refused: {_refused_text(refused)}" if refused else "")
                                    + ")", "refused" if refused and not now else "timeout")
            return done, missing_ranks(list(done), expected)
        want = f"{expected}" if expected else "?"
        progress(f"waiting for rank files in {directory}: {len(done)}/{want} complete"
                 + (f", {len(now) - len(done)} still growing" if len(now) > len(done) else ""))
        await asyncio.sleep(req.poll)


def _refused_text(refused: dict[str, str]) -> str:
    return ", ".join(f"{n} ({what})" for n, what in sorted(refused.items())[:8]) + (
        f" and {len(refused) - 8} more" if len(refused) > 8 else "")


async def _start_sglang(transport, directory: str, req: CaptureRequest,
                        progress: Progress) -> asyncio.Task | None:
    """The pending /start_profile request, or None.

    With ``num_steps`` SGLang answers /start_profile only once the steps ran
    and the traces were written (its scheduler notifies the caller when it
    reaches the target step), so on an idle server it never answers: the
    request is left running while the directory is watched, and an early
    answer (an error, "already in progress") is checked first."""
    body: dict = {"output_dir": directory, "activities": req.activities,
                  "profile_prefix": req.prefix}
    if req.steps:
        body["num_steps"] = req.steps
    progress(f"POST /start_profile (output_dir {directory}"
             + (f", num_steps {req.steps})" if req.steps else ")"))
    if not req.steps:
        _check_start(await _post(transport, req.url, "/start_profile", body))
        progress(f"profiling for {req.seconds:g}s")
        await asyncio.sleep(req.seconds)
        await _stop(transport, req)
        return None
    pending = asyncio.ensure_future(_post(transport, req.url, "/start_profile", body,
                                          timeout=req.timeout + req.idle_after))
    await asyncio.wait({pending}, timeout=1.0)
    if pending.done():
        _check_start(pending.result())
        return None
    return pending


async def _settle(pending: asyncio.Task | None, wait: float, check: bool = True) -> None:
    """Let a pending /start_profile finish within ``wait`` (an error answer is
    reported when ``check``), else drop it."""
    if pending is None:
        return
    if wait > 0:
        await asyncio.wait({pending}, timeout=wait)
    if not pending.done():
        pending.cancel()
        await asyncio.gather(pending, return_exceptions=True)
    elif check and not pending.cancelled() and pending.exception() is None:
        _check_start(pending.result())


async def _stop(transport, req: CaptureRequest) -> None:
    resp = await _post(transport, req.url, "/stop_profile")
    if resp.status != 200:
        raise CaptureFailed(f"/stop_profile answered HTTP {resp.status}: {_text(resp.body)}",
                            "http")


async def _start_vllm(transport, files, req: CaptureRequest,
                      progress: Progress) -> dict[str, int]:
    progress("POST /start_profile (vLLM)")
    resp = await _post(transport, req.url, "/start_profile")
    if resp.status == 404:
        raise CaptureFailed(VLLM_OFF, "profiling_off")
    if resp.status != 200:
        raise CaptureFailed(f"/start_profile answered HTTP {resp.status}: {_text(resp.body)}",
                            "http")
    if not req.vllm_dir:
        await _stop(transport, req)
        raise CaptureFailed("vLLM writes traces to its own directory: give it "
                            "(the form's trace dir, or [profile] vllm_trace_dir in the config)",
                            "usage")
    files.pin(req.vllm_dir)
    before = await files.sizes(req.vllm_dir)
    progress(f"profiling for {req.seconds:g}s")
    await asyncio.sleep(req.seconds)
    await _stop(transport, req)
    return before


def via_text(via: str, why: str = "") -> str:
    """How the rank files come: ``over SFTP``, ``over an exec channel (...)``."""
    if via == "exec":
        return "over an exec channel (python3 on the host" + (f"; {why}" if why else "") + ")"
    return {"SFTP": "over SFTP", "local": "from the local disk"}.get(via, via)


def _via_text(files) -> str:
    return via_text(files.via, getattr(files, "fallback_reason", ""))


async def _fetch_all(files, directory: str, done: dict[str, int], dest: Path,
                     req: CaptureRequest, progress: Progress) -> list[Path]:
    big = [(n, size) for n, size in done.items() if size > req.max_trace_mb << 20]
    if big:
        name, size = big[0]
        raise CaptureFailed(f"{visible(name)} is {size / 2**20:,.0f} MiB, over the "
                            f"{req.max_trace_mb} MiB cap on a trace file ([profile] max_trace_mb)"
                            ": not fetched", "too_big")
    total = sum(done.values())
    if total > req.max_fetch_bytes:
        raise CaptureFailed(f"the rank files hold {total / 2**20:,.0f} MiB, over the "
                            f"{req.max_fetch_bytes / 2**20:,.0f} MiB a capture fetches: refused",
                            "too_big")
    dest.mkdir(parents=True, exist_ok=True, mode=0o700)
    local: list[Path] = []
    try:
        for name, safe in local_names(list(done)).items():
            target = dest / safe
            progress(f"fetching {name} {_via_text(files)}")
            await files.fetch(directory, name, done[name], target)
            local.append(target)
    except BaseException:
        for path in local:  # a failed capture leaves no partial set of rank files
            path.unlink(missing_ok=True)
        raise
    return local


async def _cleanup(files, directory: str | None, progress: Progress) -> None:
    """Remove perftriage's directory on the host (every path, success or not)."""
    if directory is None:
        return
    try:
        note = await files.remove_dir(directory)
    except (Refused, TransportError) as exc:
        note = f"could not remove {directory}: {exc}"
    if note:
        progress(note)


def _broke(pending: asyncio.Task | None) -> str | None:
    """Why the pending /start_profile ended without an answer, if it did."""
    if pending is None or not pending.done() or pending.cancelled():
        return None
    exc = pending.exception()
    return None if exc is None else visible(str(exc))


async def listening_pid(transport, url: str) -> int | None:
    """The pid of the process listening on ``url``'s port on the host
    (``ss -ltnp``; None where ss is missing or does not say)."""
    from urllib.parse import urlsplit  # noqa: PLC0415

    try:
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
        res = await transport.run(f"ss -Hltnp 'sport = :{int(port)}' 2>/dev/null", timeout=5)
    except (TransportError, ValueError, OSError):
        return None
    m = re.search(r"pid=([0-9]{1,9})\b", res.stdout or "")
    return int(m.group(1)) if m else None


async def _engine_gone(transport, url: str, pid: int | None) -> bool:
    """True when the host still answers but the engine does not and (its pid
    known) no longer exists: a host that is gone is the host's failure."""
    try:
        if not (await transport.run("true", timeout=5)).ok:
            return False
    except TransportError:
        return False
    try:
        await http_request(transport, endpoint(url, "/get_server_info"), timeout=3)
        return False  # it answers: whatever failed, it was not the engine's end
    except TransportError:
        pass
    if pid is None:
        return True
    try:
        res = await transport.run(f"test -e /proc/{int(pid)}", timeout=5)
    except TransportError:
        return True
    return res.exit_status != 0


def exited_text(pid: int | None, status: str | None = None) -> str:
    """``the engine exited during the capture (pid N, exit status S)``."""
    parts = [f"pid {pid}" if pid is not None else "its pid unknown",
             status or "exit status unknown: perftriage did not start it"]
    return f"the engine exited during the capture ({', '.join(parts)})"


async def capture(transport, req: CaptureRequest, dest: Path,
                  progress: Progress = lambda _msg: None) -> CaptureResult:
    """Run one capture through ``transport``; the rank files land in ``dest``.
    An engine that dies meanwhile is :data:`ENGINE_EXITED` (its pid, read
    before the capture starts), never "no decode steps"."""
    pid = await listening_pid(transport, req.url)
    started: list[bool] = []  # set once the profile was asked for: the engine answered
    try:
        return await _capture(transport, req, dest, progress, started)
    except (CaptureFailed, TransportError) as exc:
        kind = exc.kind if isinstance(exc, CaptureFailed) else "transport"
        if started and kind in ("idle", "timeout", "lost", "transport", "failed") \
                and await _engine_gone(transport, req.url, pid):
            raise CaptureFailed(exited_text(pid), ENGINE_EXITED, pid) from None
        if kind == "lost":  # the request broke, the engine still answers: say why
            raise CaptureFailed(f"/start_profile ended without an answer: {exc}") from None
        raise


async def _capture(transport, req: CaptureRequest, dest: Path,
                   progress: Progress, started: list[bool]) -> CaptureResult:
    info = await _server_info(transport, req.url) if req.engine != "vllm" else None
    engine = req.engine if req.engine != "auto" else ("sglang" if info is not None else "vllm")
    expected = _expected(req, info if engine == "sglang" else None)
    files = await open_files(transport)
    progress(f"files {_via_text(files)}")
    made: str | None = None  # perftriage's own directory on the host (SGLang)
    refused: dict[str, str] = {}
    try:
        before = None
        pending: asyncio.Task | None = None
        started.append(True)
        if engine == "sglang":
            made = directory = await files.make_dir(req.remote_parent, "perftriage-profile-")
            pending = await _start_sglang(transport, directory, req, progress)
        else:
            directory = req.vllm_dir or ""
            before = await _start_vllm(transport, files, req, progress)
        try:
            done, missing = await wait_for_files(files, directory, req, expected, progress,
                                                 before, refused=refused,
                                                 lost=lambda: _broke(pending))
            if not done and refused:  # nothing to summarise: never a summary of 0 ranks
                raise CaptureFailed(f"every rank file was refused, nothing to summarise: "
                                    f"{_refused_text(refused)}, not a regular file"
                                    + (f" (ranks {', '.join(missing)})" if missing else ""),
                                    ALL_RANKS_REFUSED)
        except CaptureFailed as exc:
            await _settle(pending, 0.0, check=False)
            if exc.kind == "idle" and engine == "sglang" and req.steps:
                # still armed: disarm it so a later request is not profiled by surprise
                try:
                    await _stop(transport, req)
                except (CaptureFailed, TransportError):
                    pass
            raise
        except BaseException:
            await _settle(pending, 0.0, check=False)
            raise
        await _settle(pending, 2.0)
        local = await _fetch_all(files, directory, done, dest, req, progress)
    except Refused as exc:
        raise CaptureFailed(visible(str(exc)), "refused") from None
    finally:
        try:
            await _cleanup(files, made, progress)
        finally:
            await files.close()
    progress(f"parsing {len(local)} trace file(s)")
    try:
        summary = await summarize_in_child(local, req.rules, req.max_trace_mb)
    except TraceError as exc:
        raise CaptureFailed(str(exc), "trace") from None
    return CaptureResult(summary=summary, files=local, remote_dir=directory, engine=engine,
                         steps=req.steps if engine == "sglang" else None, missing=missing,
                         via=files.via, via_note=getattr(files, "fallback_reason", ""),
                         refused=refused)
