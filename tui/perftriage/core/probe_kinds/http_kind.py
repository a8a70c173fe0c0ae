"""``http URL``: a GET made *by the host itself* (python urllib on the host),
so ``127.0.0.1:30000/health`` means the server on that host. Recognises the
SGLang / vLLM endpoints ``/health``, ``/server_info`` (``/get_server_info``)
and ``/metrics``."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from perftriage.core import host_scripts
from perftriage.core.http_limits import PROBE, HttpLimitError, HttpLimits
from perftriage.core.probe_kinds.kind import (
    SCRIPT_PRELUDE,
    ProbeKind,
    ProbeUsageError,
    Verdict,
    VerdictStatus,
    no_result,
    python_command,
    script_result,
)

BODY_EXCERPT = 2000


def http_script() -> str:
    """The probe's script (``core/host_scripts/http_get.py``, sent as text)."""
    return SCRIPT_PRELUDE + host_scripts.read("http_get.py")


def http_args(url: str, limits: HttpLimits = PROBE) -> list[str]:
    """The script's arguments: the URL, then the project's HTTP read policy
    (size cap, overall deadline, the errors naming the URL and the limit)."""
    return [url, str(limits.max_bytes), f"{limits.deadline_s:g}", str(BODY_EXCERPT),
            HttpLimitError("{url}", "size", limits).reason,
            HttpLimitError("{url}", "deadline", limits).reason]


# /server_info fields worth a glance when chasing decode speed
SERVER_INFO_KEYS = (
    "model_path", "served_model_name", "version", "tp_size", "dp_size", "ep_size",
    "moe_runner_backend", "attention_backend", "quantization", "max_total_num_tokens",
    "max_running_requests", "cuda_graph_max_bs", "disable_cuda_graph",
)
METRIC_HINTS = (
    "num_running_reqs", "num_requests_running", "num_queue_reqs", "num_requests_waiting",
    "gen_throughput", "token_usage", "gpu_cache_usage_perc", "cache_hit_rate",
    "kv_cache_usage_perc", "spec_accept_length", "num_preemptions",
    "estimated_read_bytes_per_gpu_total",
)


def _check_url(args: list[str]) -> None:
    url = args[0]
    if "://" in url:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https"):
            raise ProbeUsageError(f"http: only http:// and https:// URLs, not {parts.scheme}://")
        if not parts.netloc:
            raise ProbeUsageError("http: URL has no host")


def endpoint(url: str) -> str | None:
    path = urlsplit(url if "://" in url else "http://" + url).path.rstrip("/")
    for name in ("health_generate", "health", "server_info", "get_server_info", "metrics"):
        if path.endswith("/" + name):
            return name
    return None


def _http_verdict(args: list[str], status: int | None, out: str, err: str) -> Verdict:
    data = script_result(out)
    if data is None:
        return no_result(status, err)
    if "error" in data:
        return Verdict("failed", f"GET {data.get('url')}: {data['error']}", data)
    code, took = data.get("status"), data.get("time_s", 0.0)
    head = f"{code} {data.get('reason', '')} in {took * 1000:.0f} ms"
    kind = endpoint(data.get("url", args[0]))
    data["endpoint"] = kind
    extra = ""
    if kind in ("health", "health_generate"):
        extra = "server healthy" if 200 <= (code or 0) < 300 else "server NOT healthy"
    elif kind in ("server_info", "get_server_info") and data.get("json"):
        info: dict[str, Any] = data["json"]
        extra = ", ".join(f"{k}={info[k]}" for k in SERVER_INFO_KEYS if k in info)
    elif kind == "metrics":
        metrics: dict[str, str] = data.get("metrics", {})
        picked = [f"{k.split('{')[0]}={v}" for k, v in metrics.items()
                  if any(h in k for h in METRIC_HINTS)]
        extra = ", ".join(picked[:6]) or f"{len(metrics)} sglang/vllm metrics"
    else:
        first = (data.get("body") or "").strip().splitlines()
        extra = first[0][:120] if first else ""
    verdict: VerdictStatus = "ok" if status == 0 else "failed"
    return Verdict(verdict, head + (f"; {extra}" if extra else ""), data)


HTTP_KIND = ProbeKind(
    name="http",
    usage="http URL",
    help="GET from the host itself (127.0.0.1 = that host); /health /server_info /metrics",
    min_args=1,
    max_args=1,
    build=lambda args, ctx: python_command(ctx, http_script(), http_args(args[0])),
    interpret=_http_verdict,
    check=_check_url,
    compare=lambda s, summ, d: [d.get("status"), d.get("error")],
    key="h",
    label="HTTP",
)

