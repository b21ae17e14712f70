"""The engine on the catalogue's template workloads: counts come from the circuit and match
the publishers' within 1 %; training and inference run end to end."""

from __future__ import annotations

import pytest

import roofkit
from roofkit import Engine

pytest.importorskip("roofkit.circuit.stats")

# Published counts: Llama 3.1 8B model card (8.03 B); Mixtral of Experts, Jiang et al. 2024,
# arXiv:2401.04088 (46.7 B total, 12.9 B active); Qwen3-30B-A3B model card (30.5 B total,
# 3.3 B activated); GPT-J-6B model card table (n_parameters 6,053,381,344); Falcon-180B model
# card ("a 180B parameters causal decoder-only model").
PUBLISHED = {
    "llama-3.1-8b": (8.03e9, None),
    "mixtral-8x7b": (46.7e9, 12.9e9),
    "qwen3-30b-a3b": (30.5e9, None),
    "gpt-j-6b": (6_053_381_344, None),
    "falcon-180b": (180e9, None),
}


@pytest.fixture(scope="module")
def reg():
    return roofkit.build_registry(entry_points=False)


@pytest.fixture(scope="module")
def facts(reg):
    from roofkit.engine.facts import cache_for

    return lambda name: cache_for(reg).workload(name)


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_derived_parameters_within_one_percent_of_published(facts, name):
    total, active = PUBLISHED[name]
    wf = facts(name)
    assert wf.params == pytest.approx(total, rel=0.01)
    if active is not None:
        assert wf.active_params == pytest.approx(active, rel=0.01)


def test_counts_are_the_circuits(reg, facts):
    from roofkit.circuit.stats import workload_stats

    st = workload_stats("mixtral-8x7b", registry=reg)
    wf = facts("mixtral-8x7b")
    assert (wf.params, wf.active_params, wf.flops, wf.layers) == (
        st.params, st.active_params, st.flops_per_token, st.layers)


def test_llama_decode_step_is_memory_bound_at_batch_32(reg):
    p = Engine.solve("llama-3.1-8b", "h100", batch_size=32, registry=reg)
    st = roofkit.circuit.stats.workload_stats("llama-3.1-8b", registry=reg)
    w = st.params * 2
    assert p.memory_footprint.to("B").magnitude == pytest.approx(w)
    assert p.latency_memory.to("s").magnitude == pytest.approx(w * (1 + 0.1 * 32) / 3.35e12)
    assert p.bottleneck == "Memory" and p.feasible
    assert p.sample.startswith("token")


def test_moe_weights_are_total_and_flops_are_active(reg, facts):
    wf = facts("mixtral-8x7b")
    p = Engine.solve("mixtral-8x7b", "h200", batch_size=1, registry=reg)
    assert p.memory_footprint.to("B").magnitude == pytest.approx(wf.params * 2)
    assert wf.flops < 2 * wf.params / 3  # routed experts at top_k only


def test_llama_70b_training_fits_an_h100_only_sharded_by_zero3(reg):
    kw = dict(batch_size=1, seq_len=4096, is_training=True, activation_recomputation=True,
              precision="bf16", registry=reg)
    alone = Engine.solve("llama-3.1-70b", "h100", **kw)
    sharded = Engine.solve("llama-3.1-70b", "h100", zero_stage=3, dp_size=32, **kw)
    assert not alone.feasible and alone.bandwidth_path == "offload"
    assert sharded.feasible
    parts = sharded.memory_breakdown
    assert parts["optimizer"] == pytest.approx(alone.memory_breakdown["optimizer"] / 32)
    assert sharded.hfu / sharded.mfu == pytest.approx(4 / 3)


@pytest.mark.parametrize("name", ["bert-base", "qwen3-next-80b-a3b", "deepseek-v3",
                                  "gpt-oss-20b"])
def test_every_template_family_solves(reg, name):
    p = Engine.solve(name, "b200", batch_size=8, precision="fp8", registry=reg)
    assert p.latency_s > 0 and p.throughput_per_s > 0
    t = Engine.solve(name, "b200", batch_size=1, seq_len=512, is_training=True, registry=reg)
    assert t.latency_s > p.latency_s


# -- cost_model: the circuit route ------------------------------------------------------------
def test_default_is_the_reference_equation(reg):
    a = Engine.solve("llama-3.1-8b", "h100", batch_size=8, registry=reg)
    b = Engine.solve("llama-3.1-8b", "h100", batch_size=8, cost_model=None, registry=reg)
    assert a.to_dict() == b.to_dict()


def test_cost_model_routes_decode_through_the_circuit(reg):
    p = Engine.solve("llama-3.1-8b", "h100", batch_size=32, seq_len=1024,
                     cost_model="roofline", registry=reg)
    est = roofkit.decode("llama-3.1-8b", "h100", batch=32, context=1024, precision="fp16",
                         basis="datasheet", registry=reg)
    fit = roofkit.fits("llama-3.1-8b", "h100", seqs=32, context=1024, precision="fp16",
                       basis="datasheet", registry=reg)
    overhead = 10e-6 + 32 * 10e-6
    assert p.latency_s == pytest.approx(est.time + overhead, rel=1e-12)
    assert p.latency >= max(p.latency_compute, p.latency_memory)
    assert p.memory_footprint.to("B").magnitude == pytest.approx(fit.required)
    assert p.feasible == fit.fits
    assert p.throughput_per_s == 32 / p.latency_s
    assert "cost model 'roofline'" in p.trace[0] and "efficiency" in " ".join(p.trace)


def test_cost_model_prefills_an_encoder(reg):
    p = Engine.solve("bert-base", "h100", batch_size=4, seq_len=128, cost_model="roofline",
                     registry=reg)
    assert p.sample == "sequence of 128 tokens" and p.latency_s > 0


def test_cost_model_refuses_training_generic_workloads_and_unknown_models(reg):
    with pytest.raises(roofkit.SpecError, match="training"):
        Engine.solve("llama-3.1-8b", "h100", is_training=True, cost_model="roofline",
                     registry=reg)
    with pytest.raises(roofkit.SpecError, match="generic"):
        Engine.solve("resnet-50", "h100", cost_model="roofline", registry=reg)
    with pytest.raises(roofkit.UnknownNameError, match="roofline"):
        Engine.solve("llama-3.1-8b", "h100", cost_model="roofline-x", registry=reg)
