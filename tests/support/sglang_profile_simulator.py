"""A SIMULATOR of an inference server's profiling endpoints, for tests: a
real HTTP server on 127.0.0.1 that follows SGLang's contract (and, with
``engine="vllm-off"``, a vLLM launched without ``--profiler-config``).

SGLang contract, as in ``python/sglang/srt/entrypoints/http_server.py`` and
``managers/io_struct.py``: ``GET /get_server_info`` gives ``tp_size``;
``POST /start_profile`` takes JSON (``output_dir``, ``num_steps``,
``activities``, ``profile_prefix``, ...) and picks the profile id itself;
after ``num_steps`` forward steps (or at ``POST /stop_profile`` when no
``num_steps``) every rank writes ``[prefix-]{profile_id}-TP-{r}.trace.json.gz``
into ``output_dir``. Without ``num_steps`` it answers ``Start profiling.`` at
once; with ``num_steps`` the scheduler notifies the caller only when the
target step is reached, so the answer comes after the traces are written
(and never, on an idle server, until ``/stop_profile``). The
trace bytes are real H200 captures from the fixtures, written in chunks so a
file is seen growing. An idle server runs no steps and writes nothing.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from collections.abc import Callable
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "profile"
SOURCES = [FIXTURES / "eager-TP-0.trace.json.gz", FIXTURES / "eager-TP-1.trace.json.gz"]


class ProfilingServerSimulator:
    def __init__(self, *, engine: str = "sglang", tp_size: int = 2, busy: bool = True,
                 trace_dir: Path | None = None,
                 silent_ranks: tuple[int, ...] = (), step_s: float = 0.02,
                 chunk_delay_s: float = 0.15, server_info: bytes | None = None,
                 plant: Callable[[Path, str], None] | None = None) -> None:
        """``server_info``: the raw /get_server_info body (a hostile server's);
        ``plant(output_dir, stem)``: what a hostile server does to the
        directory before its ranks write (stem: ``prefix-profile_id``)."""
        self.engine, self.tp_size, self.busy = engine, tp_size, busy
        self.server_info, self.plant = server_info, plant
        self.trace_dir = trace_dir  # vLLM (engine="vllm"): the --profiler-config directory
        self.silent_ranks, self.step_s, self.chunk_delay_s = silent_ranks, step_s, chunk_delay_s
        self.requests: list[tuple[str, str, dict | None]] = []
        self.profiling: dict | None = None
        self._threads: list[threading.Thread] = []
        self._finished = threading.Event()  # the profile of a num_steps request is done
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                pass

            def _answer(self, status: int, body: str | bytes, ctype: str = "text/plain") -> None:
                data = body if isinstance(body, bytes) else body.encode()
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                try:
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the capture gave up on this request (its deadline): nobody reads

            def do_GET(self) -> None:  # noqa: N802
                owner.requests.append(("GET", self.path, None))
                if owner.engine == "sglang" and self.path == "/get_server_info" \
                        and owner.server_info is not None:
                    self._answer(200, owner.server_info, "application/json")
                elif owner.engine == "sglang" and self.path == "/get_server_info":
                    self._answer(200, json.dumps({"tp_size": owner.tp_size, "pp_size": 1,
                                                  "version": "simulator"}), "application/json")
                elif owner.engine != "sglang" and self.path == "/version":
                    self._answer(200, '{"version": "simulator"}', "application/json")
                else:
                    self._answer(404, '{"detail":"Not Found"}', "application/json")

            def do_POST(self) -> None:  # noqa: N802
                n = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(n) if n else b""
                body = json.loads(raw) if raw else None
                owner.requests.append(("POST", self.path, body))
                if owner.engine == "vllm" and self.path in ("/start_profile", "/stop_profile"):
                    owner.vllm(self.path)
                    self._answer(200, "")
                elif owner.engine != "sglang":
                    self._answer(404, '{"detail":"Not Found"}', "application/json")
                elif self.path == "/start_profile":
                    status, text = owner.start(body or {})
                    self._answer(status, text)
                elif self.path == "/stop_profile":
                    status, text = owner.stop()
                    self._answer(status, text)
                else:
                    self._answer(404, '{"detail":"Not Found"}', "application/json")

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"

    # -- vLLM's behaviour (launched with --profiler-config) ---------------------------

    def vllm(self, path: str) -> None:
        """vLLM writes one ``<worker>.<ms>.pt.trace.json.gz`` per worker into its
        own directory when profiling stops."""
        if path == "/start_profile" or self.trace_dir is None:
            return
        stamp = int(time.time() * 1000)
        for r in range(self.tp_size):
            (self.trace_dir / f"worker_TP{r}.{stamp}.pt.trace.json.gz").write_bytes(
                SOURCES[r % len(SOURCES)].read_bytes())

    # -- SGLang's behaviour ---------------------------------------------------------

    def start(self, body: dict) -> tuple[int, str]:
        if self.profiling is not None:
            return 400, "Profiling is already in progress. Call /stop_profile first."
        self.profiling = dict(body, profile_id=f"{time.time():.6f}")
        if not body.get("num_steps"):
            return 200, "Start profiling.\n"
        self._finished.clear()
        if self.busy:
            self._spawn(self.step_s * int(body["num_steps"]))
        self._finished.wait(timeout=60)  # the caller is notified at the target step
        return 200, "Start profiling.\n"

    def stop(self) -> tuple[int, str]:
        if self.profiling is None:
            return 400, "Profiling is not in progress. Call /start_profile first."
        if not self.profiling.get("num_steps") and self.busy:
            self._spawn(0.0)
        else:
            self.profiling = None
            self._finished.set()
        return 200, "Stop profiling. This will take some time.\n"

    def _spawn(self, after: float) -> None:
        t = threading.Thread(target=self._write_ranks, args=(dict(self.profiling or {}), after),
                             daemon=True)
        self._threads.append(t)
        t.start()

    def _write_ranks(self, prof: dict, after: float) -> None:
        time.sleep(after)  # the decode steps
        out = Path(prof["output_dir"])
        prefix = f"{prof['profile_prefix']}-" if prof.get("profile_prefix") else ""
        if self.plant is not None:
            self.plant(out, f"{prefix}{prof['profile_id']}")
        writers = []
        for r in range(self.tp_size):
            if r in self.silent_ranks:
                continue
            name = out / f"{prefix}{prof['profile_id']}-TP-{r}.trace.json.gz"
            writers.append(threading.Thread(target=self._write_slowly,
                                            args=(name, SOURCES[r % len(SOURCES)].read_bytes())))
        for w in writers:
            w.start()
        for w in writers:
            w.join()
        self.profiling = None
        self._finished.set()

    def _write_slowly(self, path: Path, data: bytes) -> None:
        step = max(len(data) // 4, 1)
        with path.open("wb") as fh:
            for i in range(0, len(data), step):
                fh.write(data[i:i + step])
                fh.flush()
                time.sleep(self.chunk_delay_s)

    # -- lifecycle --------------------------------------------------------------------

    def __enter__(self) -> "ProfilingServerSimulator":
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self._finished.set()
        self.httpd.shutdown()
        self.httpd.server_close()
        for t in self._threads:
            t.join(timeout=5)
