"""Engine.sweep: feasible rows in input order, infeasible ones kept with their reason, and the
vectorized core equal to the scalar path."""

from __future__ import annotations

import numpy as np
import pytest

import roofkit
from roofkit import Engine
from roofkit.engine import SweepResult, inference_arrays
from roofkit.testing import write_spec


@pytest.fixture(scope="module")
def reg(tmp_path_factory):
    root = tmp_path_factory.mktemp("sweep-specs")
    write_spec(root, "workloads", "fat-cnn", """
        name = "fat-cnn"
        display_name = "a generic workload of 20 B parameters"
        domain = "vision"
        [generic]
        params = 20e9
        flops_per_sample = "40 GFLOP"
        layers = 100
        [sources]
        test = "fixture"
        [provenance]
        generic = "test"
        """)
    return roofkit.build_registry(entry_points=False, spec_paths=[root], cache=False)


def test_rows_follow_input_order(reg):
    rows = Engine.sweep("resnet-50", ["v100", "h100"], [4, 1, 2], ["bf16", "fp16"], registry=reg)
    got = [(r["hardware"], r["batch_size"], r["precision"]) for r in rows]
    want = [(h, b, p) for h in ("v100", "h100-sxm") for b in (4, 1, 2) for p in ("bf16", "fp16")]
    assert got == want
    assert set(rows[0]) == {"hardware", "batch_size", "precision", "profile"}


def test_rows_equal_individual_solves(reg):
    rows = Engine.sweep("resnet-50", ["h100", "l4"], [1, 64], ["fp16", "fp8"], efficiency=0.3,
                        registry=reg)
    for r in rows:
        p = Engine.solve("resnet-50", r["hardware"], r["batch_size"], r["precision"], 0.3,
                         registry=reg)
        assert r["profile"].to_dict() == p.to_dict()


def test_defaults_are_batch_one_and_fp16(reg):
    for batches, precs in ((None, None), ([], [])):
        rows = Engine.sweep("resnet-50", ["h100"], batches, precs, registry=reg)
        assert [(r["batch_size"], r["precision"]) for r in rows] == [(1, "fp16")]


def test_empty_hardware_list_gives_no_rows(reg):
    rows = Engine.sweep("resnet-50", [], [1, 2], registry=reg)
    assert rows == [] and rows.omitted == []


def test_infeasible_configurations_are_omitted_but_kept_with_reason(reg):
    rows = Engine.sweep("fat-cnn", ["v100", "h100"], [1, 8], ["fp16", "fp8"], registry=reg)
    assert isinstance(rows, SweepResult)
    # 40 GB at fp16 fits neither 32 GB nor... 80 GB fits; 20 GB at fp8 fits both
    kept = {(r["hardware"], r["batch_size"], r["precision"]) for r in rows}
    lost = {(r["hardware"], r["batch_size"], r["precision"]) for r in rows.omitted}
    assert lost == {("v100", 1, "fp16"), ("v100", 8, "fp16")}
    assert len(kept) == 6 and not kept & lost
    assert all(r["profile"].feasible for r in rows)
    assert "40 GB" in rows.omitted[0]["reason"] and "32 GB" in rows.omitted[0]["reason"]


def test_include_infeasible_lists_every_configuration_in_order(reg):
    rows = Engine.sweep("fat-cnn", ["v100", "h100"], [1, 8], ["fp16", "fp8"],
                        include_infeasible=True, registry=reg)
    assert len(rows) == 8
    assert [r["profile"].feasible for r in rows[:4]] == [False, True, False, True]
    assert "reason" in rows[0] and "reason" not in rows[1]


def test_vectorized_core_equals_scalar_path_exactly(reg):
    batches = [1, 2, 3, 7, 64, 1000, 4096]
    for model in ("resnet-50", "vit-l-16", "fat-cnn"):
        for device in ("h100", "v100", "l4"):
            for prec in ("fp16", "fp8", "int4"):
                arr = inference_arrays(model, device, batches, prec, 0.37, registry=reg)
                for i, b in enumerate(batches):
                    p = Engine.solve(model, device, b, prec, 0.37, registry=reg)
                    assert arr["latency"][i] == p.latency_s
                    assert arr["latency_compute"][i] == p._tc
                    assert arr["latency_memory"][i] == p._tm
                    assert arr["throughput"][i] == p.throughput_per_s
                    assert arr["energy"][i] == p.energy_j
                    assert arr["mfu"][i] == p.mfu and arr["hfu"][i] == p.hfu
                    assert bool(arr["memory_bound"][i]) == (p.bottleneck == "Memory")
                    assert arr["feasible"] == p.feasible
                    assert arr["latency_overhead"] == p._to


def test_vectorized_core_refuses_bad_batches(reg):
    with pytest.raises(roofkit.SpecError):
        inference_arrays("resnet-50", "h100", np.array([1.5, 2.0]), registry=reg)
    with pytest.raises(roofkit.SpecError):
        inference_arrays("resnet-50", "h100", [0, 1], registry=reg)
