"""Exposed communication of a training step by hand: ZeRO / FSDP gradient and weight sync
(overlapped with the backward, one bucket always exposed), CP ring attention, the EP
all-to-alls with their capacity factor, and where placement puts each group.

A plugin collective algorithm ``per_byte`` prices every collective at a declared number of
seconds per byte of the buffer one device holds, so each figure below is arithmetic on the
model's published dims (llama-3.1-8b: hidden 4096, 32 layers, 32 heads, 8 KV heads of 128,
FFN 14336, vocabulary 128256; mixtral-8x7b: 32 MoE layers, top-2 of 8 experts).
"""

from __future__ import annotations

import numpy as np
import pytest

from roofkit import CollectiveAlgorithm, build_registry, hookimpl
from roofkit.fleet.training import train

L, H = 32, 4096
ATTN = 2 * H * H + 2 * H * 1024  # q and o 4096 x 4096, k and v 4096 x 1024
MLP = 3 * H * 14336  # gate, up, down
HEAD = H * 128256  # the LM head, and the untied embedding table of the same size
#: bf16 bytes of one device's trainable weights at tp 8 on one stage (its gradient buffer):
#: the layers, the embedding and the head
S_TP8 = 2 * (L * (ATTN + MLP) + 2 * HEAD) / 8


def per_byte(rates):
    class PerByte:
        @staticmethod
        @hookimpl
        def roofkit_register_collectives():
            def time(collective, message, group, topo):
                n = np.asarray(group.size, dtype=float)
                return np.where(n > 1, rates.get(collective, 0.0)
                                * np.asarray(message, dtype=float), 0.0)
            return [CollectiveAlgorithm("per_byte", ("all_reduce", "reduce_scatter",
                                                     "all_gather", "all_to_all", "p2p"),
                                        time)]
    return build_registry(plugins=[PerByte()], entry_points=False)


def dp_train(reg, **kw):
    base = dict(devices=16, tp=8, dp=2, micro_batch=4, global_batch=8, seq_len=4096,
                basis="datasheet", registry=reg, collective_algorithm="per_byte")
    return train("llama-3.1-8b", "16xh100", **{**base, **kw})


def test_the_shard_holds_the_published_parameters():
    # 8,030,261,248 parameters in the model card, of which 266,240 are norm weights
    assert pytest.approx(2 * (8_030_261_248 - 266_240) / 8) == S_TP8


def test_gradient_sync_without_overlap_is_wholly_exposed():
    k = 1e-12  # s per byte
    reg = per_byte({"all_reduce": 2 * k, "reduce_scatter": k, "all_gather": k})
    zero0 = dp_train(reg, zero=0, dp_overlap=False)
    zero1 = dp_train(reg, zero=1, dp_overlap=False)
    assert zero0.breakdown["dp"] == pytest.approx(2 * k * S_TP8)  # one all-reduce
    # ZeRO 1: reduce-scatter the gradients, all-gather the updated weights
    assert zero1.breakdown["dp"] == pytest.approx(k * S_TP8 + k * S_TP8)


def test_overlapped_gradient_sync_exposes_one_bucket():
    # the sync (under 2 ms) hides behind a backward of 4 x 4096 tokens, but the last
    # bucket (one of the 32 layers) waits for the backward to end
    k = 1e-12
    reg = per_byte({"all_reduce": 2 * k, "reduce_scatter": k, "all_gather": k})
    zero0 = dp_train(reg, zero=0)
    zero2 = dp_train(reg, zero=2)
    assert zero0.breakdown["dp"] == pytest.approx(2 * k * S_TP8 / L)
    assert zero2.breakdown["dp"] == pytest.approx((k * S_TP8 + k * S_TP8) / L)
    # the unhidden part is reported, not the whole transfer
    assert zero0.breakdown["dp"] < dp_train(reg, zero=0, dp_overlap=False).breakdown["dp"]


def test_fsdp_gathers_the_weights_every_micro_batch():
    # ZeRO 3: per micro-batch an all-gather of the weights before the forward and again
    # before the backward, with the gradients' reduce-scatter; each overlapped, one layer
    # of each exposed; two micro-batches per step here
    k = 1e-12
    reg = per_byte({"reduce_scatter": k, "all_gather": k})
    z3 = dp_train(reg, zero=3, micro_batch=2)
    assert z3.layout.micro_batches == 2
    per_micro = k * S_TP8 / L + (k * S_TP8 + k * S_TP8) / L
    assert z3.breakdown["dp"] == pytest.approx(2 * per_micro)
    # its memory: the shard of the weights plus two gathered layers
    layer = 2 * (ATTN + MLP) / 8
    assert z3.memory_parts["weights"] == pytest.approx(S_TP8 / 2 + 2 * layer)


