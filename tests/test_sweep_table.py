"""SweepTable and its queries: where, pareto, best_by, output formats."""

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roofkit.errors import SpecError
from roofkit.sweep import SweepTable
from roofkit.sweep.columns import Categorical


def _table(**cols):
    return SweepTable(cols, {"mode": "test"})


@pytest.fixture
def table():
    return _table(
        device=Categorical([0, 0, 1, 1, 2], ("h100-sxm", "a100-40gb", "l4")),
        batch_size=np.array([1, 8, 1, 8, 1]),
        latency_ms=np.array([10.0, 40.0, 20.0, 60.0, np.nan]),
        throughput_per_s=np.array([100.0, 200.0, 50.0, 133.0, 10.0]),
        feasible=np.array([True, True, False, True, True]),
    )


# -- where ------------------------------------------------------------------------------
def test_where_compares_a_column_with_a_number(table):
    assert table.where("latency_ms <= 20")["latency_ms"].tolist() == [10.0, 20.0]
    assert table.where("latency_ms > 20")["latency_ms"].tolist() == [40.0, 60.0]


def test_where_joins_conditions_with_and_and_across_arguments(table):
    a = table.where("latency_ms <= 50 and fits")
    b = table.where("latency_ms<=50", "fits")
    assert len(a) == len(b) == 2
    assert a["latency_ms"].tolist() == [10.0, 40.0]


def test_where_fits_is_the_feasible_column_and_not_negates(table):
    assert len(table.where("fits")) == 4
    assert table.where("not fits")["device"].tolist() == ["a100-40gb"]
    assert len(table.where("!feasible")) == 1
    assert len(table.where("feasible == false")) == 1


def test_where_short_name_finds_the_unit_suffixed_column(table):
    assert len(table.where("latency < 15")) == 1
    assert len(table.where("throughput >= 133")) == 2


def test_where_nan_never_satisfies_a_comparison(table):
    assert len(table.where("latency_ms >= 0")) == 4
    assert len(table.where("latency_ms != 1")) == 4


def test_where_matches_text_columns_by_word(table):
    assert len(table.where("device == h100-sxm")) == 2
    assert len(table.where("device = 'l4'")) == 1
    assert len(table.where("device != h100-sxm")) == 3
    assert len(table.where("device == nonexistent")) == 0


def test_where_unknown_column_lists_the_known_columns(table):
    with pytest.raises(SpecError) as err:
        table.where("itl_ms <= 20")
    text = str(err.value)
    assert "unknown column 'itl_ms'" in text
    for name in table.columns:
        assert name in text


@pytest.mark.parametrize("expr", ["latency_ms <= fifty", "latency_ms <= 5; import os",
                                  "__import__('os')", "latency_ms + 1 <= 2", "",
                                  "latency_ms <= 50 or fits", "device < 3", "batch_size"])
def test_where_refuses_anything_outside_the_language(table, expr):
    with pytest.raises(SpecError):
        table.where(expr)


# -- pareto -----------------------------------------------------------------------------
def test_pareto_maximizes_throughput_and_minimizes_latency_by_default(table):
    front = table.pareto("throughput_per_s", "latency_ms")
    assert front["throughput_per_s"].tolist() == [200.0, 100.0]


def test_pareto_directions_are_configurable(table):
    front = table.pareto("throughput_per_s", "latency_ms", directions=("min", "max"))
    assert front["throughput_per_s"].tolist() == [50.0, 133.0]
    same = table.pareto("throughput_per_s:min", "latency_ms:max")
    assert same["throughput_per_s"].tolist() == [50.0, 133.0]


def test_pareto_of_a_column_without_a_direction_asks_for_one(table):
    with pytest.raises(SpecError, match="batch_size:max"):
        table.pareto("batch_size", "latency_ms")
    assert len(table.pareto("batch_size:max", "latency_ms")) == 2


def _dominated(i, x, y):
    return any(x[j] >= x[i] and y[j] <= y[i] and (x[j] > x[i] or y[j] < y[i])
               for j in range(len(x)))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.integers(0, 6)), min_size=1, max_size=40))
