"""The training step: memory parts by the published formulas, the pipeline bubble, FLOPs,
invalid layouts, a plugin collective used by a layout, the CLI."""

import json

import numpy as np
import pytest

from roofkit import CollectiveAlgorithm, build_registry, hookimpl
from roofkit.cli import main
from roofkit.fleet.layout import LayoutError
from roofkit.fleet.model import arch_of
from roofkit.fleet.training import train

GPT3 = "gpt-3-175b"


def test_zero_stages_shard_16_bytes_per_parameter(registry):
    """Rajbhandari et al. 2020: 2 + 2 + 12 bytes per parameter; stage 1 shards the 12,
    stage 2 also the gradients, stage 3 also the weights, over the data-parallel group."""
    parts = {}
    for z in (0, 1, 2, 3):
        e = train("llama-3.1-8b", "dgx-h100", devices=8, dp=8, seq_len=2048, zero=z,
                  registry=registry)
        parts[z] = e.memory_parts
    p = parts[0]["weights"] / 2
    assert parts[0]["gradients"] == pytest.approx(2 * p)
    assert parts[0]["optimizer_state"] == pytest.approx(12 * p)
    assert parts[1]["optimizer_state"] == pytest.approx(12 * p / 8)
    assert parts[1]["gradients"] == pytest.approx(2 * p)
    assert parts[2]["gradients"] == pytest.approx(2 * p / 8)
    arch = arch_of("llama-3.1-8b", registry)
    layer = arch.attention_params + arch.layer_params(arch.mlp)
    assert parts[3]["weights"] == pytest.approx(2 * p / 8 + 2 * 2 * layer)  # + 2 gathered


def test_shard_holds_the_circuit_parameters(registry):
    """Per-device weights with tp 8 are the circuit's parameters / 8 (the embedding and head
    each counted on the one stage that holds them, within 3 %)."""
    e = train("llama-3.1-70b", "dgx-h100", devices=8, tp=8, seq_len=2048, registry=registry)
    arch = arch_of("llama-3.1-70b", registry)
    assert e.memory_parts["weights"] / 2 * 8 == pytest.approx(arch.params, rel=0.03)


def test_one_stage_holds_the_embedding_and_the_head(registry):
    """llama-3.1-8b unties its embedding (128256 x 4096) from its LM head: on one stage a
    device holds both, every parameter but the norms (0.003 %)."""
    arch = arch_of("llama-3.1-8b", registry)
    one = train("llama-3.1-8b", "dgx-h100", devices=1, seq_len=2048, registry=registry)
    assert one.memory_parts["weights"] == pytest.approx(2 * arch.params, rel=1e-4)
    assert one.memory_parts["optimizer_state"] == pytest.approx(12 * arch.params, rel=1e-4)
    # two stages: half the layers and one of the two tables on the heaviest
    two = train("llama-3.1-8b", "dgx-h100", devices=2, pp=2, seq_len=2048, registry=registry)
    layers = 32 * (arch.attention_params + arch.layer_params(arch.mlp))
    assert two.memory_parts["weights"] == pytest.approx(2 * (layers / 2 + 128256 * 4096))


def test_activations_follow_korthikanti_with_flash_attention(registry):
    """GPT-3 175B layer, TP 8 with sequence parallelism, no recomputation: 34 s b h / t
    bytes per layer (Korthikanti et al. 2022 eq. 4 without the 5 a s / h term FlashAttention
    removes; they count 2-byte activations and 1-byte dropout masks, which we do not store,
    so 32 s b h / t here), plus the flash log-sum-exp of 4 a bytes per token."""
    s, b, h, a, t, L = 2048, 1, 12288, 96, 8, 96
    e = train(GPT3, "dgx-h100", devices=8, tp=8, seq_len=s, micro_batch=b, zero=1,
              registry=registry)
    per_layer = (32 * s * b * h + 4 * a * s * b) / t
    logits = s * b * 50257 / t * 6
    assert e.memory_parts["activations"] == pytest.approx(L * per_layer + logits, rel=1e-6)