def test_a_slow_fabric_exposes_the_sync_beyond_the_backward():
    # at 1 ns per byte the all-reduce (3.75 s) outlasts the backward: what is exposed is
    # the sync less the backward it hid behind, more than one bucket and less than all
    k = 1e-9
    reg = per_byte({"all_reduce": k})
    e = dp_train(reg, zero=0)
    assert k * S_TP8 / L < e.breakdown["dp"] < k * S_TP8


def test_context_parallel_ring_passes_kv_chunks_cp_minus_1_times():
    # cp 4 over a sequence of 8192: T = 2048 tokens a device; each ring step passes one
    # device's K and V, 2 * T * 8 KV heads * 128 * 2 B; cp - 1 steps forward, twice that
    # backward; at 1 us per byte the ring dwarfs the attention it overlaps with
    k = 1e-6
    reg = per_byte({"p2p": k})
    e = train("llama-3.1-8b", "dgx-h100", devices=4, cp=4, seq_len=8192, global_batch=1,
              basis="datasheet", registry=reg, collective_algorithm="per_byte")
    chunk = 2 * 2048 * 8 * 128 * 2
    ring = k * chunk * (4 - 1)
    assert e.breakdown["cp"] == pytest.approx(L * (ring + 2 * ring), rel=1e-3)
    assert e.breakdown["pp"] == 0.0  # one stage: no pipeline sends
    # CP shards the activations of the sequence four ways
    assert e.placement["cp"] == {"size": 4, "stride": 1, "per_domain": 4, "domains": 1,
                                 "where": e.placement["cp"]["where"]}


def test_ep_all_to_alls_scale_with_the_capacity_factor():
    # per MoE layer a dispatch and a combine all-to-all forward and again backward, each of
    # T * top_k * capacity_factor * hidden * 2 B a device
    k = 1e-9
    reg = per_byte({"all_to_all": k})
    kw = dict(devices=8, dp=8, ep=8, seq_len=4096, global_batch=8, basis="datasheet",
              registry=reg, collective_algorithm="per_byte")
    one = train("mixtral-8x7b", "dgx-h100", capacity_factor=1.0, **kw)
    more = train("mixtral-8x7b", "dgx-h100", capacity_factor=1.25, **kw)
    for e, cf in ((one, 1.0), (more, 1.25)):
        assert e.breakdown["ep"] == pytest.approx(L * 4 * k * 4096 * 2 * cf * H * 2)
    # padded capacity is computed too: more expert rows, more activations
    assert more.breakdown["compute"] > one.breakdown["compute"]
    assert more.memory_parts["activations"] > one.memory_parts["activations"]


def test_placement_says_where_each_group_landed():
    reg = build_registry(entry_points=False)
    e = train("llama-3.1-70b", "dgx-h100", devices=64, tp=8, pp=2, dp=4, global_batch=512,
              seq_len=8192, registry=reg)
    p = e.placement
    # TP moves the most bytes: innermost, one 8-GPU NVLink domain; DP next (stride 8) and
    # PP outermost (stride 8 x 4 = 32), each one member per domain over the network
    assert (p["tp"]["stride"], p["tp"]["per_domain"], p["tp"]["domains"]) == (1, 8, 1)
    assert (p["dp"]["stride"], p["dp"]["per_domain"], p["dp"]["domains"]) == (8, 1, 4)
    assert (p["pp"]["stride"], p["pp"]["per_domain"], p["pp"]["domains"]) == (32, 1, 2)
    assert "inside one scale-up domain" in p["tp"]["where"]
    assert "across 4 scale-up domains" in p["dp"]["where"]
    # groups of one take no room and are not listed
    assert "cp" not in p and "ep" not in p


def test_a_72_gpu_domain_holds_tp_and_dp_together():
    reg = build_registry(entry_points=False)
    e = train("llama-3.1-70b", "gb200-nvl72", devices=72, tp=8, dp=9, global_batch=72,
              seq_len=4096, registry=reg)
    # stride 8, 72 // 8 = 9 members per domain: the whole DP group inside the NVL72 domain
    assert e.placement["dp"]["per_domain"] == 9 and e.placement["dp"]["domains"] == 1
