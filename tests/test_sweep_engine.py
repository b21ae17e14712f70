"""roofkit.sweep(mode="engine"): the Engine.solve equation in array passes, equal to the
scalar path on random grids (inference, training, fallback peaks, offload, SRAM and flash)."""

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import roofkit
from roofkit import Engine
from roofkit.errors import SpecError, UnknownNameError

#: generic and template workloads, small to huge (huge ones do not fit most devices)
WORKLOADS = ["resnet-50", "ds-cnn", "mobilenet-v2", "vit-l-16", "llama-3.1-8b",
             "llama-3.1-70b", "mixtral-8x7b"]
#: GPUs, a TPU, and microcontrollers with SRAM and flash tiers (offload on big models)
DEVICES = ["h100", "a100-40gb", "b200", "mi300x", "tpu-v5e", "jetson-orin-nano-8gb",
           "esp32-s3", "stm32f407", "nrf52840"]
#: nvfp4, int4, fp64 and tf32 fall back to the device's default peak on most devices
PRECISIONS = ["fp16", "bf16", "fp8", "int8", "nvfp4", "int4", "fp32", "fp64", "tf32"]

FLOAT_KEYS = ("latency_ms", "latency_compute_ms", "latency_memory_ms", "latency_overhead_ms",
              "throughput_per_s", "energy_j", "memory_footprint_bytes", "mfu", "hfu",
              "peak_flops_per_s", "bandwidth_bytes_per_s")
EXACT_KEYS = ("feasible", "bottleneck", "overhead_dominated", "bandwidth_path")


def _close(a, b):
    return a == b or abs(a - b) <= 1e-12 * max(abs(a), abs(b))


def _check_rows(table, registry, **solve_kw):
    for row in table:
        p = Engine.solve(row["workload"], row["device"], batch_size=row["batch_size"],
                         precision=row["precision"], efficiency=row["efficiency"],
                         registry=registry, **solve_kw,
                         **({"seq_len": row["seq_len"]} if "seq_len" in row else {}))
        d = p.to_dict()
        for k in FLOAT_KEYS:
            assert _close(row[k], d[k]), (k, row, d[k])
        for k in EXACT_KEYS:
            assert row[k] == d[k], (k, row, d[k])
        assert row["fell_back"] == p.fell_back == d["fell_back"]
        assert row["compute_slot"] == p.compute_slot == d["compute_slot"]
        assert row["basis"] == "datasheet"
        assert row["capacity_bytes"] == p._df.capacity


grid = dict(
    workload=st.sampled_from(WORKLOADS),
    devices=st.lists(st.sampled_from(DEVICES), min_size=1, max_size=3, unique=True),
    precisions=st.lists(st.sampled_from(PRECISIONS), min_size=1, max_size=3, unique=True),
    batches=st.lists(st.integers(1, 100_000), min_size=1, max_size=4),
    efficiency=st.floats(1e-9, 1.0),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**grid)
def test_inference_rows_equal_engine_solve(registry, workload, devices, precisions, batches,
                                           efficiency):
    t = roofkit.sweep(workload, devices, precisions, batches, efficiency=efficiency,
                      registry=registry)
    assert len(t) == len(devices) * len(precisions) * len(batches)
    _check_rows(t, registry)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**grid, seq_lens=st.lists(st.integers(1, 32768), min_size=1, max_size=3),
       zero=st.sampled_from([0, 1, 2, 3]), dp=st.integers(1, 64), lora=st.booleans(),
       recompute=st.booleans())
def test_training_rows_equal_engine_solve(registry, workload, devices, precisions, batches,
                                          efficiency, seq_lens, zero, dp, lora, recompute):
    t = roofkit.sweep(workload, devices, precisions, batches, seq_lens, efficiency=efficiency,
                      training=True, zero_stage=zero, dp_size=dp, lora=lora,
                      recompute=recompute, registry=registry)
    assert len(t) == len(devices) * len(precisions) * len(batches) * len(seq_lens)
    _check_rows(t, registry, is_training=True, zero_stage=zero, dp_size=dp, is_lora=lora,
                activation_recomputation=recompute)


def test_the_grid_covers_every_bandwidth_path_and_fallback(registry):
    t = roofkit.sweep("ds-cnn", ["esp32-s3", "h100", "stm32f407"], ["int8", "nvfp4"], [1],
                      registry=registry)
    t2 = roofkit.sweep("llama-3.1-70b", ["h100"], ["fp16"], [1], registry=registry)
    # MobileNetV2 does not fit the ESP32-S3 but streams from its flash; ResNet-50 fits
    # neither SRAM nor flash
    # of any microcontroller, which have no host link: no path
    t3 = roofkit.sweep("mobilenet-v2", ["esp32-s3"], ["int8"], [1, 7], registry=registry)
    t4 = roofkit.sweep("resnet-50", ["esp32-s3", "nrf52840"], ["int8"], [1, 3],
                       registry=registry)
    paths = {p for t_ in (t, t2, t3, t4) for p in t_["bandwidth_path"]}
    assert paths == {"offload", "memory", "sram", "flash", "none"}
    assert set(t3["bandwidth_path"]) == {"flash"} and not t3["feasible"].any()
    assert set(t4["bandwidth_path"]) == {"none"} and not t4["feasible"].any()
    assert t.where("fell_back")["precision"].tolist()  # nvfp4 on devices without fp4
    for table in (t, t2, t3, t4):
        _check_rows(table, registry)