def test_full_recompute_stores_the_layer_inputs(registry):
    s, h, t, L = 2048, 12288, 8, 96
    none = train(GPT3, "dgx-h100", devices=8, tp=8, seq_len=s, registry=registry)
    full = train(GPT3, "dgx-h100", devices=8, tp=8, seq_len=s, recompute="full",
                 registry=registry)
    one_layer = none.memory_parts["activations"] - s * 50257 / t * 6
    one_layer /= L
    expected = L * 2 * s * h / t + one_layer + s * 50257 / t * 6
    assert full.memory_parts["activations"] == pytest.approx(expected, rel=1e-6)
    assert full.hfu > full.mfu and full.step_time_s > none.step_time_s


def test_selective_recompute_costs_nothing_under_flash_attention(registry):
    a = train(GPT3, "dgx-h100", devices=8, tp=8, seq_len=2048, registry=registry)
    b = train(GPT3, "dgx-h100", devices=8, tp=8, seq_len=2048, recompute="selective",
              registry=registry)
    assert a.step_time_s == b.step_time_s and a.memory_parts == b.memory_parts


def test_1f1b_keeps_pp_micro_batches_in_flight(registry):
    kw = dict(devices=16, tp=8, pp=2, seq_len=2048, global_batch=16, registry=registry)
    one = train(GPT3, "dgx-h100", **kw)
    inter = train(GPT3, "dgx-h100", vpp=2, **kw)
    ratio = inter.memory_parts["activations"] / one.memory_parts["activations"]
    assert ratio == pytest.approx(1 + (2 - 1) / (2 * 2), rel=0.01)  # Korthikanti: 1 + (p-1)/(pv)


def test_bubble_is_p_minus_1_over_v_m(registry):
    for v in (1, 2):
        e = train(GPT3, "dgx-h100", devices=64, tp=8, pp=8, vpp=v, seq_len=2048,
                  global_batch=32, registry=registry)
        busy = e.breakdown["compute"] + e.breakdown["tp"]
        assert e.breakdown["bubble"] / busy == pytest.approx((8 - 1) / (v * 32))


def test_uneven_stages_run_at_the_slowest_stage(registry):
    """With the embedding and head counted as layers, pp 8 over 80 layers puts
    ceil(82 / 8) = 11 layers on a full stage and 10 plus the head on the last; the
    micro-batch time is the slower, from a layer time t and a head time t_h solved from two
    even layouts (pp 8: 10 t + t_h, pp 16: 5 t + t_h)."""
    kw = dict(devices=16, tp=1, dp=1, seq_len=2048, global_batch=32, recompute="full",
              registry=registry, basis="datasheet")

    def t_mb(**k):
        e = train("llama-3.1-70b", "dgx-h100", **{**kw, **k})
        return e.breakdown["compute"] / e.layout.micro_batches

    a = t_mb(pp=8, devices=8)
    b = t_mb(pp=16)
    t = (a - b) / 5
    head = b - 5 * t
    assert t_mb(pp=8, devices=8, uneven_stages=True) == pytest.approx(max(11 * t, 10 * t + head))
    assert t_mb(pp=6, devices=6, uneven_stages=True) == pytest.approx(max(14 * t, 13 * t + head))
    with pytest.raises(LayoutError, match="uneven stages need vpp = 1"):
        train("llama-3.1-70b", "dgx-h100", pp=6, vpp=2, devices=6, seq_len=2048,
              uneven_stages=True, registry=registry)


def test_deepspeed_stage_boundaries_send_the_whole_tensor(registry):
    """Without sequence parallelism each TP rank sends T h bf16 bytes per boundary when the
    engine does not scatter (DeepSpeed), T h / tp with Megatron-LM's scatter/gather."""
    from roofkit.fleet.collectives import Group, collective_time, topology

    kw = dict(devices=32, tp=8, pp=4, seq_len=2048, global_batch=16,
              sequence_parallel=False, registry=registry)
    scatter = train("llama-3.1-70b", "dgx-h100", **kw)
    whole = train("llama-3.1-70b", "dgx-h100", pp_scatter=False, **kw)
    cl = registry.cluster("dgx-h100")
    topo = topology(cl, "calibrated", registry)
    act = 2048 * 8192 * 2.0
    per_domain = scatter.placement["pp"]["per_domain"]
    sends = 2 * (16 + 4 - 1)  # forward and backward, per micro-batch plus the fill

    def p2p(msg):
        return sends * collective_time("p2p", msg, Group.of(4, per_domain), topo, registry)

    assert scatter.breakdown["pp"] == pytest.approx(p2p(act / 8))
    assert whole.breakdown["pp"] == pytest.approx(p2p(act))


