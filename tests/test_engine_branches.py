"""Engine.solve, branch by branch, against arithmetic done by hand on toy specs.

Toy device ``toy``: fp16 100 TFLOP/s, fp8 200 TFLOP/s, 10 GB at 1 TB/s, host link 10 GB/s,
dispatch 10 us, layer 1 us, TDP 100 W. Variants add SRAM or flash, or drop the TDP and the
host link. At the default efficiency 0.5 the fp16 ceiling is 5e13 FLOP/s.
"""

from __future__ import annotations

import pytest

import roofkit
from roofkit import Engine, OOMError
from roofkit.engine import facts as engine_facts
from roofkit.testing import write_spec

DEVICE = """
name = "{name}"
display_name = "Toy accelerator"
category = "edge"
default_slot = "fp16"
[compute]
fp16 = "100 TFLOP/s"
fp8 = "200 TFLOP/s"
[memory]
capacity = "10 GB"
bandwidth = "1 TB/s"
{extra}
[overheads]
dispatch = "10 us"
layer = "1 us"
[sources]
test = "hand-computed test fixture"
[provenance]
compute = "test"
memory = "test"
overheads = "test"
{prov}
"""


def _device(root, name, extra="", prov="", tdp=True, host=True):
    if tdp:
        extra += '\n[power]\ntdp = "100 W"\n'
        prov += '\npower = "test"\n'
    if host:
        extra += '\n[host_link]\nbandwidth = "10 GB/s"\n'
        prov += '\nhost_link = "test"\n'
    write_spec(root, "devices", name, DEVICE.format(name=name, extra=extra, prov=prov))


def _generic(root, name, params, flops, layers):
    write_spec(root, "workloads", name, f"""
        name = "{name}"
        display_name = "{name}"
        domain = "vision"
        [generic]
        params = {params}
        flops_per_sample = "{flops}"
        layers = {layers}
        sample = "image"
        [sources]
        test = "hand-computed test fixture"
        [provenance]
        generic = "test"
        """)


@pytest.fixture(scope="module")
def reg(tmp_path_factory):
    root = tmp_path_factory.mktemp("engine-specs")
    _device(root, "toy")
    _device(root, "toy-sram", '\n[sram]\ncapacity = "1 MB"\nbandwidth = "10 TB/s"\n',
            '\nsram = "test"\n')
    _device(root, "toy-flash", '\n[flash]\ncapacity = "100 GB"\nbandwidth = "2 GB/s"\n',
            '\nflash = "test"\n')
    _device(root, "toy-sram-flash",
            '\n[sram]\ncapacity = "1 MB"\nbandwidth = "10 TB/s"\n'
            '\n[flash]\ncapacity = "100 GB"\nbandwidth = "2 GB/s"\n',
            '\nsram = "test"\nflash = "test"\n')
    _device(root, "toy-bare", tdp=False, host=False)
    _generic(root, "toy-compute", 1e6, "10 GFLOP", 10)   # W = 2 MB at fp16
    _generic(root, "toy-memory", 1e9, "2 GFLOP", 10)     # W = 2 GB at fp16
    _generic(root, "toy-tiny", 1e3, "1 MFLOP", 100)      # W = 2 kB at fp16
    _generic(root, "toy-huge", 1e10, "20 GFLOP", 10)     # W = 20 GB at fp16 > 10 GB
    write_spec(root, "workloads", "toy-lm", """
        name = "toy-lm"
        display_name = "toy LM"
        domain = "language"
        template = "dense"
        [dims]
        layers = 2
        hidden = 64
        heads = 4
        kv_heads = 4
        head_dim = 16
        ffn = 256
        vocab = 1000
        [sources]
        test = "hand-computed test fixture"
        [provenance]
        dims = "test"
        """)
    return roofkit.build_registry(entry_points=False, spec_paths=[root], cache=False)