def test_pareto_front_is_exactly_the_non_dominated_rows(points):
    x = np.array([p[0] for p in points], dtype=float)
    y = np.array([p[1] for p in points], dtype=float)
    t = _table(row=np.arange(len(x)), throughput_per_s=x, latency_ms=y)
    got = sorted(t.pareto()["row"].tolist())
    want = [i for i in range(len(x)) if not _dominated(i, x, y)]
    assert got == want


# -- best_by ----------------------------------------------------------------------------
def test_best_by_gives_one_row_per_group_in_order_of_appearance(table):
    best = table.best_by("device", "throughput_per_s")
    assert best["device"].tolist() == ["h100-sxm", "a100-40gb", "l4"]
    assert best["throughput_per_s"].tolist() == [200.0, 133.0, 10.0]


def test_best_by_latency_minimizes_and_skips_nan(table):
    best = table.best_by("device", "latency_ms")
    assert best["latency_ms"].tolist() == [10.0, 20.0]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 5)), min_size=1, max_size=30),
       st.sampled_from(["max", "min"]))
def test_best_by_matches_a_loop(rows, direction):
    groups = np.array([r[0] for r in rows])
    values = np.array([r[1] for r in rows], dtype=float)
    t = _table(g=groups, row=np.arange(len(rows)), score=values)
    got = t.best_by("g", "score", direction)["row"].tolist()
    want = {}
    for i, (g, v) in enumerate(rows):
        beats = g in want and ((v > values[want[g]]) if direction == "max"
                               else (v < values[want[g]]))
        if g not in want or beats:
            want[g] = i
    order = sorted(want, key=lambda g: int(np.flatnonzero(groups == g)[0]))
    assert got == [want[g] for g in order]


# -- output -----------------------------------------------------------------------------
def test_rows_iterate_as_dicts_of_python_values(table):
    rows = list(table)
    assert len(rows) == len(table) == 5
    assert rows[0] == {"device": "h100-sxm", "batch_size": 1, "latency_ms": 10.0,
                       "throughput_per_s": 100.0, "feasible": True}
    assert type(rows[0]["batch_size"]) is int and type(rows[0]["feasible"]) is bool
    assert table.row(-1)["device"] == "l4"


def test_to_csv_has_a_header_and_one_line_per_row(table):
    lines = table.to_csv().splitlines()
    assert lines[0] == "device,batch_size,latency_ms,throughput_per_s,feasible"
    assert lines[1] == "h100-sxm,1,10.0,100.0,True"
    assert len(lines) == 6


def test_to_json_writes_records_or_columns_with_null_for_nan(table, tmp_path):
    rows = json.loads(table.to_json())
    assert rows[4]["latency_ms"] is None and rows[0]["device"] == "h100-sxm"
    cols = json.loads(table.to_json(orient="columns"))
    assert cols["batch_size"] == [1, 8, 1, 8, 1]
    table.to_json(tmp_path / "t.json")
    assert json.loads((tmp_path / "t.json").read_text()) == rows


def test_to_pandas_keeps_columns_and_categories(table):
    import pandas as pd
    df = table.to_pandas()
    assert list(df.columns) == table.columns
    assert isinstance(df["device"].dtype, pd.CategoricalDtype)
    assert df["latency_ms"].iloc[0] == 10.0


def test_to_pandas_without_pandas_names_the_extra(table, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ImportError, match=r"roofkit\[pandas\]"):
        table.to_pandas()


def test_concat_merges_text_categories(table):
    other = _table(device=Categorical([0], ("tpu-v5p",)), batch_size=np.array([4]),
                   latency_ms=np.array([1.0]), throughput_per_s=np.array([4.0]),
                   feasible=np.array([True]))
    both = SweepTable.concat([table, other])
    assert both["device"].tolist() == [*table["device"].tolist(), "tpu-v5p"]


def test_sort_by_orders_rows(table):
    assert table.sort_by("throughput", descending=True)["throughput_per_s"][0] == 200.0
    assert table.sort_by("device")["device"].tolist()[0] == "a100-40gb"


def test_roofkit_sweep_stays_callable_after_importing_a_submodule():
    import roofkit.sweep.table  # binds the package on roofkit

    assert callable(roofkit.sweep)
    t = roofkit.sweep("resnet-50", ["h100"])
    assert len(t) == 1 and math.isfinite(t["latency_ms"][0])