def test_optimizer_step_moves_44_bytes_per_parameter(registry):
    """Main-gradient copy 6, clipping norm 4, Adam 28, weight copy 6 bytes per trainable
    parameter at the memory bandwidth; fp16 loss scaling adds the unscale pass (8)."""
    from roofkit.circuit.roofline import device_roofline

    bw = device_roofline(registry.device("a100-80gb"), "datasheet", registry).bandwidth
    for precision, per_param in (("bf16", 44.0), ("fp16", 52.0)):
        e = train("llama-3.1-8b", "1xa100-80gb", seq_len=2048, precision=precision,
                  basis="datasheet", registry=registry)
        params = e.memory_parts["weights"] / 2
        assert e.breakdown["optimizer"] == pytest.approx(per_param * params / bw)


def test_fp32_accumulation_adds_10_bytes_per_parameter_per_micro_batch(registry):
    from roofkit.circuit.roofline import device_roofline

    bw = device_roofline(registry.device("a100-80gb"), "datasheet", registry).bandwidth
    kw = dict(seq_len=2048, global_batch=4, basis="datasheet", registry=registry)
    plain = train("llama-3.1-8b", "1xa100-80gb", **kw)
    fp32 = train("llama-3.1-8b", "1xa100-80gb", fp32_accumulation=True, **kw)
    params = plain.memory_parts["weights"] / 2
    assert fp32.breakdown["compute"] - plain.breakdown["compute"] == pytest.approx(
        4 * 10 * params / bw)


def test_lora_freezes_the_base(registry):
    full = train("llama-3.1-8b", "1xh100", seq_len=2048, registry=registry)
    lora = train("llama-3.1-8b", "1xh100", seq_len=2048, lora=16, registry=registry)
    qlora = train("llama-3.1-8b", "1xh100", seq_len=2048, qlora=16, registry=registry)
    arch = arch_of("llama-3.1-8b", registry)
    adapters = 16 * sum(g.k + g.n for g in arch.attention) * arch.layers
    assert lora.memory_parts["optimizer_state"] == pytest.approx(12 * adapters)
    assert lora.memory_parts["gradients"] == pytest.approx(2 * adapters)
    assert qlora.memory_parts["weights"] < 0.3 * lora.memory_parts["weights"]
    assert lora.step_time_s < full.step_time_s
    assert qlora.fits and not full.fits


def test_fp8_runs_the_projections_faster(registry):
    kw = dict(devices=8, tp=8, seq_len=4096, registry=registry)
    assert train("llama-3.1-70b", "dgx-h100", precision="fp8", **kw).step_time_s < \
        train("llama-3.1-70b", "dgx-h100", **kw).step_time_s


def test_mfu_counts_6n_plus_attention(registry):
    e = train("llama-3.1-8b", "dgx-h100", devices=8, dp=8, seq_len=4096, global_batch=8,
              zero=1, registry=registry, basis="datasheet")
    arch = arch_of("llama-3.1-8b", registry)
    n = arch.active_params - arch.embedding_params
    attn = 2 * 2048 * 32 * 256 * 32
    flops = 8 * 4096 * (6 * n + 3 * attn)
    assert e.mfu == pytest.approx(flops / (e.step_time_s * 8 * 989.4e12), rel=1e-6)


@pytest.mark.parametrize("kw, reason", [
    (dict(tp=3), "does not divide the 64 attention heads"),
    (dict(pp=3), "does not divide the 80 layers"),
    (dict(tp=8, dp=4), "not the 64 devices"),
    (dict(ep=2, tp=8, dp=8), "has no experts"),
    (dict(vpp=2, tp=8, dp=8), "needs pp > 1"),
    (dict(tp=8, dp=8, global_batch=12), "not a multiple of micro_batch"),
])
def test_invalid_layouts_are_refused(registry, kw, reason):
    with pytest.raises(LayoutError, match=reason):
        train("llama-3.1-70b", "dgx-h100", devices=64, seq_len=2048, registry=registry, **kw)


