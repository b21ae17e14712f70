"""roofkit.sweep(mode="decode" | "prefill"): the circuit's per-node estimates over arrays,
equal to the scalar roofkit.decode / roofkit.prefill / roofkit.fits on random grids, with a
tensor-parallel axis (rows a device or model cannot split over are infeasible, and the
scalar call refuses them)."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import roofkit
from roofkit.errors import SpecError

#: dense, MoE (routed experts), hybrid GatedDeltaNet, Mamba (state), sliding windows, MXFP4
WORKLOADS = ["llama-3.1-8b", "llama-3.1-70b", "mixtral-8x7b", "qwen3-next-80b-a3b",
             "mamba-2.8b", "gemma-2-9b", "gpt-oss-20b", "deepseek-v3"]
DEVICES = ["h100", "b200", "mi300x", "l4", "tpu-v5e", "jetson-orin-nano-8gb", "a100-40gb"]
#: None: the workload's own formats; nvfp4 falls back to fp8/bf16 on devices without fp4
PRECISIONS = [None, "bf16", "fp8", "nvfp4", "int4", "fp16"]


def _close(a, b):
    return a == b or abs(a - b) <= 1e-12 * max(abs(a), abs(b))


def _check(table, registry, mode, precisions, kv, inner, tps=(1,)):
    """Every row against the scalar calls; ``inner`` rows (contexts x batches) per group."""
    assert len(table) > 0
    for i, row in enumerate(table):
        # the grid's precision (None stays None), from the row's position:
        # device x precision x tp groups, tp fastest
        prec = precisions[(i // inner // len(tps)) % len(precisions)]
        tp = row["tp"]
        assert tp == tps[(i // inner) % len(tps)]
        kw = dict(precision=prec, kv_cache_dtype=kv, registry=registry, tp=tp,
                  basis="datasheet")
        b, c = row["batch_size"], row["context"]
        if row["reason"].startswith(f"tp={tp} refused"):
            assert tp > 1 and not row["feasible"] and np.isnan(row["latency_ms"])
            with pytest.raises(SpecError, match=f"tp={tp}"):
                roofkit.fits(row["workload"], row["device"], seqs=b, context=c, **kw)
            continue
        if mode == "decode":
            est = roofkit.decode(row["workload"], row["device"], batch=b, context=c, **kw)
            step, tokens = row["itl_ms"], b
        else:
            est = roofkit.prefill(row["workload"], row["device"], tokens=c, seqs=b, **kw)
            step, tokens = row["ttft_ms"], b * c
        assert _close(row["latency_ms"], est.time * 1e3) and step == row["latency_ms"]
        assert _close(row["throughput_per_s"], tokens / est.time)
        assert _close(row["latency_compute_ms"], est.compute_time * 1e3)
        assert _close(row["latency_memory_ms"], est.memory_time * 1e3)
        assert _close(row["flops"], est.flops) and _close(row["bytes_moved"], est.bytes)
        assert row["bottleneck"] == est.bound
        fit = roofkit.fits(row["workload"], row["device"], seqs=b, context=c, **kw)
        assert row["feasible"] == fit.fits
        assert _close(row["memory_footprint_bytes"], fit.required)
        assert _close(row["capacity_bytes"], fit.usable)
        assert _close(row["weights_bytes"], fit.weights)
        assert _close(row["kv_bytes"], fit.kv_bytes + fit.state_bytes)
        assert row["reason"].startswith("fits") == fit.fits
        plan = roofkit.circuit.api.plan(row["workload"], row["device"], mode, prec, kv,
                                        registry=registry, tp=tp, basis="datasheet")
        assert row["fell_back"] == bool(plan.fallbacks)
        assert row["basis"] == "datasheet" and est.basis.startswith("datasheet ceiling")
        assert set(row["compute_slot"].split("+")) <= {r.slot for r in est.rows}


grid = dict(
    workload=st.sampled_from(WORKLOADS),
    devices=st.lists(st.sampled_from(DEVICES), min_size=1, max_size=2, unique=True),
    precisions=st.lists(st.sampled_from(PRECISIONS), min_size=1, max_size=2, unique=True),
    batches=st.lists(st.integers(1, 4096), min_size=1, max_size=3),
    kv=st.sampled_from([None, "fp8", "bf16"]),
    tps=st.lists(st.sampled_from([1, 2, 4, 8]), min_size=1, max_size=2, unique=True),
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**grid, contexts=st.lists(st.integers(0, 131072), min_size=1, max_size=3))
def test_decode_rows_equal_the_scalar_decode(registry, workload, devices, precisions, batches,
                                             kv, tps, contexts):
    t = roofkit.sweep(workload, devices, precisions, batches, contexts=contexts, mode="decode",
                      kv_cache_dtype=kv, tp=tps, basis="datasheet", registry=registry)
    assert len(t) == len(devices) * len(precisions) * len(tps) * len(batches) * len(contexts)
    _check(t, registry, "decode", precisions, kv, len(batches) * len(contexts), tps)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**grid, contexts=st.lists(st.integers(1, 32768), min_size=1, max_size=3))
def test_prefill_rows_equal_the_scalar_prefill(registry, workload, devices, precisions,
                                               batches, kv, tps, contexts):
    t = roofkit.sweep(workload, devices, precisions, batches, contexts=contexts,
                      mode="prefill", kv_cache_dtype=kv, tp=tps, basis="datasheet",
                      registry=registry)
    _check(t, registry, "prefill", precisions, kv, len(batches) * len(contexts), tps)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workload=st.sampled_from(["llama-3.1-8b", "mixtral-8x7b", "qwen3-next-80b-a3b"]),
       batches=st.lists(st.integers(1, 512), min_size=1, max_size=3),
       contexts=st.lists(st.integers(0, 32768), min_size=1, max_size=2),
       tps=st.lists(st.sampled_from([1, 2, 4, 8]), min_size=1, max_size=3, unique=True))
def test_calibrated_decode_rows_equal_the_scalar_decode(registry, workload, batches, contexts,
                                                        tps):
    t = roofkit.sweep(workload, ["h100", "mi300x"], ["fp8"], batches, contexts=contexts,
                      mode="decode", tp=tps, basis="calibrated", registry=registry)
    assert t.meta["cost_model"] == "roofline_calibrated"
    for i, row in enumerate(t):
        est = roofkit.decode(row["workload"], row["device"], batch=row["batch_size"],
                             context=row["context"], precision="fp8", tp=row["tp"],
                             basis="calibrated", registry=registry)
        assert _close(row["itl_ms"], est.time * 1e3), i
        assert row["bottleneck"] == est.bound


@pytest.mark.parametrize("mode", ["decode", "prefill"])
def test_every_row_names_its_basis_compute_slot_and_fallback(registry, mode):
    t = roofkit.sweep("llama-3.1-8b", ["a100-80gb", "h100", "l4"], ["fp8", "bf16"], [1, 8],
                      contexts=[128], mode=mode, basis="datasheet", registry=registry)
    rows = {(r["device"], r["precision"]): r for r in t}
    # fp8 on an A100 (no fp8 peak) runs at the fp16 peak of its fallback chain: flagged
    a100 = rows[("a100-80gb", "fp8")]
    assert a100["fell_back"] and a100["compute_slot"].split("+")[0] == "fp16"
    assert "fp8" not in a100["compute_slot"]
    est = (roofkit.decode("llama-3.1-8b", "a100-80gb", precision="fp8", context=128,
                          basis="datasheet", registry=registry) if mode == "decode" else
           roofkit.prefill("llama-3.1-8b", "a100-80gb", precision="fp8", tokens=128,
                           basis="datasheet", registry=registry))
    assert "no fp8 peak; runs at the fp16 peak" in est.basis
    h100 = rows[("h100-sxm", "fp8")]
    assert not h100["fell_back"] and h100["compute_slot"].split("+")[0] == "fp8"
    assert rows[("a100-80gb", "bf16")]["compute_slot"] == "bf16"
    assert set(t["basis"]) == {"datasheet"}
    assert t.where("fell_back")["device"].tolist() == ["a100-80gb", "a100-80gb"]
    for column in ("basis", "compute_slot", "fell_back"):
        assert column in t.to_csv().splitlines()[0].split(",")
        assert column in t.to_json(orient="records")


def test_prefill_head_adds_the_embedding_and_lm_head_as_the_scalar_prefill(registry):
    kw = dict(mode="prefill", contexts=[128, 4096], registry=registry)
    layers = roofkit.sweep("llama-3.1-8b", ["h100"], ["bf16"], [1, 8], **kw)
    full = roofkit.sweep("llama-3.1-8b", ["h100"], ["bf16"], [1, 8], head=True, **kw)
    assert full.meta["head"] is True and layers.meta["head"] is False
    for row, base in zip(full, layers, strict=True):
        est = roofkit.prefill("llama-3.1-8b", "h100", tokens=row["context"],
                              seqs=row["batch_size"], precision="bf16", head=True,
                              registry=registry)
        assert _close(row["ttft_ms"], est.time * 1e3) and row["ttft_ms"] > base["ttft_ms"]
        assert row["feasible"] == est.fits
    with pytest.raises(SpecError, match="prefill setting"):
        roofkit.sweep("llama-3.1-8b", ["h100"], mode="decode", head=True, registry=registry)
    with pytest.raises(SpecError, match="True or False"):
        roofkit.sweep("llama-3.1-8b", ["h100"], mode="prefill", head="yes", registry=registry)


def test_the_calibrated_basis_says_where_a_device_has_no_calibration(registry):
    t = roofkit.sweep("llama-3.1-8b", ["h100", "mi250x"], ["fp16"], [1],
                      contexts=[128], mode="decode", basis="calibrated", registry=registry)
    assert t["basis"].tolist() == ["calibrated", "datasheet only (no calibration)"]


def test_tensor_parallelism_splits_the_step_and_the_memory(registry):
    t = roofkit.sweep("llama-3.1-70b", ["h100"], ["bf16"], [8], contexts=[4096],
                      mode="decode", tp=[1, 2, 4, 8], registry=registry)
    rows = {r["tp"]: r for r in t}
    assert not rows[1]["feasible"] and rows[4]["feasible"]  # 141 GB of weights
    assert rows[2]["weights_bytes"] == pytest.approx(rows[1]["weights_bytes"] / 2, rel=1e-3)
    assert rows[1]["itl_ms"] > rows[2]["itl_ms"] > rows[4]["itl_ms"]


def test_a_tp_the_device_cannot_join_is_infeasible_with_the_reason(registry):
    t = roofkit.sweep("llama-3.1-8b", ["l4", "h100-pcie"], ["bf16"], [1], contexts=[128],
                      mode="decode", tp=[2, 4], registry=registry)
    reasons = {(r["device"], r["tp"]): r for r in t}
    assert "no [interconnect]" in reasons[("l4", 2)]["reason"]
    assert "exceeds the 2 devices" in reasons[("h100-pcie", 4)]["reason"]
    assert reasons[("h100-pcie", 2)]["feasible"]
    assert np.isnan(reasons[("l4", 2)]["itl_ms"]) and not reasons[("l4", 2)]["feasible"]


def test_decode_table_has_inputs_itl_and_feasibility(registry):
    t = roofkit.sweep("llama-3.1-70b", ["h100", "b200"], ["fp8"], [1, 64], contexts=[2048],
                      mode="decode", registry=registry)
    assert t.columns[:6] == ["workload", "device", "precision", "tp", "context", "batch_size"]
    assert {"itl_ms", "throughput_per_s", "memory_footprint_bytes", "feasible",
            "reason"} <= set(t.columns)
    assert len(t.where("itl_ms <= 1000", "fits")) >= 1


def test_infeasible_points_say_why(registry):
    t = roofkit.sweep("llama-3.1-70b", ["l4", "b200"], ["bf16"], [1, 4096], contexts=[131072],
                      mode="decode", registry=registry)
    reasons = dict(zip(zip(t["device"], t["batch_size"], strict=True), t["reason"], strict=True))
    assert reasons[("l4", 1)].startswith("weights alone")
    assert "KV/state" in reasons[("b200", 4096)] and not reasons[("b200", 4096)].startswith(
        "fits")


def test_precision_none_is_labelled_with_the_workload_format(registry):
    t = roofkit.sweep("gpt-oss-20b", ["h100"], None, [1], contexts=[128], mode="decode",
                      registry=registry)
    assert t["precision"].tolist() == [roofkit.build_registry(entry_points=False).precision(
        registry.workload("gpt-oss-20b").formats.get("default", "bf16")).name]


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"tp": [0]}, ">= 1"),
    ({"training": True}, "training"),
    ({"efficiency": 0.7}, "efficiency"),
    ({"contexts": [-1]}, ">= 0"),
])
def test_decode_refuses_what_it_does_not_model(registry, kwargs, match):
    with pytest.raises(SpecError, match=match):
        roofkit.sweep("llama-3.1-8b", ["h100"], mode="decode", registry=registry, **kwargs)


def test_engine_mode_refuses_circuit_settings(registry):
    with pytest.raises(SpecError, match="kv_cache_dtype"):
        roofkit.sweep("llama-3.1-8b", ["h100"], kv_cache_dtype="fp8", registry=registry)


def test_prefill_context_zero_is_refused(registry):
    with pytest.raises(SpecError, match=">= 1"):
        roofkit.sweep("llama-3.1-8b", ["h100"], contexts=[0], mode="prefill",
                      registry=registry)


def test_hundred_thousand_decode_points_in_one_call(registry):
    t = roofkit.sweep("llama-3.1-70b", ["h100", "b200"], ["fp8"], np.arange(1, 5001),
                      contexts=[1024, 8192, 32768, 131072, 0, 4096, 2048, 512, 256, 128],
                      mode="decode", registry=registry)
    assert len(t) == 100_000
    assert np.isfinite(t["itl_ms"]).all()


def test_decode_sweep_energy_is_the_step_energy_of_all_tp_devices():
    import roofkit

    reg = roofkit.build_registry(entry_points=False)
    table = roofkit.sweep("llama-3.1-8b", ["h100"], batch_sizes=[8], contexts=[512],
                          tp=[1, 2], mode="decode", registry=reg)
    for row in table:
        est = roofkit.decode("llama-3.1-8b", "h100", batch=8, context=512, tp=row["tp"],
                             registry=reg)
        assert row["energy_j"] == pytest.approx(est.energy * row["tp"])
