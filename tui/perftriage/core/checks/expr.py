"""Compile a check expression once; evaluate it with plain values each tick.

The text is parsed once with :func:`ast.parse`; the tree is then vetted and
rewritten: every signal reference (``gap.traffic_ratio``,
``probe["cutedsl-import"].ok``) and every history function over one
(``avg(gpu.dram_busy_pct, "30s")``) becomes a plain name (``s0``, ``h0``), so
the tree that :mod:`simpleeval` evaluates has no attribute access, no
subscript and no call but ``abs``; only numbers, strings and booleans are
ever handed in as names. simpleeval's past sandbox escapes went through
objects passed in as names -- there are none here, and its node handlers are
cut down to the node types the vetting allows (belt and braces).

``x matches "re"`` (an RE2 regular expression, searched) is not Python: the
word ``matches`` is swapped for the ``@`` operator (padded with spaces so
error positions stay those of the text) before parsing.
"""

from __future__ import annotations

import ast
import difflib
import io
import operator
import re
import tokenize
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import re2
import simpleeval

from perftriage.core.checks.fast import build as build_closures
from perftriage.core.checks.fast import build_columns
from perftriage.core.checks.catalogue import (
    FAMILIES,
    KEYED_SUBS,
    PROFILE_FIELDS,
    SCOPE_ORDER,
    Scope,
    TOP_SUBS,
    Signal,
    known_names,
)

HISTORY_FUNCTIONS = ("avg", "max", "min", "rate")
MAX_WINDOW_S = 600.0  # the evaluator keeps this much history per signal
MAX_TEXT = 2000
# nodes from the root to the deepest leaf: the vetting, the closure builder and
# simpleeval all recurse once per level (900 unary minuses fit in MAX_TEXT)
MAX_DEPTH = 64
QUOTE_CHARS = 80  # an error quotes at most this much of the check
_LONG_WORD = re.compile(r"\S{61,}")


class CheckError(ValueError):
    """A check that cannot be saved: ``pos`` is the 0-based character offset
    of the error in the text (``column`` is 1-based)."""

    def __init__(self, message: str, pos: int = 0) -> None:
        message = cut_long_words(message)  # a 1,500-character name is quoted in part
        super().__init__(message)
        self.message = message
        self.pos = max(0, pos)

    @property
    def column(self) -> int:
        return self.pos + 1

    def __str__(self) -> str:
        return f"column {self.column}: {self.message}"


def cut_long_words(text: str) -> str:
    """``text`` with every run of over 60 non-blank characters cut to 60 and ``…``."""
    return _LONG_WORD.sub(lambda m: m[0][:60] + "…", text)


