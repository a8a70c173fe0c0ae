"""``http URL``: a GET made *by the host itself* (python urllib on the host),
so ``127.0.0.1:30000/health`` means the server on that host. Recognises the
SGLang / vLLM endpoints ``/health``, ``/server_info`` (``/get_server_info``)
and ``/metrics``."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

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


def http_script(limits: HttpLimits = PROBE) -> str:
    """The probe's script: the project's HTTP read policy (size cap, overall
    deadline, an error naming the URL and the limit), in the host's Python."""
    return SCRIPT_PRELUDE + _HTTP_SCRIPT.format(
        max_bytes=limits.max_bytes, deadline_s=limits.deadline_s, excerpt=BODY_EXCERPT,
        size_error=repr(HttpLimitError("{url}", "size", limits).reason),
        deadline_error=repr(HttpLimitError("{url}", "deadline", limits).reason))


_HTTP_SCRIPT = r"""
import time, urllib.request, urllib.error
url = sys.argv[1]
if "://" not in url:
    url = "http://" + url
req = urllib.request.Request(url, headers={{"User-Agent": "perftriage-probe"}})
t0 = time.perf_counter()
def _limit(message):
    _emit({{"url": url, "error": message.replace("{{url}}", url),
           "time_s": round(time.perf_counter() - t0, 4)}}, 1)
import threading  # the overall deadline: a watchdog that answers and exits
watchdog = threading.Timer({deadline_s}, _limit, ({deadline_error},))
watchdog.daemon = True
watchdog.start()
try:
    try:
        r = urllib.request.urlopen(req, timeout={deadline_s})
    except urllib.error.HTTPError as e:
        r = e
    with r:
        chunks, size = [], 0
        while True:
            chunk = r.read1(65536) if hasattr(r, "read1") else r.read(65536)
            if not chunk:
                break
            size += len(chunk)
            if size > {max_bytes}:
                _limit({size_error})
            chunks.append(chunk)
        body = b"".join(chunks)
        status, reason = r.status, str(r.reason)
        ctype = r.headers.get("Content-Type", "")
except BaseException as e:
    reason = getattr(e, "reason", e)
    _emit({{"url": url, "error": type(reason).__name__ + ": " + str(reason),
           "time_s": round(time.perf_counter() - t0, 4)}}, 1)
took = time.perf_counter() - t0
text = body.decode("utf-8", "replace")
res = {{"url": url, "status": status, "reason": reason, "content_type": ctype,
       "time_s": round(took, 4), "body_bytes": len(body), "body": text[:{excerpt}]}}
path = urllib.parse.urlsplit(url).path.rstrip("/")
if path.endswith("/metrics"):
    metrics = {{}}
    for line in text.splitlines():
        if line.startswith("#") or "_bucket{{" in line:
            continue
        if line.startswith(("sglang:", "vllm:")):
            name, _, value = line.rpartition(" ")
            if len(metrics) < 80:
                metrics[name] = value
    res["metrics"] = metrics
elif text.lstrip().startswith("{{"):
    try:
        obj = json.loads(text)
    except ValueError:
        obj = None
    if isinstance(obj, dict):
        res["json"] = {{k: (v if not isinstance(v, str) else v[:200])
                       for k, v in list(obj.items())[:120]
                       if v is None or isinstance(v, (str, int, float, bool))}}
_emit(res, 0 if 200 <= status < 400 else 1)
"""
HTTP_SCRIPT = http_script()

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
    build=lambda args, ctx: python_command(ctx, HTTP_SCRIPT, args),
    interpret=_http_verdict,
    check=_check_url,
    compare=lambda s, summ, d: [d.get("status"), d.get("error")],
    key="h",
    label="HTTP",
)

