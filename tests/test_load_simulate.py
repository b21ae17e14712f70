"""The load simulator against hand arithmetic and the static-batch serving estimate."""

from __future__ import annotations

import math

import numpy as np
import pytest

import roofkit
from roofkit.load import SpecDecode, simulate
from roofkit.load.steps import StepCosts


def test_single_request_equals_serve_at_batch_1():
    est = roofkit.serve("llama-3.1-8b", "h100", batch=1, input_len=1000, output_len=50)
    r = simulate("llama-3.1-8b", "h100", concurrency=1, requests=1, input_len=1000,
                 output_len=50, engine=None)
    assert r.ttft["mean"] == pytest.approx(est.ttft, rel=1e-6)
    assert r.e2e["mean"] == pytest.approx(est.e2e, rel=1e-6)
    assert r.tpot["mean"] * 1e3 == pytest.approx(est.itl_ms, rel=1e-6)


def test_single_request_equals_serve_with_tp_on_a_moe():
    est = roofkit.serve("mixtral-8x7b", "h100", batch=1, input_len=300, output_len=20, tp=2)
    r = simulate("mixtral-8x7b", "h100", concurrency=1, requests=1, input_len=300,
                 output_len=20, tp=2, engine=None)
    assert r.e2e["mean"] == pytest.approx(est.e2e, rel=1e-6)


def test_closed_loop_reaches_the_static_batch_itl():
    c = 16
    est = roofkit.serve("llama-3.1-8b", "h100", batch=c, input_len=512, output_len=128)
    r = simulate("llama-3.1-8b", "h100", concurrency=c, requests=8 * c, input_len=512,
                 output_len=128, engine=None)
    assert r.itl["p50"] == pytest.approx(float(np.median(est.itl_steps)), rel=0.01)
    assert r.mean_batch == pytest.approx(c, rel=0.05)


def test_littles_law_on_a_rate_run():
    r = simulate("llama-3.1-8b", "h100", rate=4.0, requests=600, input_len=256,
                 output_len=64, engine="vllm", seed=3)
    lam = r.requests_per_s
    w = r.e2e["mean"]
    # L: sequences in the engine averaged over the whole run, idle time included (the
    # queue stays empty at this load); L = lambda * W
    tl = r.timeline
    busy = float(np.dot(tl["batch"], tl["step_s"]))
    assert busy / r.duration == pytest.approx(lam * w, rel=0.05)
    assert lam == pytest.approx(4.0, rel=0.1)


def test_chunked_prefill_bounds_the_step_tokens():
    kw = dict(concurrency=4, requests=8, input_len=2000, output_len=8, engine="vllm",
              max_batched_tokens=512)
    r = simulate("llama-3.1-8b", "h100", **kw)
    assert r.timeline["tokens"].max() <= 512
    whole = simulate("llama-3.1-8b", "h100", chunked_prefill=False, **kw)
    assert whole.timeline["tokens"].max() >= 2000
    assert any("raised from 512 to 2000" in n for n in whole.notes)


def test_preemption_when_the_kv_cache_is_short():
    # llama-3.1-70b at tp 2 on H100s leaves about 20 GB a device for KV, 80 layers x 4 KV
    # heads x 128 x 2 x 2 B = 160 KiB a token: about 122k tokens, while 32 requests of
    # 512 + 4096 tokens grow to 147k
    kw = dict(tp=2, concurrency=32, requests=32, input_len=512, output_len=4096,
              max_num_seqs=32)
    r = simulate("llama-3.1-70b", "h100", engine="vllm", **kw)
    assert r.preemptions > 0
    assert r.kv_peak_fraction <= 1.0 + 1e-9
    assert r.output_tokens == 32 * 4096
    reserve = simulate("llama-3.1-70b", "h100", engine="tensorrt-llm", **kw)
    assert reserve.preemptions == 0
    assert reserve.max_batch < 32


def test_pd_transfer_by_hand():
    i = 1000
    agg = simulate("llama-3.1-8b", "h100", concurrency=1, requests=1, input_len=i,
                   output_len=2, engine=None)
    dis = simulate("llama-3.1-8b", "h100", concurrency=1, requests=1, input_len=i,
                   output_len=2, engine=None, disagg="1:1")
    # llama-3.1-8b: 32 layers x 8 KV heads x 128 head_dim x (K and V) x 2 bytes (bf16)
    kv_per_token = 32 * 8 * 128 * 2 * 2
    link = roofkit.default_registry().device("h100").interconnect
    t_kv = link.latency + i * kv_per_token / link.bandwidth
    assert dis.ttft["mean"] - agg.ttft["mean"] == pytest.approx(t_kv, rel=1e-6)
    assert dis.devices == 2
    assert dis.pd_ratio is not None and dis.pd_ratio > 0


@pytest.mark.parametrize("acceptance", [0.0, 1.0])
def test_speculative_decoding_by_hand(acceptance):
    k, i, o = 3, 200, 41
    r = simulate("llama-3.1-8b", "h100", concurrency=1, requests=1, input_len=i,
                 output_len=o, engine=None,
                 spec_decode=SpecDecode(k=k, acceptance=acceptance, draft="llama-3.2-1b"))
    verify = StepCosts("llama-3.1-8b", "h100", max_rows=256, max_seqs=4, max_context=512,
                       verify=k + 1)
    draft = StepCosts("llama-3.2-1b", "h100", max_rows=256, max_seqs=4, max_context=512)
    host = roofkit.serve("llama-3.1-8b", "h100", batch=1, input_len=i,
                         output_len=2).decode_host.host_time
    per_step = 1 + k * acceptance  # tokens a step yields
    steps = math.ceil((o - 1) / per_step)
    # step s runs at the context of the tokens so far: i + 1 + s * per_step
    t = sum(verify.device_time(1, i + 1 + s * per_step, samples=k + 1) + host +
            k * draft.device_time(1, i + 1 + s * per_step) for s in range(steps))
    assert r.tpot["mean"] == pytest.approx(t / (o - 1), rel=1e-6)


def test_seeded_and_deterministic():
    kw = dict(rate=8.0, requests=200, input_len="uniform:100:900", output_len="normal:64:16",
              engine="sglang")
    a = simulate("llama-3.1-8b", "h100", seed=5, **kw).to_dict()
    b = simulate("llama-3.1-8b", "h100", seed=5, **kw).to_dict()
    c = simulate("llama-3.1-8b", "h100", seed=6, **kw).to_dict()
    assert a == b
    assert a["ttft_ms"] != c["ttft_ms"]


def test_goodput_counts_requests_within_the_slo():
    r = simulate("llama-3.1-8b", "h100", rate=4.0, requests=300, input_len=256,
                 output_len=64, slo="ttft_p90=10s,tpot_p90=1s")
    assert r.goodput == pytest.approx(r.requests_per_s, rel=1e-9)
    assert r.slo_met
    tight = simulate("llama-3.1-8b", "h100", rate=4.0, requests=300, input_len=256,
                     output_len=64, slo="tpot_p90=0.1ms")
    assert tight.goodput == 0.0 and tight.slo_met is False


def test_bad_input_is_a_clear_error():
    with pytest.raises(roofkit.RoofkitError, match="exactly one of"):
        simulate("llama-3.1-8b", "h100", rate=1.0, concurrency=2)
    with pytest.raises(roofkit.SpecError, match="ttft_p90=2s"):
        simulate("llama-3.1-8b", "h100", concurrency=1, slo="ttft<2")
    with pytest.raises(roofkit.UnknownNameError):
        simulate("llama-3.1-8b", "h100", concurrency=1, engine="vlm")