@pytest.fixture
def toy_lm_facts(monkeypatch):
    """Exact facts for the toy LM (1e6 params, 2e6 FLOP/token, 2 layers, h 64, 4 heads),
    independent of the circuit's counts."""

    def fake(spec, registry):
        return engine_facts.WorkloadFacts(
            spec, params=1e6, active_params=1e6, flops=2e6, layers=2, per_token=True,
            sample="token", hidden=64, heads=4, source="test")

    monkeypatch.setattr(engine_facts, "_template_facts", fake)


def solve(reg, model, device, **kw):
    return Engine.solve(model, device, registry=reg, **kw)


def approx(x):
    return pytest.approx(x, rel=1e-12, abs=0.0)


# -- inference ------------------------------------------------------------------------------
def test_compute_bound(reg):
    p = solve(reg, "toy-compute", "toy", batch_size=8)
    t_c = 8e10 / 5e13
    t_m = 2e6 * 1.8 / 1e12
    t_o = 10e-6 + 10 * 1e-6
    t = t_c + t_o
    assert p.latency_s == approx(t)
    assert p.latency_compute.to("s").magnitude == approx(t_c)
    assert p.latency_memory.to("s").magnitude == approx(t_m)
    assert p.latency_overhead.to("s").magnitude == approx(t_o)
    assert p.bottleneck == "Compute" and not p.overhead_dominated and p.feasible
    assert p.throughput.to("1/s").magnitude == approx(8 / t)
    mfu = 8e10 / t / 1e14
    assert p.mfu == approx(mfu) and p.hfu == approx(mfu)
    assert p.energy.to("J").magnitude == approx(100 * (0.3 + 0.7 * mfu) * t)
    assert p.memory_footprint.to("B").magnitude == approx(2e6)
    assert p.bandwidth_path == "memory"


def test_memory_bound(reg):
    p = solve(reg, "toy-memory", "toy", batch_size=1)
    t_m = 2e9 * 1.1 / 1e12
    assert p.latency_compute.to("s").magnitude == approx(2e9 / 5e13)
    assert p.latency_memory.to("s").magnitude == approx(t_m)
    assert p.latency_s == approx(t_m + 2e-5)
    assert p.bottleneck == "Memory" and not p.overhead_dominated


def test_overhead_dominated(reg):
    p = solve(reg, "toy-tiny", "toy", batch_size=1)
    t_o = 10e-6 + 100 * 1e-6
    assert p.latency_overhead.to("s").magnitude == approx(t_o)
    assert p.latency_s == approx(1e6 / 5e13 + t_o)
    assert p.overhead_dominated
    assert p.bottleneck == "Compute"  # the label still compares compute and memory only


def test_sram_resident_weights_use_sram_bandwidth(reg):
    p = solve(reg, "toy-tiny", "toy-sram", batch_size=4)
    assert p.bandwidth_path == "sram"
    assert p.latency_memory.to("s").magnitude == approx(2e3 * 1.4 / 1e13)
    assert p.peak_bw_actual.to("B/s").magnitude == approx(1e13)


def test_weights_larger_than_sram_use_primary_memory(reg):
    p = solve(reg, "toy-memory", "toy-sram")
    assert p.bandwidth_path == "memory"
    assert p.latency_memory.to("s").magnitude == approx(2.2e9 / 1e12)


def test_flash_bandwidth_when_the_device_has_flash(reg):
    p = solve(reg, "toy-memory", "toy-flash")
    assert p.bandwidth_path == "flash"
    assert p.latency_memory.to("s").magnitude == approx(2.2e9 / 2e9)


def test_sram_wins_over_flash_when_weights_fit(reg):
    assert solve(reg, "toy-tiny", "toy-sram-flash").bandwidth_path == "sram"
    assert solve(reg, "toy-memory", "toy-sram-flash").bandwidth_path == "flash"


def test_offload_charges_all_traffic_at_the_limiting_link(reg):
    p = solve(reg, "toy-huge", "toy")
    assert not p.feasible and p.bandwidth_path == "offload"
    assert p.latency_memory.to("s").magnitude == approx(2e10 * 1.1 / 1e10)
    assert p.offload_spill.to("B").magnitude == approx(1e10)
    assert any("DOES NOT FIT" in line for line in p.trace)


