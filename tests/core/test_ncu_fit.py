"""What the ncu probe's host sends back when the per-kernel totals do not fit
the transport (``ncu_csv.fit``, issue 47 item 11): the biggest kernels by
name, the rest folded into rows by base name, else name family, else first
word, else the biggest first words and one ``(the other N kernels)`` row —
never a kernel's time left out of the table."""

from __future__ import annotations

import json
import random
import string

import pytest

from perftriage.core.profile import ncu, ncu_csv


def folded(names_times: dict[str, float]) -> dict:
    kernels = {name: [1, 1, t, 1000.0, 10.0, 40.0 * t, t, 10.0 * t, t, 0]
               for name, t in names_times.items()}
    return {"kernels": kernels, "gpu": "NVIDIA H200", "seen": dict.fromkeys(ncu_csv.METRICS, True),
            "na": {}, "notes": [], "device": "0", "devices": ["0"]}


def sent(names_times: dict[str, float]) -> ncu.NcuSummary:
    """What the cockpit makes of the host's answer (through its JSON)."""
    line = json.dumps(ncu_csv.fit(folded(names_times)), separators=(",", ":"))
    assert len(line) <= ncu_csv.RESULT_BUDGET + 400
    return ncu.summarize(json.loads(line))


def whole(s: ncu.NcuSummary, names_times: dict[str, float]) -> None:
    assert sum(k.names for k in s.kernels) == len(names_times) == s.launches
    assert sum(k.time_us for k in s.kernels) == pytest.approx(sum(names_times.values()) / 1e3)
    assert s.cut_kernels == 0 and s.cut_time_pct == 0


def test_a_small_answer_is_sent_whole():
    s = sent({"fused_moe_kernel": 5000.0, "gemv": 100.0})
    assert [k.name for k in s.kernels] == ["fused_moe_kernel", "gemv"]
    assert s.grouped_kernels == 0 and ncu.cut_text(s) == ""


def test_template_instantiations_fold_by_base_name():
    names = {f"void at::native::(anonymous namespace)::gemm<{i}, float>(int)": 100.0 + i
             for i in range(20_000)}
    names["fused_moe_kernel"] = 9e9
    s = sent(names)
    whole(s, names)
    assert s.kernels[0].name == "fused_moe_kernel" and s.grouped_by == "base name"
    [row] = [k for k in s.kernels if k.names > 1]
    assert row.name == f"gemm [{s.grouped_kernels:,} kernels]"
    assert "folded into 1 rows by base name" in ncu.cut_text(s)


def test_generated_kernels_fold_by_family():
    names = {f"triton_poi_fused_add_{i}": 10.0 for i in range(30_000)}
    names.update({f"triton_red_fused_mean_{i}": 20.0 for i in range(30_000)})
    s = sent(names)
    whole(s, names)
    assert s.grouped_by == "name family"
    assert {k.name.split(" [")[0] for k in s.kernels if k.names > 1} == {
        "triton_poi_fused_add_#", "triton_red_fused_mean_#"}


def test_names_with_nothing_in_common_end_in_one_row_of_the_rest():
    rng = random.Random(7)
    names = {"".join(rng.choices(string.ascii_letters, k=60)): 1000.0 + i
             for i in range(100_000)}
    s = sent(names)
    whole(s, names)
    assert s.grouped_by == "first word"
    other = [k for k in s.kernels if k.name.startswith("(the other ")]
    assert len(other) == 1 and other[0].names > 1000
    assert other[0].name == f"(the other {other[0].names:,} kernels)"


def test_the_base_name_is_one_helper_for_the_join_and_the_fold():
    from perftriage.core.profile.ncu_join import kernel_key

    assert kernel_key is ncu_csv.kernel_key
    assert kernel_key("void at::native::(anonymous namespace)::indexSelectSmallIndex<c10::"
                      "BFloat16, long>(at::cuda::TensorInfo)") == "indexSelectSmallIndex"
