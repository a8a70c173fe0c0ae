"""The hot path: a vetted check tree turned into nested closures.

simpleeval walks the tree on every call (a handler lookup and a safety check
per node): ~2 µs for ``a >= 30 and b < 1.5``, so 200 checks on 64 GPUs a
second would cost ~2.6 % of a core in the walk alone. Here each node of the
*already vetted and rewritten* tree (``expr.compile_check``: only the node
types of ``expr.ALLOWED_NODES``, names that stand for plain values, ``abs``
the only call) becomes one small Python function, built once; no ``eval``,
no ``exec``, no code object. The operators are the very functions simpleeval
is given (``expr.OPERATORS``, handed in: simpleeval's own length-limited
``+`` and ``*``), and the property tests check that both give the same answer (or
both fail) on random checks and values.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

Names = dict[str, Any]
Fn = Callable[[Names], Any]


def build(node: ast.expr, operators: dict[type, Any], functions: dict[str, Any]) -> Fn:
    """One closure for ``node`` (a vetted tree), with the operators and
    functions simpleeval is given; any other node is a ValueError."""
    OPERATORS, FUNCTIONS = operators, functions  # noqa: N806 - the same tables as expr's

    def build(node: ast.expr) -> Fn:  # noqa: PLR0911 - one case per node type
        return _build(node, OPERATORS, FUNCTIONS, build)

    return build(node)


def _build(node: ast.expr, OPERATORS: dict[type, Any], FUNCTIONS: dict[str, Any],  # noqa: N803
           build: Callable[[ast.expr], Fn]) -> Fn:
    if isinstance(node, ast.Constant):
        value = node.value
        return lambda names: value
    if isinstance(node, ast.Name):
        key = node.id
        return lambda names: names[key]
    if isinstance(node, ast.BoolOp):
        parts = [build(v) for v in node.values]
        if isinstance(node.op, ast.And) and len(parts) == 2:
            one, two = parts
            return lambda names: one(names) and two(names)
        if isinstance(node.op, ast.Or) and len(parts) == 2:
            one, two = parts
            return lambda names: one(names) or two(names)
        if isinstance(node.op, ast.And):
            def all_of(names: Names) -> Any:
                out: Any = True
                for part in parts:
                    out = part(names)
                    if not out:
                        return out
                return out
            return all_of

        def any_of(names: Names) -> Any:
            out: Any = False
            for part in parts:
                out = part(names)
                if out:
                    return out
            return out
        return any_of
    if isinstance(node, ast.Compare):
        first = build(node.left)
        chain = [(OPERATORS[type(op)], build(c)) for op, c in zip(node.ops, node.comparators,
                                                                   strict=True)]
        if len(chain) == 1:
            (cmp, second), = chain
            left_node, right_node = node.left, node.comparators[0]
            # the common shapes in one call: ``signal OP constant`` and ``signal OP signal``
            if isinstance(left_node, ast.Name) and isinstance(right_node, ast.Constant):
                key, value = left_node.id, right_node.value
                return lambda names: cmp(names[key], value)
            if isinstance(left_node, ast.Name) and isinstance(right_node, ast.Name):
                key, other = left_node.id, right_node.id
                return lambda names: cmp(names[key], names[other])
            return lambda names: cmp(first(names), second(names))

        def compare(names: Names) -> Any:
            left = first(names)
            out: Any = True
            for cmp, part in chain:
                right = part(names)
                out = cmp(left, right)
                if not out:
                    return out
                left = right
            return out
        return compare
    if isinstance(node, ast.BinOp):
        op, left, right = OPERATORS[type(node.op)], build(node.left), build(node.right)
        return lambda names: op(left(names), right(names))
    if isinstance(node, ast.UnaryOp):
        uop, operand = OPERATORS[type(node.op)], build(node.operand)
        return lambda names: uop(operand(names))
    if isinstance(node, ast.IfExp):
        test, body, orelse = build(node.test), build(node.body), build(node.orelse)
        return lambda names: body(names) if test(names) else orelse(names)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
            and node.func.id in FUNCTIONS and len(node.args) == 1 and not node.keywords:
        fn, arg = FUNCTIONS[node.func.id], build(node.args[0])
        return lambda names: fn(arg(names))
    raise ValueError(f"not a vetted check node: {type(node).__name__}")


Columns = dict[str, list[Any]]
VectorFn = Callable[[Columns, int], list[Any]]


def build_columns(node: ast.expr, operators: dict[type, Any],
                  functions: dict[str, Any]) -> VectorFn | None:
    """The same tree over columns: each name stands for a list of values (one
    per scope), the result is the list of the check's values. One call per
    check and tick instead of one per GPU. Both sides of ``and`` / ``or`` and
    of ``x if c else y`` are computed for every scope, so a column can raise
    where one scope's call would not (``b > 0 and a / b > 1``): the evaluator
    then falls back to the per-scope closures. None for a tree this does not
    cover (chained comparisons)."""
    try:
        return _vector(node, operators, functions)
    except NotImplementedError:
        return None


def _vector(node: ast.expr, ops: dict[type, Any], fns: dict[str, Any]) -> VectorFn:  # noqa: PLR0911
    if isinstance(node, ast.Constant):
        value = node.value
        return lambda cols, n: [value] * n
    if isinstance(node, ast.Name):
        key = node.id
        return lambda cols, n: cols[key]
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        return _pair(ops[type(node.ops[0])], node.left, node.comparators[0], ops, fns)
    if isinstance(node, ast.BinOp):
        return _pair(ops[type(node.op)], node.left, node.right, ops, fns)
    if isinstance(node, ast.BoolOp):
        parts = [_vector(v, ops, fns) for v in node.values]
        conj = isinstance(node.op, ast.And)

        def fold(cols: Columns, n: int) -> list[Any]:
            out = parts[0](cols, n)
            for part in parts[1:]:  # ((a and b) and c) is a and b and c, value for value
                nxt = part(cols, n)
                out = [a and b for a, b in zip(out, nxt)] if conj else \
                    [a or b for a, b in zip(out, nxt)]
            return out
        return fold
    if isinstance(node, ast.UnaryOp):
        uop, operand = ops[type(node.op)], _vector(node.operand, ops, fns)
        return lambda cols, n: [uop(a) for a in operand(cols, n)]
    if isinstance(node, ast.IfExp):
        test, body, orelse = (_vector(x, ops, fns) for x in (node.test, node.body, node.orelse))
        return lambda cols, n: [b if t else o for t, b, o in zip(test(cols, n), body(cols, n),
                                                                 orelse(cols, n))]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
            and node.func.id in fns and len(node.args) == 1 and not node.keywords:
        fn, arg = fns[node.func.id], _vector(node.args[0], ops, fns)
        return lambda cols, n: [fn(a) for a in arg(cols, n)]
    raise NotImplementedError(type(node).__name__)


def _pair(op: Any, left: ast.expr, right: ast.expr, ops: dict[type, Any],
          fns: dict[str, Any]) -> VectorFn:
    if isinstance(right, ast.Constant):  # the common shape: signal OP constant
        value, lhs = right.value, _vector(left, ops, fns)
        return lambda cols, n: [op(a, value) for a in lhs(cols, n)]
    lhs, rhs = _vector(left, ops, fns), _vector(right, ops, fns)
    return lambda cols, n: [op(a, b) for a, b in zip(lhs(cols, n), rhs(cols, n))]