def test_without_a_host_link_nothing_is_offloaded_and_it_cannot_run(reg):
    p = solve(reg, "toy-huge", "toy-bare")
    assert not p.feasible and p.bandwidth_path == "none"
    assert p.latency_memory.to("s").magnitude == float("inf") == p.latency_s
    assert p.throughput_per_s == 0.0 and p.mfu == 0.0 and p.hfu == 0.0
    assert p.latency_compute.to("s").magnitude == approx(2e10 / 5e13)  # still reported
    text = " ".join(p.trace)
    assert "no [host_link]" in text and "cannot run" in text and "PCIe" not in text
    assert "no offload path" in p.basis and "PCIe" not in p.basis
    assert p.offload_spill.to("B").magnitude == approx(1e10)
    with pytest.raises(OOMError, match="no \\[host_link\\]"):
        solve(reg, "toy-huge", "toy-bare", raise_errors=True)


def test_weights_beyond_memory_but_within_flash_do_not_fit_and_stream_from_flash(reg):
    """The reference: a footprint above capacity is feasible=False (OOMError when asked),
    with the offload-limited estimate; here the weights are read in place from flash."""
    p = solve(reg, "toy-huge", "toy-flash", batch_size=2)  # 20 GB > 10 GB memory, <= 100 GB
    assert not p.feasible and p.bandwidth_path == "flash" and p.flash_resident
    assert p.latency_memory.to("s").magnitude == approx(2e10 * 1.2 / 2e9)
    assert p.offload_spill.to("B").magnitude == 0.0  # in flash, nothing goes to the host
    assert "flash" in p.trace[0] and "DOES NOT FIT" in p.trace[0]
    assert "flash.bandwidth" in p.basis and "flash.capacity" in p.basis
    with pytest.raises(OOMError, match="the weights fit its 100 GB of flash"):
        solve(reg, "toy-huge", "toy-flash", batch_size=2, raise_errors=True)


def test_flash_residency_is_its_own_field_when_the_weights_fit_memory_too(reg):
    p = solve(reg, "toy-memory", "toy-flash")
    assert p.feasible and p.flash_resident and p.to_dict()["flash_resident"] is True
    q = solve(reg, "toy-memory", "toy")
    assert q.feasible and not q.flash_resident


def test_training_cannot_use_flash(reg):
    # 2 x 2 MB + 12 MB of training state fits memory: primary memory (flash is read-only)
    p = solve(reg, "toy-compute", "toy-flash", batch_size=1, is_training=True)
    assert p.feasible and p.bandwidth_path == "memory"
    # 2 x 20 GB + 120 GB > 10 GB memory: the 100 GB flash does not help; offloaded over the
    # host link
    q = solve(reg, "toy-huge", "toy-flash", batch_size=1, is_training=True)
    assert not q.feasible and q.bandwidth_path == "offload"
    assert "read-only" in q.trace[0]
    assert q.latency_memory.to("s").magnitude == approx(2.2e10 / 1e10)


def test_raise_errors_raises_oom(reg):
    with pytest.raises(OOMError) as info:
        solve(reg, "toy-huge", "toy", raise_errors=True)
    assert info.value.required == approx(2e10)
    assert info.value.available == approx(1e10)
    assert isinstance(info.value, MemoryError)


def test_no_tdp_means_zero_energy(reg):
    p = solve(reg, "toy-compute", "toy-bare", batch_size=8)
    assert p.energy.to("J").magnitude == 0.0
    assert any("no TDP" in line for line in p.trace)


def test_precision_sets_bytes_and_peak(reg):
    p = solve(reg, "toy-compute", "toy", batch_size=8, precision="fp8")
    assert p.memory_footprint.to("B").magnitude == approx(1e6)
    assert p.latency_compute.to("s").magnitude == approx(8e10 / 1e14)


