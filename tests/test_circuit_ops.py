"""Per-op costs by hand: each builtin rule against its arithmetic."""

import pytest

import roofkit
from roofkit.circuit.model import rule_cost


@pytest.fixture(scope="module")
def reg():
    return roofkit.build_registry(entry_points=False)


def test_linear_decode(reg):
    c = rule_cost(reg, "linear", {"k": 4096, "n": 1024}, rows=4)
    assert c["flops"] == 2 * 4 * 4096 * 1024
    assert c["weight_bytes"] == 4096 * 1024 * 2
    assert c["act_bytes"] == 4 * (4096 + 1024) * 2
    assert c["params"] == 4096 * 1024


def test_linear_bias_adds_one_row_of_params(reg):
    c = rule_cost(reg, "linear", {"k": 768, "n": 2304, "bias": 1}, rows=1)
    assert c["params"] == 768 * 2304 + 2304
    assert c["flops"] == 2 * 768 * 2304 + 2304


def test_attention_decode_reads_each_sequences_kv(reg):
    dims = {"heads": 32, "kv_heads": 8, "head_dim": 128}
    c = rule_cost(reg, "paged_attention", dims, rows=2, context=1000)
    assert c["flops"] == 4 * 2 * 1000 * 32 * 128
    assert c["kv_read"] == 2 * 1000 * (2 * 8 * 128 * 2)
    assert c["kv_per_token"] == 2 * 8 * 128 * 2


def test_sliding_window_caps_the_context(reg):
    dims = {"heads": 32, "kv_heads": 8, "head_dim": 128, "window": 256}
    c = rule_cost(reg, "paged_attention", dims, rows=2, context=1000)
    assert c["kv_read"] == 2 * 256 * 4096
    short = rule_cost(reg, "paged_attention", dims, rows=2, context=100)
    assert short["kv_read"] == 2 * 100 * 4096


def test_fp8_kv_halves_the_cache(reg):
    dims = {"heads": 32, "kv_heads": 8, "head_dim": 128}
    assert rule_cost(reg, "paged_attention", dims, kv_bytes=1.0)["kv_per_token"] == 2048


@pytest.mark.parametrize("tokens, distinct", [(1, 2.0), (2, 3.5), (16, 8 * (1 - 0.75 ** 16))])
def test_mixtral_distinct_experts_read(reg, tokens, distinct):
    # T tokens routed to 2 of 8 experts read E(1 - (1 - k/E)^T) distinct experts
    one = 4096 * 2 * 14336
    c = rule_cost(reg, "expert_gate_up", {"experts": 8, "top_k": 2, "k": 4096, "n": 2 * 14336},
                  rows=tokens)
    assert c["weight_bytes"] == pytest.approx(distinct * one * 2)
    assert c["flops"] == 2 * tokens * 2 * one
    assert c["params"] == 8 * one


def test_gdn_state_per_sequence(reg):
    dims = {"k_heads": 16, "v_heads": 32, "k_dim": 128, "v_dim": 128}
    assert rule_cost(reg, "gdn_recurrence", dims)["state_per_seq"] == 32 * 128 * 128 * 4
    bf16 = rule_cost(reg, "gdn_recurrence", dims, state_bytes=2.0)
    assert bf16["state_per_seq"] == 32 * 128 * 128 * 2
    # decode reads and writes the whole state once per sequence
    c = rule_cost(reg, "gdn_recurrence", dims, rows=3)
    assert c["state_read"] == c["state_write"] == 3 * 32 * 128 * 128 * 4


def test_mamba2_state_per_sequence(reg):
    dims = {"heads": 80, "head_dim": 64, "state": 128}
    assert rule_cost(reg, "ssm_update", dims)["state_per_seq"] == 80 * 64 * 128 * 4
    # fixed at f32 (the reference), whatever the state element size says
    assert rule_cost(reg, "ssm_update", dims, state_bytes=2.0)["state_per_seq"] == \
        80 * 64 * 128 * 4


def test_conv_window_per_sequence_is_apart_from_the_state(reg):
    c = rule_cost(reg, "conv1d_update", {"channels": 8192, "kernel": 4})
    assert c["conv_state_per_seq"] == 8192 * 3 * 2
    assert c["state_per_seq"] == 0


def test_mla_caches_one_latent_per_token(reg):
    dims = {"heads": 128, "kv_lora_rank": 512, "qk_nope_head_dim": 128,
            "qk_rope_head_dim": 64, "v_head_dim": 128}
    c = rule_cost(reg, "mla_attention", dims, rows=1, context=1000)
    assert c["kv_per_token"] == (512 + 64) * 2
    assert c["kv_read"] == 1000 * (512 + 64) * 2
    assert c["params"] == 512 * 128 * (128 + 128)


def test_attention_prefill_at_half_context(reg):
    dims = {"heads": 32, "kv_heads": 8, "head_dim": 128}
    c = rule_cost(reg, "paged_attention", dims, mode="prefill", rows=1000, context=500, seqs=1)
    assert c["flops"] == 4 * 1000 * 500 * 32 * 128


def test_embed_reads_one_row_per_token(reg):
    c = rule_cost(reg, "embed", {"vocab": 32000, "hidden": 4096}, rows=3)
    assert c["weight_bytes"] == 3 * 4096 * 2
    assert c["params"] == 32000 * 4096


def test_tied_lm_head_stores_nothing_but_reads_the_table(reg):
    c = rule_cost(reg, "lm_head", {"vocab": 1000, "hidden": 64, "tied": 1}, rows=1)
    assert c["params"] == 0
    assert c["weight_bytes"] == 1000 * 64 * 2
