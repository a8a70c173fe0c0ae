"""The check language: compiled once, signals become plain names, errors carry
their position; and, by property tests, no expression reaches an attribute,
an import, a dunder or a builtin beyond the allowed functions."""

from __future__ import annotations

import ast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perftriage.core.checks.catalogue import Signal
from perftriage.core.checks.expr import (
    ALLOWED_NODES,
    FUNCTIONS,
    CheckError,
    HistoryRef,
    SpreadRef,
    compile_check,
    parse_duration,
)


def test_signals_become_plain_names_and_decide_the_scope():
    c = compile_check("gap.idle_pct >= 30 and gap.traffic_ratio < 1.5")
    assert list(c.refs.values()) == [Signal("gap", "idle_pct"), Signal("gap", "traffic_ratio")]
    assert c.scope == "host"
    assert c.evaluate({"s0": 44.0, "s1": 1.01}) is True
    assert c.evaluate({"s0": 21.9, "s1": 1.0}) is False
    assert compile_check("gpu.dram_busy_pct < 30 and gap.gap > 2").scope == "gpu"
    assert compile_check("engine.itl_p50_ms > 20").scope == "engine"
    assert compile_check('profile.top.name matches "moe"').scope == "session"


def test_keyed_signals_history_and_spread():
    c = compile_check('not probe["cutedsl-import"].ok and profile.bucket["moe"].pct > 40')
    assert list(c.refs.values()) == [Signal("probe", "ok", key="cutedsl-import"),
                                     Signal("profile", "pct", key="moe", sub="bucket")]
    assert str(c.refs["s0"]) == 'probe["cutedsl-import"].ok'
    assert str(c.refs["s1"]) == 'profile.bucket["moe"].pct'
    c = compile_check('avg(gpu.dram_busy_pct, "30s") < 30 and rate(log.gen_tps, "1m") < 0')
    assert c.refs["h0"] == HistoryRef("avg", Signal("gpu", "dram_busy_pct"), 30.0)
    assert c.refs["h1"] == HistoryRef("rate", Signal("log", "gen_tps"), 60.0)
    c = compile_check("spread(gpu.dram_busy_pct) >= 20")
    assert c.refs["a0"] == SpreadRef(Signal("gpu", "dram_busy_pct")) and c.scope == "host"


def test_same_signal_twice_is_one_name():
    c = compile_check("gap.gap > 2 and gap.gap < 10")
    assert list(c.refs) == ["s0"]


def test_matches_is_an_re2_search_and_arithmetic_works():
    c = compile_check('profile.top.name matches "(?i)cutedsl" or gap.gap * 2 + 1 > 5 % 3')
    assert c.evaluate({"s0": "fused_moe_CuteDSL_kernel", "s1": 0.1}) is True
    assert c.evaluate({"s0": "flashinfer_cutlass_moe", "s1": 0.1}) is False
    assert c.evaluate({"s0": "x", "s1": 2.0}) is True
    # a word "matches" inside a string is text, not the operator
    c = compile_check('log.engine == "matches"')
    assert c.evaluate({"s0": "matches"}) is True


@pytest.mark.parametrize(("text", "column", "words"), [
    ("gap.trafic_ratio >= 1.5", 1, "did you mean gap.traffic_ratio"),
    ("gap.gap > 1 and gpu.dram_bussy_pct < 3", 17, "unknown signal gpu.dram_bussy_pct"),
    ("gap.traffic_ratio >", 20, "ends too early"),
    ("gap.gap >= (1", 12, "never closed"),
    ("x > 1", 1, "unknown name x"),
    ("gap.gap > 1 and log.running", 17, "not true/false"),
    ('avg(gap.gap, 30) > 1', 14, "quoted duration"),
    ('avg(gap.gap, "2x") > 1', 14, "not a duration"),
    ('avg(gap.gap, "11m") > 1', 14, "at most 600s"),
    ('gap.verdict matches "("', 21, "bad regular expression"),
    ("open('/etc/passwd') == 1", 1, "unknown function open"),
    ("gap.gap.real > 1", 1, "unknown name .real"),
    ('probe[1].ok', 7, "quoted string"),
    ("  gap.gap > 1 and\n  gap.foo < 2", 21, "unknown signal gap.foo"),
    ("gap > 1", 1, "gap alone is no signal"),
])
def test_errors_name_the_position(text, column, words):
    with pytest.raises(CheckError) as info:
        compile_check(text)
    assert words in str(info.value)
    assert info.value.column == column, str(info.value)


def test_durations():
    assert parse_duration("30s") == 30 and parse_duration("2m") == 120
    assert parse_duration("500ms") == 0.5 and parse_duration("1h") == 3600
    with pytest.raises(ValueError):
        parse_duration("30")


def test_only_plain_values_are_handed_in():
    c = compile_check("gap.gap > 1")
    with pytest.raises(TypeError):
        c.evaluate({"s0": object()})  # type: ignore[dict-item]
    with pytest.raises(TypeError):
        c.evaluate({"s0": [1, 2]})  # type: ignore[dict-item]


# --- property tests: nothing outside the allowed language -----------------------------

