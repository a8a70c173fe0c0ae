"""The http probe's host script: a GET made by the host itself (urllib), read
under the project's HTTP policy (a size cap, an overall deadline, an error
naming the URL and the limit: ``perftriage.core.http_limits``).

Sent as ``python -c`` after ``SCRIPT_PRELUDE`` (``perftriage.core.probe_kinds.kind``: it
imports sys, json, os and defines ``_emit``); ``sys.argv[1:]``: the URL, then the policy
(max bytes, deadline in seconds, body excerpt, the size and deadline error texts with
``{url}`` in them). Runs in the host's own Python (the standard library only). Read by
``perftriage.core.probe_kinds.http_kind``, which interprets what it prints.
"""
import json, sys, threading, time, urllib.error, urllib.parse, urllib.request
from typing import Any, Callable, NoReturn
_emit: Callable[..., NoReturn] = globals()["_emit"]  # from the prelude
url, max_bytes, deadline_s = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
excerpt, size_error, deadline_error = int(sys.argv[4]), sys.argv[5], sys.argv[6]
del sys.argv[2:]  # the result's argv says what was asked: the URL, not the policy
if "://" not in url:
    url = "http://" + url
req = urllib.request.Request(url, headers={"User-Agent": "perftriage-probe"})
t0 = time.perf_counter()
def _limit(message: str) -> None:
    _emit({"url": url, "error": message.replace("{url}", url),
           "time_s": round(time.perf_counter() - t0, 4)}, 1)
watchdog = threading.Timer(deadline_s, _limit, (deadline_error,))  # the overall deadline
watchdog.daemon = True
watchdog.start()
r: Any
try:
    try:
        r = urllib.request.urlopen(req, timeout=deadline_s)
    except urllib.error.HTTPError as e:
        r = e
    with r:
        chunks, size = [], 0
        while True:
            chunk = r.read1(65536) if hasattr(r, "read1") else r.read(65536)
            if not chunk:
                break
            size += len(chunk)
            if size > max_bytes:
                _limit(size_error)
            chunks.append(chunk)
        body = b"".join(chunks)
        status, reason = r.status, str(r.reason)
        ctype = r.headers.get("Content-Type", "")
except BaseException as e:
    why = getattr(e, "reason", e)
    _emit({"url": url, "error": type(why).__name__ + ": " + str(why),
           "time_s": round(time.perf_counter() - t0, 4)}, 1)
took = time.perf_counter() - t0
text = body.decode("utf-8", "replace")
res: dict = {"url": url, "status": status, "reason": reason, "content_type": ctype,
             "time_s": round(took, 4), "body_bytes": len(body), "body": text[:excerpt]}
path = urllib.parse.urlsplit(url).path.rstrip("/")
if path.endswith("/metrics"):
    metrics: dict = {}
    for line in text.splitlines():
        if line.startswith("#") or "_bucket{" in line:
            continue
        if line.startswith(("sglang:", "vllm:")):
            name, _, value = line.rpartition(" ")
            if len(metrics) < 80:
                metrics[name] = value
    res["metrics"] = metrics
elif text.lstrip().startswith("{"):
    try:
        obj = json.loads(text)
    except ValueError:
        obj = None
    if isinstance(obj, dict):
        res["json"] = {k: (v if not isinstance(v, str) else v[:200])
                       for k, v in list(obj.items())[:120]
                       if v is None or isinstance(v, (str, int, float, bool))}
_emit(res, 0 if 200 <= status < 400 else 1)
