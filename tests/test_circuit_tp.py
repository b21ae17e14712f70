"""Tensor parallelism in the circuit: each of tp devices holds heads/tp query heads,
max(kv_heads/tp, 1) KV heads, ffn/tp of every FFN and expert and vocab/tp of the embedding
and head, and takes part in an all-reduce after each row-parallel projection, costed on the
device's link: t = 2(n-1)/n * bytes / link_bw + 2(n-1) * latency."""

import pytest

import roofkit
from roofkit.circuit.model import build_model
from roofkit.errors import SpecError
from roofkit.testing import make_registry, write_spec


def _nodes(reg, name, tp):
    return {n.id: n for n in build_model(name, reg, tp=tp).nodes}


def test_llama_70b_shards_by_hand(registry):
    one, four = _nodes(registry, "llama-3.1-70b", 1), _nodes(registry, "llama-3.1-70b", 4)
    # 64 query heads, 8 KV heads, head_dim 128, ffn 28672, vocab 128256
    assert four["attention.qkv"].dims["n"] == (64 / 4 + 2 * 8 / 4) * 128
    assert four["attention.o"].dims["k"] == 64 / 4 * 128
    assert four["attention.attention"].dims["heads"] == 16
    assert four["attention.attention"].dims["kv_heads"] == 2
    assert four["ffn.gate_up"].dims["n"] == 2 * 28672 / 4
    assert four["ffn.down"].dims["k"] == 28672 / 4
    assert four["lm_head"].dims["vocab"] == 128256 / 4
    assert four["attention.norm"].dims == one["attention.norm"].dims   # norms replicated
    assert "attention.all_reduce" not in one and "ffn.all_reduce" not in one
    assert four["attention.all_reduce"].count == four["ffn.all_reduce"].count == 80


def test_kv_heads_are_replicated_when_fewer_than_devices(registry):
    eight = _nodes(registry, "llama-3.1-8b", 8)              # 8 KV heads: one each
    assert eight["attention.attention"].dims["kv_heads"] == 1
    fp1 = roofkit.footprint("llama-3.1-8b", registry=registry)
    fp8 = roofkit.footprint("llama-3.1-8b", registry=registry, tp=8)
    assert fp8.kv_per_token == fp1.kv_per_token / 8
    # Qwen3-Next: 2 KV heads over 8 devices -> each keeps one, a quarter of the cache each
    q1 = roofkit.footprint("qwen3-next-80b-a3b", registry=registry)
    q8 = roofkit.footprint("qwen3-next-80b-a3b", registry=registry, tp=8)
    assert q8.kv_per_token == q1.kv_per_token / 2
    assert q8.state_per_seq < q1.state_per_seq / 7            # GDN heads split


def test_weights_per_device_are_about_the_whole_over_tp(registry):
    # replicated pieces (norms, routers, MLA's q_a/kv_a, Mamba2's one B/C group) add a little
    for name, extra in (("llama-3.1-70b", 1.01), ("mixtral-8x7b", 1.01),
                        ("deepseek-v3", 1.05), ("mamba2-2.7b", 1.15)):
        whole = roofkit.footprint(name, registry=registry).weights
        shard = roofkit.footprint(name, registry=registry, tp=8).weights
        assert whole / 8 <= shard < whole / 8 * extra, name


def test_an_all_reduce_node_by_hand():
    reg = roofkit.build_registry(entry_points=False)
    h100 = reg.device("h100")
    ic = h100.interconnect
    B, n, hidden = 16, 4, 8192
    est = roofkit.decode("llama-3.1-70b", "h100", batch=B, context=1024, tp=n,
                         basis="datasheet", registry=reg)
    row = next(r for r in est.rows if r.node == "ffn.all_reduce")
    message = B * hidden * 2
    t = 2 * (n - 1) / n * message / ic.bandwidth + 2 * (n - 1) * ic.latency
    assert row.time == pytest.approx(80 * t, rel=1e-12)
    assert row.t_link == row.time and row.bound == "interconnect" and row.slot == "link"
    assert row.link_bytes == pytest.approx(80 * 2 * (n - 1) / n * message)
    assert row.flops == 0 and row.bytes == 0
    assert est.link_time == pytest.approx(2 * 80 * t, rel=1e-12)
    assert est.to_dict()["tp"] == n


def test_fp8_activations_are_reduced_in_16_bit(registry):
    est = roofkit.decode("llama-3.1-70b", "h100", batch=4, precision="fp8", tp=2,
                         registry=registry)
    row = next(r for r in est.rows if r.node == "ffn.all_reduce")
    assert row.link_bytes == pytest.approx(80 * 2 * 1 / 2 * 4 * 8192 * 2)