def test_precision_without_device_peak_falls_back_to_default_peak(reg):
    p = solve(reg, "toy-compute", "toy", batch_size=8, precision="int4")
    assert p.memory_footprint.to("B").magnitude == approx(0.5e6)
    assert p.latency_compute.to("s").magnitude == approx(8e10 / 5e13)  # the fp16 default peak
    text = " ".join(p.trace)
    assert "lists no int4 peak" in text and "default peak" in text
    assert "default peak" in p.basis and "int4" in p.basis


def test_efficiency_derates_compute_only(reg):
    p = solve(reg, "toy-compute", "toy", batch_size=8, efficiency=0.25)
    assert p.latency_compute.to("s").magnitude == approx(8e10 / 2.5e13)
    assert p.latency_memory.to("s").magnitude == approx(3.6e6 / 1e12)


# -- training ---------------------------------------------------------------------------------
def test_non_transformer_training_three_forward_equivalents_weights_grads_and_adam(reg):
    p = solve(reg, "toy-compute", "toy", batch_size=4, is_training=True)
    ops = 1e10 * 3 * 4
    t_o = 10e-6 + 10 * 1e-6 * 3
    assert p.latency_compute.to("s").magnitude == approx(ops / 5e13)
    assert p.latency_overhead.to("s").magnitude == approx(t_o)
    # weights 2 MB + gradients 2 MB + Adam 12 B x 1e6 parameters = 16 MB (docs/engine.md)
    assert p.memory_footprint.to("B").magnitude == approx(2e6 + 2e6 + 12 * 1e6)
    fp8 = solve(reg, "toy-compute", "toy", batch_size=4, is_training=True, precision="fp8")
    assert fp8.memory_footprint.to("B").magnitude == approx(1e6 + 1e6 + 12 * 1e6)
    assert "Adam state 12 B x 1e+06 parameters" in "\n".join(p.trace)
    assert p.mfu == approx(ops / p.latency_s / 1e14) and p.hfu == p.mfu
    assert p.sample == "image"


def test_non_transformer_lora_uses_1_1x_weights(reg):
    p = solve(reg, "toy-compute", "toy", batch_size=4, is_training=True, is_lora=True)
    assert p.memory_footprint.to("B").magnitude == approx(1.1 * 2e6)


def test_recomputation_adds_a_forward_and_hfu_counts_it(reg):
    p = solve(reg, "toy-compute", "toy", batch_size=4, is_training=True,
              activation_recomputation=True)
    assert p.latency_compute.to("s").magnitude == approx(1e10 * 4 * 4 / 5e13)
    assert p.hfu / p.mfu == approx(4 / 3)


def test_transformer_training_zero0_no_recompute(reg, toy_lm_facts):
    p = solve(reg, "toy-lm", "toy", batch_size=2, seq_len=128, is_training=True)
    act = 2 * (34 * 128 * 2 * 64 + 5 * 4 * 128 * 128 * 2) * 1.0
    assert act == 2424832
    expected = 2e6 + 2e6 + 12e6 + act
    assert p.memory_footprint.to("B").magnitude == approx(expected)
    assert p.memory_breakdown["activations"] == approx(act)
    ops = 2e6 * 128 * 3 * 2  # per-token FLOPs x seq_len x 3 forward-equivalents x batch
    assert p.latency_compute.to("s").magnitude == approx(ops / 5e13)
    assert p.latency_overhead.to("s").magnitude == approx(10e-6 + 2 * 1e-6 * 3)
    assert p.sample == "sequence of 128 tokens"


def test_transformer_training_zero3_with_recomputation(reg, toy_lm_facts):
    p = solve(reg, "toy-lm", "toy", batch_size=2, seq_len=128, is_training=True,
              zero_stage=3, dp_size=4, activation_recomputation=True)
    act = 2 * (2 * 128 * 2 * 64) * 1.0  # full recomputation keeps only layer inputs
    parts = p.memory_breakdown
    assert parts["weights"] == approx(2e6 / 4)
    assert parts["gradients"] == approx(2e6 / 4)
    assert parts["optimizer"] == approx(12e6 / 4)
    assert parts["activations"] == approx(act)
    assert p.memory_footprint.to("B").magnitude == approx(4e6 + act)
    assert p.latency_compute.to("s").magnitude == approx(2e6 * 128 * 4 * 2 / 5e13)
    assert p.hfu / p.mfu == approx(4 / 3)