def test_feasible_rows_are_engine_sweep_rows_and_reasons_match(registry):
    devices, batches, precs = ["h100", "a100-40gb", "esp32-s3"], [1, 8], ["fp16", "fp8"]
    t = roofkit.sweep("llama-3.1-8b", devices, precs, batches, registry=registry)
    ref = Engine.sweep("llama-3.1-8b", devices, batches, precs, registry=registry)
    key = lambda r: (r["hardware"] if "hardware" in r else r["device"], r["batch_size"],  # noqa: E731
                     r["precision"])
    assert sorted(map(key, t.where("fits"))) == sorted(
        (r["profile"]._df.name, r["batch_size"], r["precision"]) for r in ref)
    omitted = {(r["profile"]._df.name, r["batch_size"], r["precision"]): r["reason"]
               for r in ref.omitted}
    for row in t.where("not fits"):
        assert row["reason"] == omitted[key(row)]
    assert all(r.startswith("fits") for r in t.where("fits")["reason"])


def test_rows_run_device_then_precision_then_batch(registry):
    t = roofkit.sweep("resnet-50", ["h100", "a100-40gb"], ["fp16", "int8"], [1, 2, 4],
                      registry=registry)
    assert t["device"].tolist() == ["h100-sxm"] * 6 + ["a100-40gb"] * 6
    assert t["precision"].tolist()[:6] == ["fp16"] * 3 + ["int8"] * 3
    assert t["batch_size"].tolist()[:3] == [1, 2, 4]


def test_every_column_carries_its_unit_or_is_a_label(registry):
    t = roofkit.sweep("resnet-50", "h100", registry=registry)
    assert t.columns[:5] == ["workload", "device", "precision", "batch_size", "efficiency"]
    for name in ("latency_ms", "throughput_per_s", "energy_j", "memory_footprint_bytes",
                 "capacity_bytes", "feasible", "reason", "peak_flops_per_s",
                 "bandwidth_bytes_per_s"):
        assert name in t.columns
    assert "seq_len" not in t.columns  # only an axis in training


def test_batch_sizes_accept_ranges_and_numpy_arrays(registry):
    a = roofkit.sweep("resnet-50", ["h100"], batch_sizes=range(1, 6), registry=registry)
    b = roofkit.sweep("resnet-50", ["h100"], batch_sizes=np.arange(1, 6), registry=registry)
    assert a["latency_ms"].tolist() == b["latency_ms"].tolist()


def test_chunked_evaluation_equals_one_pass(registry):
    kw = dict(precisions=["fp16", "fp8"], batch_sizes=range(1, 50), registry=registry)
    whole = roofkit.sweep("llama-3.1-8b", ["h100", "l4"], **kw)
    parts = roofkit.sweep("llama-3.1-8b", ["h100", "l4"], chunk_size=17, **kw)
    assert whole.to_dict() == parts.to_dict()


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"batch_sizes": [1, 2.5]}, "batch_sizes must hold integers"),
    ({"batch_sizes": [0]}, "integers >= 1"),
    ({"batch_sizes": ["8"]}, "batch_sizes must hold integers"),
    ({"mode": "train"}, "mode must be one of"),
    ({"tp": [2]}, "tensor parallelism"),
    ({"seq_lens": [128]}, "no context term"),
    ({"efficiency": 2.0}, "efficiency"),
    ({"seq_lens": [1], "contexts": [1]}, "not both"),
])
def test_bad_arguments_raise_spec_errors(registry, kwargs, match):
    with pytest.raises(SpecError, match=match):
        roofkit.sweep("resnet-50", ["h100"], registry=registry, **kwargs)


def test_unknown_device_suggests_names(registry):
    with pytest.raises(UnknownNameError, match="h100"):
        roofkit.sweep("resnet-50", ["h10"], registry=registry)


def test_no_devices_gives_an_empty_table_with_columns(registry):
    t = roofkit.sweep("resnet-50", [], registry=registry)
    assert len(t) == 0 and "latency_ms" in t.columns
    assert list(t) == []


def test_million_point_sweep_is_columns_not_objects(registry):
    t = roofkit.sweep("llama-3.1-70b", ["h100", "b200"], ["fp16", "fp8"],
                      batch_sizes=np.arange(1, 50_001), registry=registry)
    assert len(t) == 200_000
    assert t.column("device").codes.dtype == np.int32
    assert math.isfinite(float(t["latency_ms"].max()))
