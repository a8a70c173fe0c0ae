"""The bytes a decode step must move, read from the running engine: what
wasted-traffic and near-floor need, without the user typing them.

- the model's path from SGLang's ``/get_model_info`` (``model_path``), else
  ``/get_server_info``'s;
- the weights' size from the checkpoint's ``model.safetensors.index.json``
  (``metadata.total_size``), read over the host's own transport (the path
  is the server's, on its machine);
- the GPUs a step is spread over from ``/get_server_info``'s ``tp_size``.

Every figure keeps where it came from (``sources``), so the gap form shows
it and ``G`` overrides it. The engine's answers are remote text: numbers
are checked (types, bounds) before use and strings are never run (the path
goes to the host's Python as an argument, shell-quoted).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Any

import msgspec

from perftriage.core.sanitize import visible
from perftriage.transport.base import TransportError
from perftriage.transport.http_request import endpoint, http_request

MAX_TOTAL_SIZE = 100e12  # 100 TB: past this a total_size is not a checkpoint's
MAX_TP = 4096
# reads the index's metadata.total_size (bounded: an index is a few MB at most)
READ_INDEX_PY = (
    "import json, os, sys\n"
    "p = os.path.join(sys.argv[1], 'model.safetensors.index.json')\n"
    "with open(p, 'rb') as f:\n"
    "    data = f.read(64 << 20)\n"
    "print(json.loads(data).get('metadata', {}).get('total_size'))\n")


class ModelBytesError(Exception):
    """Why the bytes could not be read (one line)."""


@dataclass
class ModelBytes:
    weights_gb: float | None = None
    gpus: int | None = None
    model_path: str | None = None
    sources: dict[str, str] = field(default_factory=dict)  # field -> where it came from


async def _json(transport, url: str, path: str) -> dict[str, Any] | None:
    try:
        resp = await http_request(transport, endpoint(url, path))
    except TransportError:
        return None
    if resp.status != 200:
        return None
    try:
        got = msgspec.json.decode(resp.body)
    except (msgspec.DecodeError, RecursionError):
        return None
    return got if isinstance(got, dict) else None


def _tp(info: dict[str, Any] | None) -> int | None:
    tp = (info or {}).get("tp_size")
    return tp if isinstance(tp, int) and not isinstance(tp, bool) and 1 <= tp <= MAX_TP else None


async def read_model_bytes(transport, url: str, python: str = "python3") -> ModelBytes:
    """What the engine at ``url`` (as ``transport``'s host sees it) says it
    runs, and its weights' size from its checkpoint; ModelBytesError when
    not even the model's path can be had."""
    model = await _json(transport, url, "/get_model_info")
    info = await _json(transport, url, "/get_server_info")
    out = ModelBytes()
    for src, name in ((model, "/get_model_info"), (info, "/get_server_info")):
        path = (src or {}).get("model_path")
        if isinstance(path, str) and path.strip() and len(path) < 4096 and "\x00" not in path:
            out.model_path = path
            out.sources["model_path"] = f"the engine's {name}"
            break
    if (tp := _tp(info)) is not None:
        out.gpus = tp
        out.sources["gpus"] = f"the engine's /get_server_info tp_size {tp}"
    if out.model_path is None:
        raise ModelBytesError(f"the engine at {visible(url)} names no model_path "
                              "(/get_model_info, /get_server_info): type the bytes in G")
    cmd = f"{shlex.quote(python)} -c {shlex.quote(READ_INDEX_PY)} {shlex.quote(out.model_path)}"
    try:
        res = await transport.run(cmd, timeout=15)
    except TransportError as exc:
        raise ModelBytesError(f"cannot read the checkpoint's index: {exc.reason}") from None
    word = (res.stdout.strip().splitlines() or [""])[-1]
    try:
        total = float(word)
    except ValueError:
        total = None
    if res.exit_status != 0 or total is None or not 0 < total <= MAX_TOTAL_SIZE:
        why = (res.stderr.strip().splitlines() or [word or "no answer"])[-1][:200]
        raise ModelBytesError(
            f"no weights' size in {visible(out.model_path)}/model.safetensors.index.json "
            f"({visible(why)}): type the bytes in G")
    out.weights_gb = round(total / 1e9, 3)
    out.sources["weights_gb"] = (f"metadata.total_size of {visible(out.model_path)}/"
                                 "model.safetensors.index.json")
    return out
