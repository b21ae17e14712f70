"""Spec expressions: a whitelisted arithmetic language, parsed once and compiled to Python.

Circuit templates and op-cost rules write sizes and costs as expressions such as
``"2 * rows * k * n"`` or ``"experts * (1 - (1 - top_k / experts) ** rows)"``. The grammar is
numbers, names, ``+ - * / // **``, unary minus, parentheses and the calls ``min(a, b, ...)``,
``max(a, b, ...)`` and ``ceil(x)``. Anything else (attribute access, subscripts, other calls,
strings, lambdas, comprehensions, comparisons...) is refused when the spec loads.

Nothing can take unbounded time: every literal becomes a float (so ``**`` is one float
operation, never a big-integer power), literals and constant exponents are bounded, and the
text length and nesting depth are capped. A compiled expression is a plain Python function
generated from the validated tree alone; it runs on floats and on numpy arrays alike.
"""

from __future__ import annotations

import ast
import copy
import functools
import math
from collections.abc import Iterable, Mapping

#: Longest expression text accepted, characters.
MAX_LENGTH = 2000
#: Deepest expression tree accepted (operators nested inside each other).
MAX_DEPTH = 40
#: Largest magnitude of a numeric literal.
MAX_LITERAL = 1e18
#: Largest magnitude of a constant exponent (``x ** 64`` is fine, ``9 ** 9 ** 9`` is not).
MAX_EXPONENT = 64.0

#: Largest tree an expression may grow to once the ``let`` names it reads are inlined
#: (nodes). A chain ``l2 = l1 + l1``, ``l3 = l2 + l2``... doubles with every step: without a
#: bound 24 steps make a 16-million-node function that takes minutes to compile.
MAX_NODES = 20_000
#: Deepest tree once lets are inlined (Python's compiler refuses ~200 nested levels).
MAX_INLINED_DEPTH = 120

#: The callable names and how many arguments each takes (min, max).
FUNCTIONS = {"min": (2, 64), "max": (2, 64), "ceil": (1, 1)}

_BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
           ast.Pow: "**"}

_DESCRIBE = {
    ast.Attribute: "attribute access", ast.Subscript: "subscripts", ast.Lambda: "lambdas",
    ast.ListComp: "comprehensions", ast.SetComp: "comprehensions",
    ast.DictComp: "comprehensions", ast.GeneratorExp: "comprehensions",
    ast.Compare: "comparisons", ast.BoolOp: "boolean operators", ast.IfExp: "conditionals",
    ast.List: "lists", ast.Tuple: "tuples", ast.Dict: "tables", ast.Set: "sets",
    ast.Starred: "starred arguments", ast.NamedExpr: "assignments", ast.JoinedStr: "strings",
    ast.Await: "await", ast.Yield: "yield", ast.YieldFrom: "yield", ast.Slice: "slices",
}


class ExprError(ValueError):
    """An expression is outside the whitelist or malformed; the message says why."""


@functools.lru_cache(maxsize=8192)
def parse(text: str) -> Expr:
    """Parse and validate ``text`` once (cached by text). Raises :class:`ExprError`."""
    if isinstance(text, bool) or not isinstance(text, str | int | float):
        raise ExprError(f"expected an expression string or a number, got {text!r}")
    if not isinstance(text, str):
        text = repr(text)
    if len(text) > MAX_LENGTH:
        raise ExprError(f"expression is {len(text)} characters long; the limit is {MAX_LENGTH}")
    if text.count("(") > MAX_DEPTH:
        raise ExprError(f"expression nests more than {MAX_DEPTH} parentheses")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise ExprError(f"not an expression: {exc.msg}") from None
    except (RecursionError, MemoryError, ValueError) as exc:
        raise ExprError(f"not an expression: {type(exc).__name__}") from None
    body, names = _Validator().check(tree.body)
    return Expr(text, body, frozenset(names))


