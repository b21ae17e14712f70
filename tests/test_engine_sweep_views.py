"""Engine.sweep's list keeps the reference's shape; its added views follow the result
convention (plain unit-suffixed rows, a DataFrame, a notebook table)."""

from __future__ import annotations

import pytest

from roofkit import Engine


def test_engine_sweep_views_match_the_rows(registry):
    res = Engine.sweep("llama-3.1-8b", ["h100-sxm", "a100-80gb"], batch_sizes=[1, 8],
                       registry=registry)
    assert isinstance(res, list) and all(set(r) >= {"hardware", "batch_size", "precision",
                                                    "profile"} for r in res)
    rows = res.to_dict()
    assert len(rows) == len(res)
    for row, r in zip(rows, res, strict=True):
        assert row["latency_ms"] == pytest.approx(r["profile"].to_dict()["latency_ms"])
        assert row["hardware"] == r["hardware"] and row["batch_size"] == r["batch_size"]
    html = res._repr_html_()
    assert html.count("<tr>") == len(res) + 1 and "feasible" in html
    import pandas as pd
    frame = res.to_pandas()
    assert isinstance(frame, pd.DataFrame) and len(frame) == len(res)
    assert list(frame["latency_ms"]) == [r["latency_ms"] for r in rows]