def test_ep_must_divide_the_experts(registry):
    with pytest.raises(LayoutError, match="does not divide the 8 experts"):
        train("mixtral-8x7b", "dgx-h100", devices=48, dp=48, ep=3, seq_len=2048,
              registry=registry)


def test_moe_expert_parallel_pays_all_to_all(registry):
    e = train("mixtral-8x7b", "dgx-h100", devices=16, tp=2, dp=8, ep=8, seq_len=4096,
              global_batch=16, zero=1, registry=registry)
    assert e.breakdown["ep"] > 0 and e.placement["ep"]["size"] == 8


def test_context_parallel_splits_the_sequence(registry):
    a = train("llama-3.1-8b", "dgx-h100", devices=8, tp=4, cp=2, seq_len=32768,
              registry=registry)
    b = train("llama-3.1-8b", "dgx-h100", devices=8, tp=4, dp=2, seq_len=32768,
              global_batch=2, registry=registry)
    assert a.memory_parts["activations"] < 0.6 * b.memory_parts["activations"]


class SlowAllGather:
    """A plugin algorithm used by a layout: every collective at one tenth of the scale-up."""

    @staticmethod
    @hookimpl
    def roofkit_register_collectives():
        def time(collective, message, group, topo):
            n = np.asarray(group.size, dtype=float)
            return np.where(n > 1, 10 * np.asarray(message, dtype=float) / topo.inner.beta, 0.0)
        return [CollectiveAlgorithm("slow", ("all_reduce", "reduce_scatter", "all_gather",
                                             "all_to_all", "p2p"), time)]


def test_a_plugin_collective_prices_a_layout():
    reg = build_registry(plugins=[SlowAllGather()], entry_points=False)
    base = train("llama-3.1-8b", "dgx-h100", devices=8, tp=8, seq_len=2048, registry=reg)
    slow = train("llama-3.1-8b", "dgx-h100", devices=8, tp=8, seq_len=2048, registry=reg,
                 collective_algorithm="slow")
    act = 2048 * 4096 * 2
    per_layer = 8 * 10 * act / 450e9  # 4 all-gathers + 4 reduce-scatters per layer
    assert slow.breakdown["tp"] == pytest.approx(32 * per_layer)
    assert slow.breakdown["tp"] > 5 * base.breakdown["tp"]


def test_cli_train_json_has_the_issue_keys(capsys):
    args = ["train", "llama-3.1-70b", "dgx-h100", "--devices", "64", "--tp", "8", "--pp", "2",
            "--dp", "4", "--micro-batch", "1", "--global-batch", "512", "--seq-len", "8192",
            "--json", "--no-plugins"]
    assert main(args) == 0
    d = json.loads(capsys.readouterr().out)
    for key in ("step_time_s", "tokens_per_s", "mfu", "hfu", "memory_per_device_bytes",
                "fits", "breakdown_s", "layout", "basis"):
        assert key in d
    assert set(d["breakdown_s"]) == {"compute", "tp", "cp", "ep", "pp", "dp", "bubble",
                                     "optimizer"}
    assert d["layout"]["placement"]["tp"]["domains"] == 1


def test_cli_train_bad_layout_exits_1(capsys):
    assert main(["train", "llama-3.1-70b", "dgx-h100", "--devices", "64", "--tp", "3",
                 "--seq-len", "2048", "--no-plugins"]) == 1
    assert "does not divide" in capsys.readouterr().err


def test_results_offer_pandas_and_html(registry):
    e = train("llama-3.1-8b", "dgx-h100", devices=8, tp=8, seq_len=2048, registry=registry)
    df = e.to_pandas()
    assert df.loc[0, "step_time_s"] == pytest.approx(e.step_time_s)
    assert "<table" in e._repr_html_() and "mfu" in e._repr_html_()
    assert e.step_time.to("ms").magnitude == pytest.approx(1e3 * e.step_time_s)