class _Validator:
    """Rebuilds a whitelisted copy of the tree; refuses everything else with a reason."""

    def check(self, node):
        self.names: set[str] = set()
        out, _ = self._visit(node, 0)
        return out, self.names

    def _visit(self, node, depth):
        """(new node, constant value or None)."""
        if depth > MAX_DEPTH:
            raise ExprError(f"expression nests deeper than {MAX_DEPTH} levels")
        if isinstance(node, ast.Constant):
            v = node.value
            if isinstance(v, bool) or not isinstance(v, int | float):
                kind = "strings" if isinstance(v, str | bytes) else type(v).__name__
                raise ExprError(f"{kind} are not allowed; only numbers")
            if isinstance(v, int) and v.bit_length() > 64:
                raise ExprError(f"literal {v} is larger than {MAX_LITERAL:g}")
            v = float(v)
            if not math.isfinite(v) or abs(v) > MAX_LITERAL:
                raise ExprError(f"literal {node.value!r} is larger than {MAX_LITERAL:g}")
            return ast.Constant(v), v
        if isinstance(node, ast.Name):
            name = node.id
            if name.startswith("_"):
                raise ExprError(f"name {name!r} is not allowed (names may not start with '_')")
            if name in FUNCTIONS:
                raise ExprError(f"{name!r} is a function; call it as {name}(...)")
            self.names.add(name)
            return ast.Name(name, ast.Load()), None
        if isinstance(node, ast.UnaryOp):
            if not isinstance(node.op, ast.USub):
                raise ExprError(f"unary {type(node.op).__name__} is not allowed; only minus")
            inner, c = self._visit(node.operand, depth + 1)
            return ast.UnaryOp(ast.USub(), inner), (None if c is None else -c)
        if isinstance(node, ast.BinOp):
            if type(node.op) not in _BINOPS:
                raise ExprError(f"operator {type(node.op).__name__} is not allowed; "
                                "use + - * / // **")
            left, lc = self._visit(node.left, depth + 1)
            right, rc = self._visit(node.right, depth + 1)
            if isinstance(node.op, ast.Pow):
                if rc is None and _has_pow(right):
                    raise ExprError("a power in an exponent (a ** b ** c) is not allowed")
                if rc is not None and abs(rc) > MAX_EXPONENT:
                    raise ExprError(f"exponent {rc:g} is larger than {MAX_EXPONENT:g}")
            const = None
            if lc is not None and rc is not None:
                const = _fold(type(node.op), lc, rc)
            return ast.BinOp(left, type(node.op)(), right), const
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
                what = node.func.id if isinstance(node.func, ast.Name) else "an expression"
                raise ExprError(f"calling {what} is not allowed; only "
                                f"{', '.join(FUNCTIONS)}")
            if node.keywords:
                raise ExprError(f"{node.func.id}() takes no keyword arguments")
            low, high = FUNCTIONS[node.func.id]
            if not low <= len(node.args) <= high:
                raise ExprError(f"{node.func.id}() takes {low}" +
                                (f" to {high}" if high != low else "") +
                                f" arguments, got {len(node.args)}")
            args = [self._visit(a, depth + 1)[0] for a in node.args]
            return ast.Call(ast.Name(node.func.id, ast.Load()), args, []), None
        reason = _DESCRIBE.get(type(node), type(node).__name__)
        raise ExprError(f"not allowed in an expression: {reason}")


def _has_pow(node) -> bool:
    return any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.Pow) for n in ast.walk(node))


def _fold(op, a: float, b: float):
    """Evaluate a constant sub-expression while validating (bounds any blow-up)."""
    try:
        if op is ast.Add:
            v = a + b
        elif op is ast.Sub:
            v = a - b
        elif op is ast.Mult:
            v = a * b
        elif op is ast.Div:
            v = a / b
        elif op is ast.FloorDiv:
            v = a // b
        else:
            v = a ** b
    except ZeroDivisionError:
        raise ExprError("division by zero in a constant") from None
    except OverflowError:
        raise ExprError("constant overflows") from None
    if isinstance(v, complex) or not math.isfinite(v) or abs(v) > 1e300:
        raise ExprError("constant overflows")
    return float(v)


