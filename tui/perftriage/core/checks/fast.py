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
