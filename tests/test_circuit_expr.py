"""The expression language: whitelisted arithmetic, compiled once, floats and arrays."""

import numpy as np
import pytest

from roofkit.circuit import expr


@pytest.mark.parametrize("text, env, value", [
    ("2 * rows * k * n", {"rows": 3, "k": 4, "n": 5}, 120.0),
    ("a // b + a / b", {"a": 7, "b": 2}, 6.5),
    ("-a ** 2", {"a": 3}, -9.0),
    ("min(a, b, 1) + max(a, b)", {"a": 4, "b": 9}, 10.0),
    ("ceil(a / 3)", {"a": 7}, 3.0),
    ("experts * (1 - (1 - top_k / experts) ** rows)", {"experts": 8, "top_k": 2, "rows": 1}, 2.0),
    (12, {}, 12.0),
])
def test_allowed_expressions_evaluate(text, env, value):
    assert expr.parse(text)(env) == pytest.approx(value)


def test_free_names_are_reported():
    assert expr.parse("2 * rows * k + min(n, 3)").names == {"rows", "k", "n"}


def test_compiled_functions_take_numpy_arrays():
    tree = expr.substitute(expr.parse("min(rows, 4) * k + ceil(rows / 3)").body, {"k": 10})
    scalar = expr.compile_function(("rows",), [tree])
    vector = expr.compile_function(("rows",), [tree], vector=True)
    rows = np.arange(1.0, 9.0)
    got = vector(rows)[0]
    assert isinstance(got, np.ndarray)
    assert got.tolist() == [scalar(float(r))[0] for r in rows]


def test_literals_become_floats_so_powers_stay_cheap():
    # integer powers would be big-integer arithmetic; floats overflow fast instead
    with pytest.raises(OverflowError):
        expr.parse("x ** 60")({"x": 1e300})


@pytest.mark.parametrize("text, reason", [
    ("__import__('os').system('true')", "calling"),
    ("__import__('os')", "calling __import__"),
    ("x.real", "attribute access"),
    ("x[0]", "subscripts"),
    ("(lambda: 1)()", "calling an expression"),
    ("[x for x in y]", "comprehensions"),
    ("{x: 1 for x in y}", "comprehensions"),
    ("'text'", "strings"),
    ("f'{x}'", "strings"),
    ("9 ** 9 ** 9", "exponent"),
    ("x ** y ** z", "power in an exponent"),
    ("2 ** 1000", "exponent"),
    ("1" + "0" * 40, "larger than"),
    ("(" * 200 + "1" + ")" * 200, "nests"),
    ("-" * 100 + "1", "nests deeper"),
    ("+".join(["x"] * 300), "nests deeper"),
    ("x if y else z", "conditionals"),
    ("x < y", "comparisons"),
    ("x and y", "boolean"),
    ("x % 2", "Mod"),
    ("open(x)", "calling open"),
    ("min(x)", "takes 2"),
    ("ceil(x, y)", "takes 1"),
    ("max(*x, 1)", "starred"),
    ("min(x, key=y)", "keyword"),
    ("_secret", "may not start with '_'"),
    ("(x := 1)", "assignments"),
    ("x; y", "not an expression"),
    ("import os", "not an expression"),
    ("1" * 3000, "characters long"),
    ("~x", "unary"),
])
def test_everything_outside_the_whitelist_is_refused(text, reason):
    with pytest.raises(expr.ExprError, match=reason):
        expr.parse(text)
