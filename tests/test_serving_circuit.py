"""Serving takes its device work from the circuit (roofkit.circuit): one lowering, one
roofline, one cost model. Serving adds host work and the request-level account only."""

import importlib.util

import numpy as np
import pytest

import roofkit
from roofkit.serving import serve

CASES = [("llama-2-7b", "a100-80gb", 1), ("mixtral-8x7b", "h100", 2),
         ("llama-3.1-70b", "h100", 4), ("qwen3-next-80b-a3b", "h200", 2)]


def test_serving_has_no_lowering_of_its_own():
    for name in ("work", "step", "roofline", "collective"):
        assert importlib.util.find_spec(f"roofkit.serving.{name}") is None, name


@pytest.mark.parametrize("basis", ["datasheet", "calibrated"])
@pytest.mark.parametrize(("name", "device", "tp"), CASES)
def test_every_step_is_the_circuit_estimate_plus_host_work(registry, name, device, tp, basis):
    batch, prompt = 8, 300
    est = serve(name, device, batch=batch, input_len=prompt, output_len=6, tp=tp, basis=basis,
                registry=registry)
    kw = dict(tp=tp, basis=basis, kv_cache_dtype="bf16", registry=registry)
    # the first token waits for the prompt's embedding, the layers and the LM head
    pre = roofkit.prefill(name, device, tokens=prompt, seqs=batch, head=True, **kw)
    assert est.ttft == pytest.approx(pre.time + est.prefill_host.host_time, rel=1e-12)
    layers = roofkit.prefill(name, device, tokens=prompt, seqs=batch, **kw)
    assert est.prefill_device == pre.time > layers.time
    for j, step in enumerate(est.itl_steps, start=1):
        dec = roofkit.decode(name, device, batch=batch, context=prompt + j, **kw)
        assert step == pytest.approx(dec.time + est.decode_host.host_time, rel=1e-12)
    assert est.cost_model == pre.cost_model == ("roofline" if basis == "datasheet"
                                                else "roofline_calibrated")
    assert est.basis_detail == pre.basis


@pytest.mark.parametrize(("name", "device", "tp"), CASES)
def test_memory_is_the_circuit_footprint_of_one_device(registry, name, device, tp):
    est = serve(name, device, batch=4, input_len=1000, output_len=24, tp=tp, registry=registry)
    fp = roofkit.footprint(name, device, tp=tp, kv_cache_dtype="bf16", registry=registry)
    assert est.weights_per_device == fp.weights
    assert est.kv_per_token_per_device == fp.kv_per_token
    assert est.memory_per_device == pytest.approx(fp.bytes(4, 1024), rel=1e-12)
    fit = roofkit.fits(name, device, seqs=4, context=1024, tp=tp, kv_cache_dtype="bf16",
                       registry=registry)
    assert est.fits == fit.fits


def test_host_launches_are_the_circuit_nodes_with_the_all_reduces(registry):
    one = roofkit.decode("llama-3.1-70b", "h100", registry=registry)
    four = roofkit.decode("llama-3.1-70b", "h100", tp=4, registry=registry)
    assert four.kernels == one.kernels + 2 * 80
    assert serve("llama-3.1-70b", "h100", tp=1, output_len=2,
                 registry=registry).decode_host.launches == one.kernels
    assert serve("llama-3.1-70b", "h100", tp=4, output_len=2,
                 registry=registry).decode_host.launches == four.kernels


def test_deepseek_v3_on_eight_h200(registry):
    est = serve("deepseek-v3", "h200", tp=8, batch=16, input_len=1024, output_len=64,
                registry=registry)
    assert est.fits and est.tp == 8 and est.precision == "fp8"
    assert 0 < est.ttft_ms < est.e2e_ms and est.itl_ms > 0
    nodes = {r["node"] for r in est.decode_breakdown}
    assert {"mla.attention", "mla.all_reduce", "moe.all_reduce", "moe.experts_gate_up"} <= nodes
    # the latent KV cache is kept whole on every device; the heads are split
    fp1 = roofkit.footprint("deepseek-v3", kv_cache_dtype="bf16", registry=registry)
    assert est.kv_per_token_per_device == fp1.kv_per_token
    assert est.weights_per_device < fp1.weights / 7


def test_qwen3_next_hybrid_gdn_serves_with_its_recurrent_state(registry):
    est = serve("qwen3-next-80b-a3b", "h200", batch=8, input_len=2048, output_len=32,
                registry=registry)
    assert est.state_per_seq_per_device > 0
    assert est.memory_per_device == pytest.approx(
        est.weights_per_device + 8 * (est.kv_per_token_per_device * 2080
                                      + est.state_per_seq_per_device))
    assert {"gdn.recurrence", "attention.attention"} <= {r["node"]
                                                         for r in est.decode_breakdown}
    assert np.all(np.diff(est.itl_steps) >= 0)


def test_mamba2_has_no_kv_cache_so_its_steps_do_not_grow(registry):
    est = serve("mamba2-2.7b", "a100-80gb", batch=4, input_len=512, output_len=64,
                registry=registry)
    assert est.kv_per_token_per_device == 0 and est.state_per_seq_per_device > 0
    assert est.itl_steps == pytest.approx(np.full(63, est.itl_steps[0]), rel=1e-12)
    assert est.max_batch() == int((est.usable_memory - est.weights_per_device)
                                  // est.state_per_seq_per_device)
    two = serve("mamba2-2.7b", "a100-80gb", tp=2, batch=4, input_len=512, output_len=8,
                registry=registry)
    assert two.state_per_seq_per_device == pytest.approx(est.state_per_seq_per_device / 2,
                                                         rel=0.01)
