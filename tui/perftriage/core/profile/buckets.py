"""Kernel name -> bucket, by an ordered table of name rules.

The first rule whose regular expression matches anywhere in the kernel name
(case-insensitive) decides the bucket; a name no rule matches is ``other``.
User rules from the config (``[[profile.rules]]``) are tried before the
built-in table, so a user can move a kernel to another bucket or add a new
bucket name. A :class:`Classifier` decides each distinct name once and caches
it: a trace has hundreds of thousands of kernel events but a few hundred names.

The built-in table (order matters: an MoE grouped GEMM is ``moe``, not
``gemm``; a flash-attention softmax is ``attention``, not ``elementwise/norm``):

=================  ==========================================================
bucket             names it matches
=================  ==========================================================
communication      NCCL, all-reduce / all-gather / reduce-scatter / all-to-all,
                   custom all-reduce (cross_device_reduce, one/two-shot),
                   DeepEP, mscclpp
moe                fused_moe, cutlass/cutedsl MoE, grouped GEMM, expert,
                   routing top-k (topk_softmax, grouped_topk, moe_align)
attention          flash, fmha, sdpa (incl. cuDNN ``..._sdpa_...``), attention,
                   MLA, paged, flashinfer decode/prefill, xqa, merge_state
gemm               gemm, cuBLAS ``nvjet_*``, cutlass, xmma, cublas, matmul,
                   DeepGEMM, scaled_mm, splitK, Tensile/hipBLASLt ``Cijk_*``
memcpy/memset      memcpy / memset (``Memcpy DtoD``, ``memcpy32_post``)
elementwise/norm   elementwise, norm (rms/layer), softmax, activation (silu,
                   gelu, act_and_mul), rotary/rope, reduce, copy, fill, cast,
                   quantisation
other              anything else
=================  ==========================================================
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import re2

COMMUNICATION = "communication"
MOE = "moe"
ATTENTION = "attention"
GEMM = "gemm"
MEMCPY = "memcpy/memset"
ELEMENTWISE = "elementwise/norm"
OTHER = "other"

# Bucket order used when listing buckets with equal time, and by the bar.
BUCKETS = (COMMUNICATION, MOE, ATTENTION, GEMM, MEMCPY, ELEMENTWISE, OTHER)

BUILTIN_RULES: tuple[tuple[str, str], ...] = (
    (COMMUNICATION, r"nccl|all_?reduce|all_?gather|reduce_?scatter|all_?to_?all|"
                    r"cross_device_reduce|custom_?ar|one_?shot|two_?shot|deep_?ep|mscclpp|"
                    r"quick_?reduce"),
    (MOE, r"moe|expert|grouped_?gemm|group_?gemm|topk_?softmax|grouped_topk|"
          r"moe_align|count_and_sort_expert"),
    (ATTENTION, r"flash|fmha|sdpa|attention|attn|(?:^|[^a-z])mla|paged|flashinfer|"
                r"batchdecode|batchprefill|xqa|merge_state"),
    (GEMM, r"gemm|nvjet|cutlass|xmma|cublas|matmul|deep_?gemm|scaled_mm|splitk|wgmma|"
           r"^cijk_"),
    (MEMCPY, r"memcpy|memset"),
    (ELEMENTWISE, r"elementwise|norm|softmax|silu|gelu|act_and_mul|rotary|rope|reduce|"
                  r"copy|fill|cast|quant"),
)


class RuleError(ValueError):
    """A user rule whose pattern is not a valid regular expression."""


@dataclass(frozen=True)
class Rule:
    bucket: str
    pattern: re.Pattern[str]
    # the built-in table also as RE2: linear, and ~35x faster than ``re`` on a
    # kilobyte-long name (a trace can hold thousands of distinct names)
    fast: Any = None

    def search(self, name: str) -> bool:
        if self.fast is not None:
            try:
                return self.fast.search(name) is not None
            except UnicodeEncodeError:  # a lone surrogate: RE2 reads UTF-8 only
                pass
        return self.pattern.search(name) is not None


def compile_rules(user: list[tuple[str, str]] | None = None) -> list[Rule]:
    """User rules (tried first) then the built-in table, compiled."""
    rules = []
    for bucket, pattern in [*(user or []), *BUILTIN_RULES]:
        try:
            rules.append(Rule(bucket, re.compile(pattern, re.IGNORECASE)))
        except re.error as exc:
            raise RuleError(f"kernel rule for {bucket!r}: bad pattern {pattern!r}: {exc}") from None
    builtin = len(rules) - len(BUILTIN_RULES)
    for i, (bucket, pattern) in enumerate(BUILTIN_RULES, builtin):
        rules[i] = Rule(bucket, rules[i].pattern, re2.compile(f"(?i:{pattern})", _RE2_OPTIONS))
    return rules


_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False


class Classifier:
    """Decides a kernel name's bucket once per distinct name."""

    def __init__(self, user_rules: list[tuple[str, str]] | None = None) -> None:
        self._rules = compile_rules(user_rules)
        self._cache: dict[str, str] = {}

    def rule_for(self, name: str) -> str:
        """Which rule chose ``name``'s bucket, in words (the kernel detail)."""
        builtin = len(self._rules) - len(BUILTIN_RULES)
        for i, r in enumerate(self._rules):
            if r.search(name):
                where = "built-in rule" if i >= builtin else "[[profile.rules]]"
                return f"{where} {r.bucket!r}: /{r.pattern.pattern}/i"
        return f"no rule matched: {OTHER!r}"

    def bucket(self, name: str) -> str:
        hit = self._cache.get(name)
        if hit is None:
            hit = next((r.bucket for r in self._rules if r.search(name)), OTHER)
            self._cache[name] = hit
        return hit
