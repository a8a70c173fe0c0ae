"""The bytes a decode step must move, from the running engine: its
/get_model_info's model_path, its checkpoint's model.safetensors.index.json
metadata.total_size read on its host, its /get_server_info's tp_size; each
figure says where it came from, and the gap form's last inputs win."""

from __future__ import annotations

import http.server
import json
import sys
import threading

import pytest

from perftriage.core.model import events as ev
from perftriage.core.model.reducer import apply
from perftriage.core.model.state import SessionState
from perftriage.services.gap.model_bytes import ModelBytes, ModelBytesError, read_model_bytes
from perftriage.transport.local import LocalTransport
from perftriage.ui.screens.roofline import prefill


def engine(answers: dict[str, object]):
    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            body = answers.get(self.path)
            self.send_response(200 if body is not None else 404)
            self.end_headers()
            if body is not None:
                self.wfile.write(json.dumps(body).encode())

        def log_message(self, *a):
            return None

    srv = http.server.HTTPServer(("127.0.0.1", 0), H)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def checkpoint(tmp_path, total) -> str:
    d = tmp_path / "model dir; $(boom)"
    d.mkdir()
    (d / "model.safetensors.index.json").write_text(json.dumps(
        {"metadata": {"total_size": total}, "weight_map": {}}))
    return str(d)


@pytest.fixture
def served(tmp_path):
    made = []

    def make(model_path, tp=2):
        srv = engine({"/get_model_info": {"model_path": model_path, "is_generation": True},
                      "/get_server_info": {"tp_size": tp, "model_path": model_path}})
        made.append(srv)
        return f"http://127.0.0.1:{srv.server_port}/metrics"

    yield make
    for srv in made:
        srv.shutdown()


async def test_the_engine_says_its_model_and_the_checkpoint_its_size(tmp_path, served):
    path = checkpoint(tmp_path, 16_060_000_000)
    got = await read_model_bytes(LocalTransport(), served(path), sys.executable)
    assert (got.weights_gb, got.gpus, got.model_path) == (16.06, 2, path)
    assert got.sources["weights_gb"].startswith("metadata.total_size of ")
    assert got.sources["gpus"] == "the engine's /get_server_info tp_size 2"
    assert got.sources["model_path"] == "the engine's /get_model_info"
    assert not (tmp_path / "boom").exists()


@pytest.mark.parametrize("total", ["16e9 && boom", 1e30, -5, None])
async def test_a_bad_size_is_said_not_used(tmp_path, served, total):
    path = checkpoint(tmp_path, total)
    with pytest.raises(ModelBytesError, match="no weights' size in .*type the bytes in G"):
        await read_model_bytes(LocalTransport(), served(path, tp=True), sys.executable)


async def test_no_model_path_is_said(served):
    with pytest.raises(ModelBytesError, match="names no model_path"):
        await read_model_bytes(LocalTransport(), served(None), sys.executable)


def test_the_gap_form_is_prefilled_with_where_each_number_came_from_and_g_overrides():
    got = ModelBytes(weights_gb=16.06, gpus=2, model_path="/m",
                     sources={"weights_gb": "metadata.total_size of /m/model.safetensors"
                              ".index.json", "gpus": "the engine's /get_server_info tp_size 2"})
    state = SessionState()
    filled = prefill(state, engine=got)
    assert filled.values["weights_gb"] == "16.06" and filled.values["gpus"] == "2"
    assert filled.notes["weights_gb"].startswith("metadata.total_size of /m/")
    assert filled.notes["gpus"] == "the engine's /get_server_info tp_size 2"
    apply(state, ev.GapComputed(floor_ms=1.0, ceiling_tps=1.0, bandwidth_gbs_total=1.0,
                                inputs={"weights_gb": 40.0, "gpus": 8}))
    typed = prefill(state, engine=got)  # the user's own last inputs win
    assert typed.values["weights_gb"] == "40" and typed.values["gpus"] == "8"


def test_the_engine_s_gpu_count_leaves_the_card_to_the_host():
    """The engine's tp_size fills the GPU count; the host's GPUs still give the
    card, so G then Enter records (the demo's form asked for a GPU name while
    its hosts pane knew the card)."""
    got = ModelBytes(weights_gb=20.0, gpus=8, model_path="/m",
                     sources={"gpus": "the engine's /get_server_info tp_size 8"})
    state = SessionState()
    apply(state, ev.HostSample(host="g", gpus=[ev.GpuSample(index=i, name="NVIDIA H200")
                                               for i in range(8)]))
    filled = prefill(state, engine=got)
    assert filled.values["gpus"] == "8"
    assert filled.notes["gpus"] == "the engine's /get_server_info tp_size 8"
    assert filled.values["gpu"] == "NVIDIA H200"
    assert filled.notes["gpu"] == "g's GPU 0"