@pytest.mark.parametrize(("stage", "weights", "grads", "optimizer"), [
    (0, 2e6, 2e6, 12e6), (1, 2e6, 2e6, 3e6), (2, 2e6, 0.5e6, 3e6), (3, 0.5e6, 0.5e6, 3e6)])
def test_zero_stages_shard_optimizer_then_gradients_then_weights(reg, toy_lm_facts, stage,
                                                                  weights, grads, optimizer):
    p = solve(reg, "toy-lm", "toy", batch_size=2, seq_len=128, is_training=True,
              zero_stage=stage, dp_size=4)
    parts = p.memory_breakdown
    assert (parts["weights"], parts["gradients"], parts["optimizer"]) == (
        approx(weights), approx(grads), approx(optimizer))


def test_transformer_lora_scales_gradients_and_optimizer(reg, toy_lm_facts):
    p = solve(reg, "toy-lm", "toy", batch_size=2, seq_len=128, is_training=True, is_lora=True)
    fraction = 2 * 16 * 64 * 4 * 2 / 1e6
    parts = p.memory_breakdown
    assert parts["weights"] == approx(2e6)
    assert parts["gradients"] == approx(2e6 * fraction)
    assert parts["optimizer"] == approx(12e6 * fraction)


def test_transformer_inference_is_one_token_per_sequence(reg, toy_lm_facts):
    p = solve(reg, "toy-lm", "toy", batch_size=16, seq_len=4096)
    assert p.latency_compute.to("s").magnitude == approx(2e6 * 16 / 5e13)  # seq_len unused
    assert p.memory_footprint.to("B").magnitude == approx(2e6)
    assert p.sample.startswith("token")


def test_training_memory_over_capacity_is_infeasible_and_offloaded(reg, toy_lm_facts):
    p = solve(reg, "toy-lm", "toy", batch_size=512, seq_len=4096, is_training=True)
    assert not p.feasible and p.bandwidth_path == "offload"
    with pytest.raises(OOMError):
        solve(reg, "toy-lm", "toy", batch_size=512, seq_len=4096, is_training=True,
              raise_errors=True)


# -- the result object ------------------------------------------------------------------------
def test_to_dict_has_plain_floats_with_unit_suffixed_keys(reg):
    d = solve(reg, "toy-compute", "toy", batch_size=8).to_dict()
    for key in ("latency_ms", "latency_compute_ms", "latency_memory_ms", "latency_overhead_ms",
                "throughput_per_s", "energy_j", "memory_footprint_bytes", "mfu", "hfu"):
        assert type(d[key]) is float, key
    assert d["latency_ms"] == approx((8e10 / 5e13 + 2e-5) * 1e3)
    assert d["bottleneck"] == "Compute" and d["feasible"] is True
    assert isinstance(d["trace"], list) and isinstance(d["basis"], str)


def test_quantities_convert(reg):
    p = solve(reg, "toy-compute", "toy", batch_size=8)
    assert p.latency.to("us").magnitude == approx((8e10 / 5e13 + 2e-5) * 1e6)
    assert p.memory_footprint.to("MB").magnitude == approx(2.0)
    assert p.utilization == {"mfu": p.mfu, "hfu": p.hfu}


def test_inputs_and_names_resolve_from_objects_names_and_paths(reg, tmp_path):
    spec = reg.workload("toy-compute")
    device = reg.device("toy")
    a = solve(reg, spec, device, batch_size=8)
    b = solve(reg, "TOY-COMPUTE", "toy", batch_size=8)
    c = solve(reg, str(reg.workloads.origin("toy-compute")), reg.devices.origin("toy"),
              batch_size=8)
    assert a.latency_s == b.latency_s == c.latency_s
    assert a.inputs["model"] == "toy-compute" and a.inputs["batch_size"] == 8
