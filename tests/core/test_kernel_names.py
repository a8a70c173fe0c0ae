"""Kernel names cut for a cell or a line keep what tells kernels apart: the
innermost template's name (``MoeFCGemm`` inside ``cutlass::device_kernel<…>``)
or the function's name — one helper (``short_name``) for the Profile view, the
triage's top kernels and its fix line."""

from __future__ import annotations

import pytest

from perftriage.core.profile.summarize import summarize_files
from perftriage.core.profile.table import short_name, short_names
from perftriage.core.triage.diagnose import diagnose
from perftriage.core.triage.witnesses import Stamped, Witnesses
from perftriage.simulator import trace_synth
from perftriage.simulator.scenarios import SCENARIOS

MOE = trace_synth.MOE_KERNELS["flashinfer_cutlass"][0]
DECODE = "void flashinfer::BatchDecodeWithPagedKVCacheKernel<true, 4u, 16u, __nv_bfloat16>"


@pytest.mark.parametrize("width", [24, 30, 34, 40, 50, 60])
def test_the_innermost_template_name_survives_the_cut(width):
    got = short_name(MOE, width)
    assert len(got) <= width and "MoeFCGemm" in got
    assert "device_kernel" in got or width < 30  # the function too, while it fits


@pytest.mark.parametrize("width", [34, 40, 50])
def test_a_long_function_name_stays_whole_before_its_namespace(width):
    got = short_name(DECODE, width)
    assert "BatchDecodeWithPagedKVCacheKernel" in got and len(got) <= width


def test_the_profile_view_s_names_keep_the_moe_kernel_and_stay_distinct(tmp_path):
    paths = trace_synth.write(SCENARIOS["kernel-below-roofline"].trace(
        "flashinfer_cutlass", 2, 3), tmp_path, "k")
    s = summarize_files(paths)
    names = short_names([k.name for k in s.kernels], 34)  # the demo's column at 100x30
    assert len(set(names)) == len(names)
    assert any("MoeFCGemm" in n for n in names)


def test_the_triage_s_top_kernels_name_the_moe_kernel(tmp_path):
    paths = trace_synth.write(SCENARIOS["kernel-below-roofline"].trace(
        "flashinfer_cutlass", 2, 3), tmp_path, "k")
    w = Witnesses(host="gpu", start=0, end=30, gap=2.0, gpu_util_pct=98.0,
                  capture=Stamped(5.0, "prof1", summarize_files(paths)))
    lead = next(f for f in diagnose(w) if f.cause == "kernel-below-roofline")
    top = next(e.text for e in lead.evidence if e.text.startswith("top kernels"))
    assert "MoeFCGemm" in top and "cutlass_ke`" not in top
    assert "BatchDecodeWithPagedKVCacheKernel" in top