def excerpt(text: str, pos: int, width: int = QUOTE_CHARS) -> str:
    """At most ``width`` characters of ``text`` around ``pos``, quoted; ``…``
    where it was cut."""
    if len(text) <= width:
        return repr(text)
    lo = max(0, min(pos - width // 2, len(text) - width))
    hi = lo + width
    return ("…" if lo else "") + repr(text[lo:hi]) + ("…" if hi < len(text) else "")


def _too_deep(tree: ast.AST) -> ast.AST | None:
    """The first node found deeper than :data:`MAX_DEPTH` (walked without
    recursion), or the nearest one above it with a position in the text."""
    stack: list[tuple[ast.AST, int, ast.AST]] = [(tree, 1, tree)]
    while stack:
        node, depth, placed = stack.pop()
        placed = node if hasattr(node, "col_offset") else placed
        if depth > MAX_DEPTH:
            return placed
        stack.extend((child, depth + 1, placed) for child in ast.iter_child_nodes(node))
    return None


@dataclass(frozen=True)
class HistoryRef:
    """``fn(signal, "30s")``: avg / max / min / rate over the last ``seconds``."""

    fn: str
    signal: Signal
    seconds: float

    def __str__(self) -> str:
        return f'{self.fn}({self.signal}, "{self.seconds:g}s")'


@dataclass(frozen=True)
class SpreadRef:
    """``spread(gpu.FIELD)``: max - min over a host's GPUs (a per-host value)."""

    signal: Signal

    def __str__(self) -> str:
        return f"spread({self.signal})"


Ref = Signal | HistoryRef | SpreadRef
# every signal (and history / spread reference) compiled so far, so that all
# checks naming ``gap.traffic_ratio`` share one object: the evaluator reads each
# once per scope and tick, keyed by the object
_SIGNALS: dict[Signal, Signal] = {}
_REFS: dict[Ref, Ref] = {}

_DURATION = re.compile(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)\s*")
_UNIT_S = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(text: str) -> float:
    """``"30s"``, ``"2m"``, ``"500ms"``, ``"1h"`` -> seconds (ValueError otherwise)."""
    m = _DURATION.fullmatch(text)
    if not m:
        raise ValueError(f"{text!r} is not a duration like \"30s\", \"2m\", \"500ms\"")
    return float(m.group(1)) * _UNIT_S[m.group(2)]


_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False  # a bad pattern is reported to the user, not on stderr


@lru_cache(maxsize=512)
def _regex(pattern: str):
    """RE2: linear time whatever the pattern, so a check cannot hang the tick."""
    return re2.compile(pattern, _RE2_OPTIONS)


def _matches(text: Any, pattern: Any) -> bool:
    if not isinstance(text, str) or not isinstance(pattern, str):
        raise TypeError(f"matches needs text on both sides, got {text!r} and {pattern!r}")
    return _regex(pattern).search(text) is not None


_CMP: dict[type, Any] = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
        ast.Gt: operator.gt, ast.GtE: operator.ge,
        ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b}
def _mod(a: Any, b: Any) -> Any:
    """``%`` on numbers only: on text it would be printf formatting ("%999999999d")."""
    if isinstance(a, str) or isinstance(b, str):
        raise TypeError("% takes numbers, not text")
    return a % b


# simpleeval's safe_add / safe_mult refuse text longer than its MAX_STRING_LENGTH
_ARITH: dict[type, Any] = {ast.Add: simpleeval.safe_add, ast.Sub: operator.sub, ast.Mult: simpleeval.safe_mult,
          ast.Div: operator.truediv, ast.Mod: _mod, ast.MatMult: _matches}
_UNARY: dict[type, Any] = {ast.Not: operator.not_, ast.USub: operator.neg, ast.UAdd: operator.pos}
OPERATORS: dict[type, Any] = {**_CMP, **_ARITH, **_UNARY}
# the only function left in the evaluated tree (history functions became names)
FUNCTIONS: dict[str, Any] = {"abs": abs}
# the node types simpleeval may meet; the vetting refuses every other one
ALLOWED_NODES: tuple[type, ...] = (ast.Expr, ast.BoolOp, ast.Compare, ast.BinOp, ast.UnaryOp,
                                   ast.Constant, ast.Name, ast.Call, ast.IfExp)
_BOOL_FIELDS = {("host", "ok"), ("engine", "ok"), ("probe", "ok")}


def _swap_matches(text: str) -> str:
    """Replace the word ``matches`` (outside strings) by ``@`` plus spaces."""
    out = list(text)
    try:  # one line: a token's column is its offset
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.NAME and tok.string == "matches":
                i = tok.start[1]
                out[i:i + 7] = list("@      ")
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass  # ast.parse below reports the error with its position
    return "".join(out)


class _Compiler:
    """Vets and rewrites one parsed check. ``src`` is the text flattened to one
    line and stripped; ``lead`` the characters stripped in front, so a node's
    position in the user's text is ``lead`` + its column."""

    def __init__(self, src: str, lead: int) -> None:
        self.src = src
        self.lead = lead
        self.refs: dict[str, Ref] = {}
        self._by_ref: dict[Ref, str] = {}

    def pos(self, node: ast.AST) -> int:
        col = getattr(node, "col_offset", 0)  # a UTF-8 byte offset
        return self.lead + len(self.src.encode()[:col].decode(errors="ignore"))

    def fail(self, node: ast.AST, message: str) -> CheckError:
        return CheckError(message, self.pos(node))

    def name_for(self, ref: Ref, prefix: str) -> str:
        ref = _REFS.setdefault(ref, ref)  # one object per signal: read once per scope and tick
        name = self._by_ref.get(ref)
        if name is None:
            name = self._by_ref[ref] = f"{prefix}{len(self.refs)}"
            self.refs[name] = ref
        return name

    # --- signal references --------------------------------------------------

    def unknown(self, node: ast.AST, written: str, fields: frozenset[str], family: str) -> CheckError:
        close = difflib.get_close_matches(written.rsplit(".", 1)[-1], sorted(fields), n=1)
        hint = f" (did you mean {family}.{close[0]}?)" if close else \
            f" ({family} has: {', '.join(sorted(fields))})"
        return self.fail(node, f"unknown signal {written}{hint}")

    def signal(self, node: ast.expr) -> Signal | None:
        """The signal ``node`` names, None when it is no signal reference at all."""
        if isinstance(node, ast.Name):
            if node.id in FAMILIES or node.id == "profile":
                raise self.fail(node, f"{node.id} alone is no signal: write {node.id}.FIELD"
                                + (' or probe["NAME"].FIELD' if node.id == "probe" else "")
                                + (' as kernel["REGEX"].FIELD' if node.id == "kernel" else ""))
            return None
        if not isinstance(node, ast.Attribute):
            if isinstance(node, ast.Subscript):
                raise self.fail(node, 'a probe is read as probe["NAME"].FIELD, e.g. '
                                      'probe["cutedsl-import"].ok; a kernel as '
                                      'kernel["REGEX"].FIELD, e.g. kernel["fused_moe"].bw_pct')
            return None
        base, attr = node.value, node.attr
        if isinstance(base, ast.Name):
            fam = base.id
            if fam not in FAMILIES:
                raise self.fail(base, f"unknown name {fam} (signals: {', '.join(FAMILIES)})")
            spec = FAMILIES[fam]
            if spec.keyed:
                raise self.fail(node, f'{fam} is read as {fam}["NAME"].FIELD')
            if (fam, attr) in KEYED_SUBS or (fam, attr) in TOP_SUBS:
                raise self.fail(node, f"write {self.subs_of(fam)}")
            if attr not in spec.fields:
                raise self.unknown(node, f"{fam}.{attr}", spec.fields, fam)
            return Signal(fam, attr)
        if isinstance(base, ast.Subscript) and isinstance(base.value, ast.Name) \
                and base.value.id in ("probe", "kernel"):
            fam, key = base.value.id, self.key(base)
            if attr not in FAMILIES[fam].fields:
                raise self.unknown(node, f"{fam}[...].{attr}", FAMILIES[fam].fields, fam)
            if fam == "kernel":
                try:
                    re.compile(key)
                except re.error as exc:
                    raise self.fail(base.slice, f'kernel["{key}"]: not a regular expression: '
                                                f"{exc}") from None
            return Signal(fam, attr, key=key)
        if isinstance(base, ast.Subscript) and isinstance(base.value, ast.Attribute) \
                and isinstance(base.value.value, ast.Name):
            fam, sub = base.value.value.id, base.value.attr
            fields = KEYED_SUBS.get((fam, sub))
            if fields is not None:
                key = self.key(base)
                if attr not in fields:
                    raise self.unknown(node, f"{fam}.{sub}[...].{attr}", fields, f"{fam}.{sub}")
                return Signal(fam, attr, key=key, sub=sub)
        if isinstance(base, ast.Attribute) and isinstance(base.value, ast.Name):
            fam, sub = base.value.id, base.attr
            fields = TOP_SUBS.get((fam, sub))
            if fields is not None:
                if attr not in fields:
                    raise self.unknown(node, f"{fam}.{sub}.{attr}", fields, f"{fam}.{sub}")
                return Signal(fam, attr, sub=sub)
        raise self.fail(node, f"unknown name .{attr}: signals are "
                              + ", ".join(known_names()[:6]) + ", ...")

    @staticmethod
    def subs_of(fam: str) -> str:
        """How a family's sub-families are written: ``profile.bucket["NAME"].FIELD or ...``."""
        return " or ".join([*(f'{fam}.{sub}["NAME"].FIELD' for f, sub in KEYED_SUBS if f == fam),
                            *(f"{fam}.{sub}.FIELD" for f, sub in TOP_SUBS if f == fam)])

    def key(self, sub: ast.Subscript) -> str:
        if not (isinstance(sub.slice, ast.Constant) and isinstance(sub.slice.value, str)):
            raise self.fail(sub.slice, 'the name in [...] must be a quoted string, e.g. ["moe"]')
        return sub.slice.value

    # --- the tree -----------------------------------------------------------------

    def rewrite(self, node: ast.expr) -> ast.expr:
        sig = self.signal(node) if isinstance(node, (ast.Name, ast.Attribute, ast.Subscript)) \
            else None
        if sig is not None:
            return ast.Name(id=self.name_for(sig, "s"), ctx=ast.Load())
        if isinstance(node, ast.Name):
            raise self.fail(node, f"unknown name {node.id} (signals look like gap.traffic_ratio; "
                                  "text needs quotes)")
        if isinstance(node, ast.Constant):
            if isinstance(node.value, (bool, int, float, str)):
                return node
            raise self.fail(node, f"{node.value!r} is not a number, text or true/false")
        if isinstance(node, ast.BoolOp):
            return ast.BoolOp(op=node.op, values=[self.rewrite(v) for v in node.values])
        if isinstance(node, ast.Compare):
            for op in node.ops:
                if type(op) not in _CMP:
                    raise self.fail(node, f"operator {type(op).__name__} is not allowed")
            if any(isinstance(op, ast.MatMult) for op in node.ops):
                raise self.fail(node, "matches")
            return ast.Compare(left=self.rewrite(node.left), ops=node.ops,
                               comparators=[self.rewrite(c) for c in node.comparators])
        if isinstance(node, ast.BinOp):
            if type(node.op) not in _ARITH:
                raise self.fail(node, f"operator {type(node.op).__name__} is not allowed "
                                      "(use + - * / %)")
            if isinstance(node.op, ast.MatMult) and isinstance(node.right, ast.Constant):
                try:
                    _regex(str(node.right.value))
                except Exception as exc:  # re2.error: the pattern's own message (bytes)
                    why = exc.args[0] if exc.args else exc
                    why = why.decode(errors="replace") if isinstance(why, bytes) else str(why)
                    raise self.fail(node.right, f"bad regular expression: {why}") from None
            return ast.BinOp(left=self.rewrite(node.left), op=node.op,
                             right=self.rewrite(node.right))
        if isinstance(node, ast.UnaryOp):
            if type(node.op) not in _UNARY:
                raise self.fail(node, "operator ~ is not allowed")
            return ast.UnaryOp(op=node.op, operand=self.rewrite(node.operand))
        if isinstance(node, ast.IfExp):
            return ast.IfExp(test=self.rewrite(node.test), body=self.rewrite(node.body),
                             orelse=self.rewrite(node.orelse))
        if isinstance(node, ast.Call):
            return self.call(node)
        raise self.fail(node, f"{type(node).__name__.lower()} is not allowed in a check "
                              "(comparisons, and/or/not, + - * / %, matches, "
                              "avg/max/min/rate/spread/abs)")

    def call(self, node: ast.Call) -> ast.expr:
        if not isinstance(node.func, ast.Name):
            raise self.fail(node, "only avg, max, min, rate, spread and abs can be called")
        fn = node.func.id
        if node.keywords:
            raise self.fail(node.keywords[0], f"{fn}() takes no keyword arguments")
        if fn in HISTORY_FUNCTIONS:
            if len(node.args) != 2:
                raise self.fail(node, f'{fn} takes a signal and a window: {fn}(gap.idle_pct, "30s")')
            sig = self.signal(node.args[0])
            if sig is None:
                raise self.fail(node.args[0], f"{fn}() needs a signal, e.g. gap.idle_pct")
            sig = _SIGNALS.setdefault(sig, sig)
            window = node.args[1]
            if not (isinstance(window, ast.Constant) and isinstance(window.value, str)):
                raise self.fail(window, f'{fn}()\'s window is a quoted duration, e.g. "30s"')
            try:
                seconds = parse_duration(window.value)
            except ValueError as exc:
                raise self.fail(window, str(exc)) from None
            if not 0 < seconds <= MAX_WINDOW_S:
                raise self.fail(window, f"the window must be over 0 and at most {MAX_WINDOW_S:g}s")
            return ast.Name(id=self.name_for(HistoryRef(fn, sig, seconds), "h"), ctx=ast.Load())
        if fn == "spread":
            sig = self.signal(node.args[0]) if len(node.args) == 1 else None
            if sig is None or sig.family != "gpu":
                raise self.fail(node, "spread takes one GPU signal: spread(gpu.dram_busy_pct)")
            sig = _SIGNALS.setdefault(sig, sig)
            return ast.Name(id=self.name_for(SpreadRef(sig), "a"), ctx=ast.Load())
        if fn == "abs":
            if len(node.args) != 1:
                raise self.fail(node, "abs takes one argument")
            return ast.Call(func=ast.Name(id="abs", ctx=ast.Load()),
                            args=[self.rewrite(node.args[0])], keywords=[])
        raise self.fail(node, f"unknown function {fn} (avg, max, min, rate, spread, abs)")

    def is_boolean(self, node: ast.expr) -> bool:
        """Whether the (original) node is true/false by its shape."""
        if isinstance(node, (ast.Compare,)):
            return True
        if isinstance(node, ast.BinOp):
            return isinstance(node.op, ast.MatMult)
        if isinstance(node, ast.UnaryOp):
            return isinstance(node.op, ast.Not)
        if isinstance(node, ast.BoolOp):
            return all(self.is_boolean(v) for v in node.values)
        if isinstance(node, ast.IfExp):
            return self.is_boolean(node.body) and self.is_boolean(node.orelse)
        if isinstance(node, ast.Constant):
            return isinstance(node.value, bool)
        if isinstance(node, ast.Attribute):
            sig = self.signal(node)
            return sig is not None and (sig.family, sig.field) in _BOOL_FIELDS
        return False

    def boolean_parts(self, node: ast.expr) -> None:
        if isinstance(node, ast.BoolOp):
            for v in node.values:
                self.boolean_parts(v)
        elif not self.is_boolean(node):
            raise self.fail(node, "this part is not true/false: compare it, e.g. "
                                  "gap.traffic_ratio >= 1.5")


@dataclass
class Check:
    """A compiled check: evaluate with :meth:`evaluate` and a value per name in ``refs``."""

    text: str
    tree: ast.expr = field(repr=False)
    refs: dict[str, Ref]
    scope: Scope
    _evaluator: simpleeval.SimpleEval = field(repr=False, compare=False, default=None)  # type: ignore[assignment]
    shown: dict[str, str] = field(repr=False, compare=False, default_factory=dict)
    # the same tree as closures, for the evaluator's hot path (checks/fast.py)
    fast: Any = field(repr=False, compare=False, default=None)
    vector: Any = field(repr=False, compare=False, default=None)  # over all scopes at once

    def __post_init__(self) -> None:
        # each name as the user wrote it ("gap.traffic_ratio"), for verdicts' values
        self.shown: dict[str, str] = {name: str(ref) for name, ref in self.refs.items()}
        ev = simpleeval.SimpleEval(operators=dict(OPERATORS), functions=dict(FUNCTIONS), names={})
        ev.nodes = {k: v for k, v in ev.nodes.items() if k in ALLOWED_NODES}
        self._evaluator = ev
        self.fast = build_closures(self.tree, OPERATORS, FUNCTIONS)
        self.vector = build_columns(self.tree, OPERATORS, FUNCTIONS)

    @property
    def signals(self) -> list[Signal]:
        """Every signal read (history and spread ones included), in order of appearance."""
        out: list[Signal] = []
        for ref in self.refs.values():
            sig = ref if isinstance(ref, Signal) else ref.signal
            if sig not in out:
                out.append(sig)
        return out

    def evaluate(self, values: dict[str, bool | int | float | str]) -> Any:
        """The value of the check for one scope. ``values`` maps each name of
        ``refs`` to a plain value; anything else is refused (a TypeError)."""
        for v in values.values():
            if type(v) not in (bool, int, float, str):
                raise TypeError(f"only numbers, text and true/false go into a check, not {type(v)}")
        return self.evaluate_plain(values)

    def evaluate_plain(self, values: dict[str, bool | int | float | str]) -> Any:
        """:meth:`evaluate` for values already known to be plain (the signal
        table hands out nothing else: see ``signals.SignalTable``)."""
        ev = self._evaluator
        ev.names = values
        return ev.eval("", previously_parsed=self.tree)


def scope_of(refs: dict[str, Ref]) -> Scope:
    """The finest scope among the refs' signals (spread() is per host)."""
    scopes = {"host" if isinstance(r, SpreadRef) else
              (r if isinstance(r, Signal) else r.signal).scope for r in refs.values()}
    for s in SCOPE_ORDER:
        if s in scopes:
            return s
    return "session"


def compile_check(text: str) -> Check:
    """Parse, vet and rewrite ``text``; :class:`CheckError` with the position otherwise."""
    if not text.strip():
        raise CheckError("the check is empty", 0)
    if len(text) > MAX_TEXT:
        raise CheckError(f"the check is longer than {MAX_TEXT} characters", MAX_TEXT)
    if "\x00" in text:
        raise CheckError("the check contains a NUL character", text.index("\x00"))
    # one line (newlines become spaces, so positions stay those of the text)
    flat = re.sub(r"[\r\n\t]", " ", text)
    src = _swap_matches(flat.strip())
    lead = len(flat) - len(flat.lstrip())
    comp = _Compiler(src, lead)
    try:
        tree = ast.parse(src, mode="eval")
    except SyntaxError as exc:
        if not exc.offset:  # Python gives no offset when the input ends too early
            raise CheckError("syntax error: the check ends too early",
                             len(text.rstrip())) from None
        raise CheckError(f"syntax error: {exc.msg}", lead + exc.offset - 1) from None
    except (RecursionError, MemoryError):  # the parser's own nesting limits
        raise CheckError(f"the check is nested too deeply (at most {MAX_DEPTH} levels)",
                         0) from None
    deep = _too_deep(tree)
    if deep is not None:
        raise CheckError(f"the check is nested too deeply (at most {MAX_DEPTH} levels)",
                         comp.pos(deep))
    comp.boolean_parts(tree.body)
    body = comp.rewrite(tree.body)
    ast.fix_missing_locations(body)
    return Check(text=text, tree=body, refs=comp.refs, scope=scope_of(comp.refs))
