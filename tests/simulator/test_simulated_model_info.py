"""The SIMULATED server answers SGLang's /get_model_info and /get_server_info
with a model path whose model.safetensors.index.json it wrote, so the gap
form (G) fills itself in from the engine in the demo and the walk, as it
does on a real server."""

from __future__ import annotations

import json
import sys
import urllib.request

from perftriage.services.gap.model_bytes import read_model_bytes
from perftriage.simulator.scenarios import BYTES_PER_STEP_GB, SCENARIOS
from perftriage.simulator.sglang_http import serve
from perftriage.simulator.sglang_metrics import SimulatedSglangMetrics
from perftriage.transport.local import LocalTransport
from tests.support.sshd import free_port

MODEL = "zai-org/GLM-5-NVFP4"


async def test_the_gap_forms_bytes_come_from_the_simulated_engine():
    port = free_port()
    httpd = serve(SimulatedSglangMetrics(MODEL, tp=8), port, tp=8, model=MODEL,
                  scenario=SCENARIOS["wasted-traffic"])
    try:
        base = f"http://127.0.0.1:{port}"
        with urllib.request.urlopen(f"{base}/get_model_info", timeout=5) as resp:
            info = json.loads(resp.read())
        with urllib.request.urlopen(f"{base}/get_server_info", timeout=5) as resp:
            server = json.loads(resp.read())
        assert info["model_path"] == server["model_path"] != MODEL
        assert server["served_model_name"] == MODEL and info["is_generation"] is True
        got = await read_model_bytes(LocalTransport(), f"{base}/metrics", sys.executable)
    finally:
        httpd.shutdown()
    assert got.weights_gb == BYTES_PER_STEP_GB and got.gpus == 8
    assert got.sources["model_path"] == "the engine's /get_model_info"
    assert got.sources["weights_gb"].startswith("metadata.total_size of ")