class Expr:
    """A validated expression: its text, its free ``names`` and a whitelisted tree."""

    __slots__ = ("_calls", "_fn", "body", "names", "text")

    def __init__(self, text: str, body: ast.AST, names: frozenset[str]):
        self.text = text
        self.body = body
        self.names = names
        self._fn = None
        self._calls = 0

    def __repr__(self) -> str:
        return f"Expr({self.text!r})"

    def unknown(self, known: Iterable[str]) -> list[str]:
        """Names this expression reads that are not in ``known``, sorted."""
        return sorted(self.names - set(known))

    def __call__(self, env: Mapping[str, float]):
        """Evaluate with names from ``env`` (floats or numpy arrays).

        The first calls walk the validated tree (compiling costs far more than a few
        evaluations: a spec check evaluates most expressions once); an expression evaluated
        often is compiled into a function. Both give the same floats.
        """
        if self._fn is None:
            if self._calls < _INTERPRET_CALLS:
                self._calls += 1
                return interpret(self.body, env)
            self._fn = compile_function(("_env",), [self.body], env_arg=True)
        return self._fn(env)[0]


#: Evaluations of one :class:`Expr` that walk its tree before it is compiled. Compiling costs
#: a few hundred evaluations; the hot paths (plans) compile their trees directly, so an
#: ``Expr`` (template dims, spec checks) is compiled only when evaluated very often.
_INTERPRET_CALLS = 1000

_APPLY = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b,
          ast.Mult: lambda a, b: a * b, ast.Div: lambda a, b: a / b,
          ast.FloorDiv: lambda a, b: a // b, ast.Pow: lambda a, b: a ** b}


def interpret(body: ast.AST, env: Mapping[str, float]):
    """Evaluate a validated tree with names from ``env`` (a KeyError names a missing one),
    with the scalar functions, as a compiled ``env`` function would."""
    t = type(body)
    if t is ast.Constant:
        return body.value
    if t is ast.Name:
        return env[body.id]
    if t is ast.BinOp:
        return _APPLY[type(body.op)](interpret(body.left, env), interpret(body.right, env))
    if t is ast.UnaryOp:
        return -interpret(body.operand, env)
    if t is ast.Call:
        return SCALAR_FUNCS[body.func.id](*(interpret(a, env) for a in body.args))
    raise ExprError(f"not a validated expression node: {t.__name__}")


def shape(body: ast.AST, inlined: Mapping[str, tuple[int, int]] | None = None
          ) -> tuple[int, int]:
    """(nodes, depth) of ``body`` once each name in ``inlined`` is replaced by a tree of the
    (nodes, depth) it maps to; computed without building the tree (a chain of lets that
    doubles at each step is measured in linear time)."""
    inlined = inlined or {}

    def walk(node) -> tuple[int, int]:
        if isinstance(node, ast.Name) and node.id in inlined:
            return inlined[node.id]
        size, depth = 1, 0
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr_context | ast.operator | ast.unaryop):
                continue
            n, d = walk(child)
            size += n
            depth = max(depth, d)
        return size, depth + 1

    return walk(body)


def too_big(nodes: int, depth: int) -> str | None:
    """Why a tree of ``nodes`` and ``depth`` is refused, or None."""
    if nodes > MAX_NODES:
        return (f"inlining the lets it reads makes it {nodes:,} nodes (the limit is "
                f"{MAX_NODES:,}); a let that reads an earlier one twice doubles the size at "
                "every step: compute the value in fewer steps")
    if depth > MAX_INLINED_DEPTH:
        return (f"inlining the lets it reads nests it {depth} levels deep (the limit is "
                f"{MAX_INLINED_DEPTH}); use fewer chained lets")
    return None