DANGEROUS = [
    "__import__('os')", "().__class__", "(1).__class__.__bases__", "''.__class__.__mro__",
    "open('x')", "eval('1')", "exec('1')", "getattr(1, 'real')", "globals()", "locals()",
    "vars()", "dir()", "type(1)", "lambda: 1", "[x for x in ()]", "{1: 2}", "[1]", "(1, 2)",
    "'a'[0]", "'a'.upper()", "f'{1}'", "(y := 1)", "gap.__class__", "gap.gap.__class__",
    'probe["x"].__class__', "abs.__self__", "abs.__call__", "__builtins__", "compile",
    "breakpoint()", "print(1)", "...", "None", "b'x'", "1j", "gap.gap ** 99999",
    "gpu.dram_busy_pct.__init__", "__name__", "_", "self", "profile.__dict__",
    "profile.bucket", "profile.top", "probe", "probe.ok", "avg", "avg(1, '1s')",
    "spread(gap.gap)", "max(1, 2)", "abs(x=1)", "gap.gap if 1 else __import__('os')",
]
SAFE_PARTS = ["gap.traffic_ratio", "gap.idle_pct", "gpu.dram_busy_pct", "log.running",
              'probe["import flashinfer.cute"].ok', 'profile.bucket["moe"].pct',
              "profile.top.name", "1.5", "30", '"cutedsl"', 'avg(gap.gap, "30s")',
              "spread(gpu.sm_active_pct)", "abs(gap.gap)", "True"]
OPS = [" and ", " or ", " >= ", " < ", " == ", " + ", " * ", " / ", " matches ", " - ", " % "]

atoms = st.sampled_from(DANGEROUS + SAFE_PARTS)
exprs = st.recursive(
    atoms,
    lambda inner: st.one_of(
        st.tuples(inner, st.sampled_from(OPS), inner).map("".join),
        inner.map(lambda e: f"not ({e})"),
        inner.map(lambda e: f"({e})"),
        inner.map(lambda e: f"({e}).__class__"),
        inner.map(lambda e: f"abs({e})"),
        inner.map(lambda e: f"({e})[0]"),
    ),
    max_leaves=6,
)


def _vet(check) -> None:
    for node in ast.walk(check.tree):
        assert isinstance(node, ALLOWED_NODES + (ast.expr_context, ast.boolop, ast.operator,
                                                 ast.unaryop, ast.cmpop)), ast.dump(node)
        assert not isinstance(node, (ast.Attribute, ast.Subscript, ast.Lambda))
        if isinstance(node, ast.Name):
            assert node.id in check.refs or node.id in FUNCTIONS, node.id
        if isinstance(node, ast.Call):
            assert isinstance(node.func, ast.Name) and node.func.id in FUNCTIONS
        if isinstance(node, ast.Constant):
            assert type(node.value) in (bool, int, float, str)
    for name in check.refs:
        assert not name.startswith("_")


@settings(max_examples=400, deadline=None)
@given(exprs)
def test_no_expression_reaches_attributes_imports_or_builtins(text):
    try:
        check = compile_check(text)
    except CheckError:
        return
    _vet(check)
    assert "__" not in "".join(str(r) for r in check.refs.values())
    values = {name: 1.0 for name in check.refs}
    try:
        result = check.evaluate(values)
    except Exception as exc:  # noqa: BLE001 - type errors etc. are the check's own verdict
        assert not isinstance(exc, (ImportError, AttributeError)), exc
        return
    assert type(result) in (bool, int, float, str)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=80))
def test_any_text_compiles_or_fails_with_a_check_error(text):
    try:
        check = compile_check(text)
    except CheckError as exc:
        assert 0 <= exc.pos <= max(len(text), 1)
        return
    _vet(check)


@pytest.mark.parametrize("text", DANGEROUS)
def test_each_dangerous_form_is_refused(text):
    with pytest.raises(CheckError):
        compile_check(f"{text} == 1")


@settings(max_examples=400, deadline=None)
@given(exprs, st.lists(st.one_of(st.floats(allow_nan=False, width=32), st.integers(-5, 5),
                                 st.booleans(), st.sampled_from(["", "cutedsl", "moe"])),
                       min_size=8, max_size=8))
def test_closures_answer_as_simpleeval_does(text, pool):
    """The evaluator's closures (checks/fast.py) and simpleeval's walk of the
    same tree agree: same value, or both raise."""
    try:
        check = compile_check(text)
    except CheckError:
        return
    values = {name: pool[i % len(pool)] for i, name in enumerate(check.refs)}

    def outcome(fn):
        try:
            return ("ok", fn(values))
        except Exception as exc:  # noqa: BLE001 - the kind of failure is compared
            return ("raised", type(exc).__name__)

    walked, closed = outcome(check.evaluate_plain), outcome(check.fast)
    assert walked == closed, (text, values)


def test_text_cannot_be_blown_up():
    c = compile_check('log.engine * 100000000 == "x"')
    with pytest.raises(Exception, match="long"):
        c.fast({"s0": "sglang"})
    c = compile_check('log.engine % 1 == "x"')
    with pytest.raises(TypeError):
        c.fast({"s0": "%999999999d"})


@settings(max_examples=300, deadline=None)
@given(exprs, st.lists(st.lists(st.one_of(st.floats(allow_nan=False, width=32),
                                          st.integers(-5, 5), st.booleans(),
                                          st.sampled_from(["", "moe"])),
                                min_size=8, max_size=8), min_size=1, max_size=4))
def test_columns_answer_as_the_per_scope_closures_do(text, rows):
    """Over all scopes at once (checks/fast.build_columns) the check gives, scope
    for scope, what the per-scope closure gives; where a column raises the
    evaluator falls back to the per-scope path, so only the no-raise case counts."""
    try:
        check = compile_check(text)
    except CheckError:
        return
    if check.vector is None:
        return
    names = list(check.refs)
    columns = {name: [row[i % len(row)] for row in rows] for i, name in enumerate(names)}
    try:
        results = check.vector(columns, len(rows))
    except Exception:  # noqa: BLE001 - the fallback case
        return
    for i in range(len(rows)):
        assert check.fast({name: columns[name][i] for name in names}) == results[i], text