def test_calibrated_all_reduce_is_the_fastest_measured_algorithm(registry):
    from roofkit.circuit.roofline import device_roofline

    roof = device_roofline(registry.device("h100"), "calibrated", registry)
    est = roofkit.decode("llama-3.1-70b", "h100", batch=1, context=128, tp=8,
                         basis="calibrated", registry=registry)
    row = next(r for r in est.rows if r.node == "attention.all_reduce")
    message = 8192 * 2
    assert row.time / 80 == pytest.approx(roof.link.all_reduce(message, 8), rel=1e-12)
    custom = next(r for r in roof.link.rings(8) if r.name.startswith("custom"))
    assert row.time / 80 == pytest.approx(custom.time(message, 8), rel=1e-12)  # small message
    # 16 KiB lies between the kernel's measured sizes (2 KiB .. 4 MiB): the measured curve
    assert custom.time(16384, 8) == pytest.approx(5.7e-6, rel=0.05)


def test_tensor_parallelism_shortens_a_memory_bound_step(registry):
    times = [roofkit.decode("llama-3.1-70b", "h100", batch=1, context=2048, tp=tp,
                            basis="calibrated", registry=registry).time for tp in (1, 2, 4)]
    assert times[0] > times[1] > times[2]


def test_every_template_takes_tp(registry):
    for name, tp in [("llama-3.1-8b", 8), ("mixtral-8x7b", 8), ("deepseek-v3", 8),
                     ("qwen3-next-80b-a3b", 8), ("mamba2-2.7b", 8), ("mamba-2.8b", 8),
                     ("gemma-2-9b", 8), ("bert-base", 4)]:
        est = roofkit.prefill(name, "h200", tokens=256, tp=tp, registry=registry)
        assert any(r.op == "all_reduce" for r in est.rows), name
        assert est.tp == tp and est.link_time > 0


def test_mamba1_reduces_after_x_proj_and_out_proj(registry):
    nodes = _nodes(registry, "mamba-2.8b", 2)
    assert {"mamba.x_all_reduce", "mamba.all_reduce"} <= set(nodes)
    assert nodes["mamba.x_all_reduce"].dims["width"] == 160 + 2 * 16


def test_tp_must_divide_the_heads_and_fit_the_link(registry):
    with pytest.raises(SpecError, match="does not divide heads"):
        roofkit.decode("llama-3.1-8b", "h100", tp=3, registry=registry)
    with pytest.raises(SpecError, match="no \\[interconnect\\]"):
        roofkit.decode("llama-3.1-8b", "l4", tp=2, registry=registry)
    with pytest.raises(SpecError, match="exceeds the 2 devices"):
        roofkit.fits("llama-3.1-8b", "h100-pcie", tp=4, registry=registry)
    with pytest.raises(SpecError, match="integer >= 1"):
        roofkit.footprint("llama-3.1-8b", tp=0, registry=registry)


UNSHARDED = """
name = "plain"
requires = ["hidden", "vocab"]

[[nodes]]
id = "embed"
section = "embed"
op = "embed"
role = "embedding"
dims = { vocab = "vocab", hidden = "hidden" }

[[nodes]]
id = "head"
section = "head"
op = "lm_head"
role = "lm_head"
dims = { vocab = "vocab", hidden = "hidden" }
"""

PLAIN_WORKLOAD = """
name = "plain-lm"
display_name = "Plain"
domain = "language"
template = "plain"

[dims]
layers = 1
hidden = 64
vocab = 100

[sources]
config = "https://example.com/plain"

[provenance]
dims = "config"
"""


def test_a_template_that_never_reads_tp_refuses_tp(tmp_path):
    write_spec(tmp_path, "circuits", "plain", UNSHARDED)
    write_spec(tmp_path, "workloads", "plain-lm", PLAIN_WORKLOAD)
    reg = make_registry(spec_paths=[tmp_path], cache=False)
    assert roofkit.decode("plain-lm", "h100", registry=reg).time > 0
    with pytest.raises(SpecError, match="does not describe tensor parallelism"):
        roofkit.decode("plain-lm", "h100", tp=2, registry=reg)


def test_tp_divides_names_a_known_dim(tmp_path):
    write_spec(tmp_path, "circuits", "plain", UNSHARDED.replace(
        'requires = ["hidden", "vocab"]', 'requires = ["hidden", "vocab"]\ntp_divides = ["hedas"]'))
    with pytest.raises(SpecError, match="tp_divides"):
        make_registry(spec_paths=[tmp_path], cache=False)