def substitute(body: ast.AST, bindings: Mapping[str, float | ast.AST]) -> ast.AST:
    """A copy of a validated tree with names replaced: by a number, or by another validated
    tree (an inlined ``let``). Refuses (:class:`ExprError`) a result past :data:`MAX_NODES`
    or :data:`MAX_INLINED_DEPTH`, measured before it is built."""
    trees = {k: v for k, v in bindings.items() if isinstance(v, ast.AST)}
    if trees:
        why = too_big(*shape(body, {k: shape(v) for k, v in trees.items()
                                    if _reads(body, k)}))
        if why:
            raise ExprError(why)

    class _Sub(ast.NodeTransformer):
        def visit_Name(self, node):
            if node.id in bindings:
                v = bindings[node.id]
                if isinstance(v, ast.AST):
                    return _copy(v)
                return ast.Constant(float(v))
            return node

    return _Sub().visit(_copy(body))


def free_names(body: ast.AST) -> set[str]:
    """Names a (possibly substituted) tree still reads, besides the functions."""
    return {n.id for n in ast.walk(body) if isinstance(n, ast.Name) and n.id not in FUNCTIONS}


def _reads(body: ast.AST, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(body))


def _copy(node):
    """A copy of a validated tree (its five node types), without the parser's nesting limit
    and faster than ``copy.deepcopy``."""
    t = type(node)
    if t is ast.Constant:
        return ast.Constant(node.value)
    if t is ast.Name:
        return ast.Name(node.id, ast.Load())
    if t is ast.BinOp:
        return ast.BinOp(_copy(node.left), type(node.op)(), _copy(node.right))
    if t is ast.UnaryOp:
        return ast.UnaryOp(type(node.op)(), _copy(node.operand))
    if t is ast.Call:
        return ast.Call(_copy(node.func), [_copy(a) for a in node.args], [])
    return copy.deepcopy(node)


def _np_ceil(x):
    import numpy as np  # numpy loads on first vector use, not when specs load

    return np.ceil(x)


def _scalar_ceil(x):
    return float(math.ceil(x))


def _np_min(*args):
    import numpy as np

    return functools.reduce(np.minimum, args)


def _np_max(*args):
    import numpy as np

    return functools.reduce(np.maximum, args)


#: Functions bound into compiled code: scalar (fast on floats) and vector (numpy) variants.
SCALAR_FUNCS = {"min": min, "max": max, "ceil": _scalar_ceil}


VECTOR_FUNCS = {"min": _np_min, "max": _np_max, "ceil": _np_ceil}


def compile_function(args: tuple[str, ...], bodies: list[ast.AST], *, vector: bool = False,
                     env_arg: bool = False):
    """Compile validated trees into one function ``f(*args) -> tuple`` of their values.

    Only trees produced by :func:`parse` (and :func:`substitute`) reach this point, so the
    generated code holds nothing but arithmetic on the arguments and min/max/ceil.
    ``env_arg`` makes the single argument a mapping from which every free name is read.
    """
    bodies = [_copy(b) for b in bodies]
    funcs = VECTOR_FUNCS if vector else SCALAR_FUNCS
    if env_arg:
        free = sorted({n.id for b in bodies for n in ast.walk(b)
                       if isinstance(n, ast.Name) and n.id not in funcs})
        lines = [ast.Assign([ast.Name(n, ast.Store())],
                            ast.Subscript(ast.Name("_env", ast.Load()), ast.Constant(n),
                                          ast.Load()))
                 for n in free]
    else:
        lines = []
    fn = ast.FunctionDef(
        name="_compiled",
        args=ast.arguments(posonlyargs=[], args=[ast.arg(a) for a in args], vararg=None,
                           kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[]),
        body=[*lines, ast.Return(ast.Tuple(bodies, ast.Load()))],
        decorator_list=[], returns=None)
    module = ast.fix_missing_locations(ast.Module([fn], type_ignores=[]))
    namespace = {"__builtins__": {}, **funcs}
    exec(compile(module, "<roofkit expression>", "exec"), namespace)  # generated, whitelisted
    return namespace["_compiled"]


def evaluate(text: str, env: Mapping[str, float]):
    """Parse (cached) and evaluate ``text`` with names from ``env``; a convenience."""
    return parse(text)(env)
