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


def test_think_time_follows_the_interactive_response_time_law():
    # C clients, each thinking Z after its last token: X = C / (R + Z), R the mean E2E. One
    # request is in flight per client or thinking, so over the run's span (first send to
    # last token) every client alternates R and Z (its first request waits Z too)
    c, z = 4, 0.5
    r = simulate("llama-3.1-8b", "h100", concurrency=c, requests=200, input_len=256,
                 output_len=64, engine="vllm", think_time=z)
    x = r.requests_per_s
    assert x == pytest.approx(c / (r.e2e["mean"] + z), rel=0.03)
    plain = simulate("llama-3.1-8b", "h100", concurrency=c, requests=200, input_len=256,
                     output_len=64, engine="vllm")
    assert plain.requests_per_s == pytest.approx(c / plain.e2e["mean"], rel=0.03)
    assert x < plain.requests_per_s
    # think times drawn per request break the lock step of fixed-length clients
    jit = simulate("llama-3.1-8b", "h100", concurrency=c, requests=200, input_len=256,
                   output_len=64, engine="vllm", think_time="exp:50ms", seed=1)
    assert not any("lock step" in n for n in jit.notes)
    assert any("lock step" in n for n in plain.notes)
    assert "think time exp:50ms" in jit.pattern


@pytest.mark.parametrize("bad", ["-1", "abc", "exp:", "uniform:2:1", "exp:nan", True, "1e308",
                                 "exp:1e308", "uniform:1:1e300"])
def test_think_time_refuses_bad_values(bad):
    with pytest.raises(roofkit.errors.RoofkitError, match="think time"):
        simulate("llama-3.1-8b", "h100", concurrency=2, requests=4, think_time=bad)


@pytest.mark.parametrize("kw, key", [
    (dict(disagg="1:1,link=-5GB/s"), "link"), (dict(disagg="1:1,ptp=0"), "ptp"),
    (dict(disagg="1:1,dtp=x"), "dtp"), (dict(spec_decode="k=x,acceptance=0.5"), "k="),
    (dict(spec_decode="k=100000000,acceptance=0.5"), "k="),
    (dict(spec_decode="k=2,acceptance=a"), "acceptance"),
    (dict(max_num_seqs=0), "max_num_seqs"), (dict(max_batched_tokens=-1), "max_batched"),
])
def test_bad_layout_options_name_their_key(kw, key):
    with pytest.raises(roofkit.errors.SpecError, match=key):
        simulate("llama-3.1-8b", "h100", concurrency=2, requests=4, **kw)


def test_think_time_needs_a_closed_loop():
    with pytest.raises(roofkit.errors.RoofkitError, match="closed loop"):
        simulate("llama-3.1-8b", "h100", rate=2.0, requests=4, think_time=0.5)


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


def test_pd_transfer_across_nodes_by_hand():
    # a TP8 prefill node and a TP8 decode node of 16xh100: each GPU sends its KV shard (one
    # of the 8 KV heads) over its own 400 Gb/s NIC, 5 us + bytes / 50 GB/s
    i = 1000
    kw = dict(concurrency=1, requests=1, input_len=i, output_len=2, engine=None, tp=8)
    agg = simulate("llama-3.1-8b", "h100", **kw)
    dis = simulate("llama-3.1-8b", "16xh100", disagg="1:1", **kw)
    shard_per_token = 32 * 1 * 128 * 2 * 2
    t_kv = 5e-6 + i * shard_per_token / 50e9
    assert dis.ttft["mean"] - agg.ttft["mean"] == pytest.approx(t_kv, rel=1e-6)
    assert dis.devices == 16 and dis.layout["cluster"] == "16xh100-sxm"


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


def test_result_convention():
    r = simulate("llama-3.1-8b", "h100", concurrency=2, requests=4, input_len=64,
                 output_len=8)
    d = r.to_dict()
    for key in ("ttft_ms", "tpot_ms", "itl_ms", "e2e_ms"):
        assert set(d[key]) == {"mean", "p50", "p90", "p99"}
    assert d["output_tokens_per_s"] > 0 and d["requests_per_s"] > 0 and d["basis"]
    tl = d["timeline"]
    assert len(tl["time_s"]) == len(tl["batch"]) == len(tl["kv_fraction"]) <= 200
    assert max(tl["batch"]) <= 2 and all(0 <= x <= 1 for x in tl["kv_fraction"])
    assert r.quantity("ttft", "p90").to("ms").magnitude == pytest.approx(d["ttft_ms"]["p90"])
    assert "<table" in r._repr_html_() and len(r.to_pandas()) == 4


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


def test_pipeline_stages_add_their_activation_sends_by_hand():
    i, o = 400, 10
    est = roofkit.serve("llama-3.1-70b", "h100", batch=1, input_len=i, output_len=o, tp=2)
    r = simulate("llama-3.1-70b", "h100", concurrency=1, requests=1, input_len=i,
                 output_len=o, tp=2, pp=2, engine=None)
    link = roofkit.default_registry().device("h100").interconnect
    hidden = 8192  # llama-3.1-70b
    hop = [link.latency + rows * hidden * 2 / link.bandwidth for rows in [i] + [1] * (o - 1)]
    assert r.e2e["mean"] == pytest.approx(est.e2e + sum(hop), rel=1e-6)
    assert r.devices == 4 and r.layout["pp"] == 2


@pytest.mark.parametrize("workload, kw, reason", [
    ("llama-3.1-8b", dict(pp=3), "pp 3 does not divide the 32 layers"),
    ("mixtral-8x7b", dict(ep=3), "ep 3 does not divide the 8 experts"),
    ("mixtral-8x7b", dict(ep=16), "ep 16 does not divide the 8 experts"),
])
def test_invalid_serving_layouts_are_refused_as_serve_refuses_them(workload, kw, reason):
    with pytest.raises(roofkit.SpecError, match=reason):
        simulate(workload, "dgx-h100", concurrency=1, requests=1, **kw)


def test_pipeline_beyond_one_node_is_refused():
    with pytest.raises(roofkit.SpecError, match="multi-node pipelines"):
        simulate("llama-3.1-70b", "h100", concurrency=1, requests=1, tp=8, pp=2)


def test_expert_parallelism_by_hand():
    # one request on one of 2 ranks (ranks taken as evenly loaded): a decode step runs the
    # routed experts for 2 tokens split over 2 ranks, plus two all-to-alls a MoE layer
    i = 300
    w = "mixtral-8x7b"
    est = roofkit.serve(w, "h100", batch=1, input_len=i, output_len=2)
    r = simulate(w, "h100", concurrency=1, requests=1, input_len=i, output_len=2, ep=2,
                 engine=None)

    def experts(batch):
        step = roofkit.decode(w, "h100", batch=batch, context=i + 1, basis="calibrated")
        return sum(float(x.time) for x in step.rows if x.op.startswith("expert_"))

    link = roofkit.default_registry().device("h100").interconnect
    # mixtral-8x7b: 32 MoE layers, top_k 2, hidden 4096, bf16 activations, half sent away
    a2a = 32 * 2 * (link.latency + 1 * 2 * 4096 * 2 * (1 / 2) / link.bandwidth)
    expected = est.itl_steps[0] - experts(1) + experts(2) / 2 + a2a
    assert r.tpot["mean"] == pytest.approx(expected, rel=1e-6)
    assert r.devices == 2
    with pytest.raises(roofkit.SpecError, match="no routed experts"):
        simulate("llama-3.1-8b", "h100", concurrency=1, requests=1, ep=2)


def test_a_pipeline_across_two_nodes_crosses_the_network_by_hand():
    # 16xh100: two 8-GPU NVLink domains joined by a 400 Gb/s NIC per GPU (the ad hoc
    # cluster's default network, 50 GB/s and 5 us); tp 8 x pp 2 puts the stage boundary on
    # the network
    i, o = 400, 6
    est = roofkit.serve("llama-3.1-70b", "h100", batch=1, input_len=i, output_len=o, tp=8)
    r = simulate("llama-3.1-70b", "16xh100", concurrency=1, requests=1, input_len=i,
                 output_len=o, tp=8, pp=2, engine=None)
    hop = [5e-6 + rows * 8192 * 2 / 50e9 for rows in [i] + [1] * (o - 1)]
    assert r.e2e["mean"] == pytest.approx(est.e2e + sum(hop), rel=1e-6)
    assert r.devices == 16 and r.layout["cluster"] == "16xh100-sxm"


def test_mtp_speculation_at_acceptance_0_by_hand():
    from roofkit.circuit import api

    k, i, o, w, d = 2, 128, 9, "deepseek-v3", "h200"
    r = simulate(w, d, tp=8, concurrency=1, requests=1, input_len=i, output_len=o,
                 engine=None, spec_decode=SpecDecode(k=k, acceptance=0.0, draft="mtp"))
    reg = roofkit.default_registry()
    mtp = api._plan(reg, w, d, "decode", None, "bf16", None, {"basis": "calibrated"}, 8,
                    sections=("draft",))[0]
    verify = StepCosts(w, d, tp=8, max_rows=64, max_seqs=2, max_context=256, verify=k + 1)
    host = roofkit.serve(w, d, batch=1, input_len=i, output_len=2, tp=8).decode_host.host_time
    t = 0.0
    for s in range(o - 1):  # acceptance 0: one token a step, each step at context i + 1 + s
        c = i + 1 + s
        t += verify.device_time(1, c, samples=k + 1) + host
        t += k * sum(float(x[3]) for x in mtp.run(1.0, float(c), 1.0))
    assert r.tpot["mean"] == pytest.approx(t / (o - 1), rel=1e-4)


def test_a_trace_and_a_length_histogram(tmp_path, capsys):
    import json

    from roofkit.testing import run_cli

    trace = tmp_path / "t.jsonl"
    trace.write_text("\n".join(json.dumps(r) for r in (
        {"arrival": 0.0, "input_len": 100, "output_len": 5},
        {"arrival": 0.5, "input_len": 300, "output_len": 3},
        {"timestamp": 0.2, "input_tokens": 50, "output_tokens": 4})), encoding="utf-8")
    r = simulate("llama-3.1-8b", "h100", trace=trace)
    assert r.requests == 3 and r.input_tokens == 450 and r.output_tokens == 12
    assert sorted(r.per_request["arrival_s"].tolist()) == [0.0, 0.2, 0.5]
    hist = tmp_path / "h.csv"
    hist.write_text("length,weight\n64,3\n256,1\n", encoding="utf-8")
    code, out, _ = run_cli(capsys, "simulate", "llama-3.1-8b", "h100", "--rate", "5",
                           "--requests", "40", "--input-len", f"hist:{hist}", "--output-len",
                           "uniform:4:8", "--json")
    assert code == 0
    d = json.loads(out)
    assert 64 * 40 <= d["input_tokens_per_s"] * d["duration_s"] <= 256 * 40
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"arrival": 0}\n', encoding="utf-8")
    with pytest.raises(roofkit.SpecError, match=r"bad\.jsonl:1"):
        simulate("llama-3.1-8b", "h100", trace=bad)


def test_llama_405b_over_two_dgx_h100_nodes_tp8_pp2_by_hand():
    # 810 GB of bf16 weights: TP8 within each node's NVLink, two pipeline stages across the
    # dgx-h100 cluster's 400 Gb/s NICs (5 us, 50 GB/s), one boundary per step
    i, o = 256, 4
    est = roofkit.serve("llama-3.1-405b", "h100", batch=1, input_len=i, output_len=o, tp=8,
                        precision="bf16")
    r = simulate("llama-3.1-405b", "dgx-h100", concurrency=1, requests=1, input_len=i,
                 output_len=o, tp=8, pp=2, precision="bf16", engine=None)
    hop = [5e-6 + rows * 16384 * 2 / 50e9 for rows in [i] + [1] * (o - 1)]
    assert r.e2e["mean"] == pytest.approx(est.e2e + sum(hop), rel=1e-6)
    assert r.devices == 16 and r.layout == {"tp": 8, "pp": 2, "dp": 1, "ep": 1,
                                            "cluster": "dgx-h100"}


def test_deepseek_v3_fp8_ep16_across_two_nodes_by_hand():
    # EP16 with attention DP over two 8-GPU domains: of a rank's all-to-all bytes 7/15 stay
    # on NVLink (450 GB/s) and 8/15 cross the NIC (50 GB/s), the two at once; the slower
    # sets the time, plus the network's 5 us
    i = 200
    w = "deepseek-v3"
    est = roofkit.serve(w, "h100", batch=1, input_len=i, output_len=2, precision="fp8")
    r = simulate(w, "dgx-h100", concurrency=1, requests=1, input_len=i, output_len=2, ep=16,
                 precision="fp8", engine=None)

    def experts(batch):
        step = roofkit.decode(w, "h100", batch=batch, context=i + 1, basis="calibrated",
                              precision="fp8")
        return sum(float(x.time) for x in step.rows if x.op.startswith("expert_"))

    per_byte = max((7 / 15) / 450e9, (8 / 15) / 50e9)
    # 58 MoE layers (3 of 61 dense), top-8 routing, hidden 7168, bf16 activations
    a2a = 58 * 2 * (5e-6 + 1 * 8 * 7168 * 2 * (15 / 16) * per_byte)
    expected = est.itl_steps[0] - experts(1) + experts(16) / 16 + a2a
    assert r.tpot["mean"] == pytest.approx(expected, rel=1e-6)
    assert r.devices == 16 and r.layout["cluster"] == "dgx-h100"


def test_a_prefix_cache_hit_skips_whole_blocks_of_prefill_by_hand():
    # hit rate 0.4 of a 1000-token prompt: int(400) // 16 * 16 = 400 tokens cached (25
    # blocks of 16), so the prefill step computes the last 600 over the 400 before them
    kw = dict(concurrency=1, requests=1, input_len=1000, output_len=2, engine=None)
    cold = simulate("llama-3.1-8b", "h100", **kw)
    warm = simulate("llama-3.1-8b", "h100", prefix_hit=0.4, **kw)
    costs = StepCosts("llama-3.1-8b", roofkit.default_registry().device("h100"),
                      max_rows=8192, max_seqs=256, max_context=1010)
    saved = (costs.device_time(0, 0.0, [(1000, 0)], samples=1)
             - costs.device_time(0, 0.0, [(600, 400)], samples=1))
    assert cold.ttft["mean"] - warm.ttft["mean"] == pytest.approx(saved, rel=1e-6)
    # the cached blocks still hold KV: decode is unchanged
    assert warm.tpot["mean"] == pytest.approx(cold.tpot["mean"], rel=1e-9)
    assert any("prefix cache: 40%" in n for n in warm.notes)


def test_an_ad_hoc_cluster_of_partial_nodes_says_why():
    # 12 H100s are one and a half nodes of 8: refused as a cluster, not "unknown device"
    with pytest.raises(roofkit.SpecError, match="whole nodes of 8"):
        simulate("llama-3.1-8b", "12xh100", concurrency=1, requests=1)
    with pytest.raises(roofkit.SpecError, match="whole nodes of 8"):
        roofkit.plan("llama-3.1-8b", ["12xh100"], input_len=128, output_len=16,
                     slo="ttft_p90=1s", verify=0)


def test_a_closed_loop_in_lock_step_says_so():
    # four 64-token prompts fit one step: they finish in one step and return together (the
    # engine alone: a serial API server would hand them over one after another)
    kw = dict(requests=12, input_len=64, output_len=8, engine="vllm", frontend=False)
    r = simulate("llama-3.1-8b", "h100", concurrency=4, **kw)
    assert any("lock step: up to 4 requests" in n for n in r.notes)
    # every round is one step of the four prompts: the first round's TTFT is the later ones'
    t = r.per_request["ttft_s"]
    assert t[:4] == pytest.approx(t[4:8]) and t[4:8] == pytest.approx(t[8:])
    ms = f"{t.mean() * 1e3:.0f} ms"
    assert any(f"TTFT mean {ms} in the first round" in n and f"{ms} after it" in n
               for n in r.notes)
    # a Poisson stream has no rounds
    p = simulate("llama-3.1-8b", "h100", rate=2.0, **kw)
    assert not any("lock step" in n or "first round" in n for n in p.notes)


def test_a_closed_loop_successor_misses_the_step_formed_as_its_predecessor_ends():
    # five 5000-token prompts at t = 0 with an 8192-token budget and no chunking: one prompt
    # a step, so the first round's TTFTs are 1, 2, 3, 4 and 5 prefills P (mean 3 P)
    r = simulate("llama-3.1-8b", "h100", concurrency=5, requests=40, input_len=5000,
                 output_len=50, engine="tensorrt-llm")
    t = r.per_request["ttft_s"]
    p = t[0]
    assert t[:5] == pytest.approx(p * np.arange(1, 6), rel=0.02)
    # after it a finished request's successor cannot join the step the engine forms as its
    # predecessor ends (the client has not had the last token yet): the first of a round
    # waits that decode step and its prefill, each next one arrives during the previous
    # one's prefill step and waits it and its own, 2 P; none gets a prefill at once (P)
    later = t[5:].reshape(-1, 5)
    assert later[:, 0] == pytest.approx(later[0, 0]) and p * 1.02 < later[0, 0] < p * 1.2
    assert later[:, 1:] == pytest.approx(np.full((7, 4), 2 * p), rel=0.02)
    note = next(n for n in r.notes if "first round's prompts" in n)
    assert f"wait {t[:5].mean() * 1e3:.0f} ms mean TTFT" in note
    assert f"the later ones {t[5:].mean() * 1e3:.0f} ms" in note
    assert not any("lock step" in n for n in r.notes)
    # one client: the engine is idle when its request ends and takes the next one at once
    one = simulate("llama-3.1-8b", "h100", concurrency=1, requests=4, input_len=5000,
                   output_len=50, engine="tensorrt-llm").per_request["ttft_s"]
    assert one == pytest.approx(np.full(4, p), rel=0.01)
    # think times drawn per request set the phases themselves: no note
    j = simulate("llama-3.1-8b", "h100", concurrency=5, requests=25, input_len=5000,
                 output_len=50, engine="tensorrt-llm", think_time="exp:1s", seed=2)
    assert not any("first round's prompts" in n for n in j.notes)


def test_rounds_ttft_splits_each_replicas_first_round_from_the_rest():
    from types import SimpleNamespace

    from roofkit.load.simulate import rounds_ttft

    # replica 1: two clients, TTFTs 0.1 and 0.2 s at t = 0, then 0.1 and 0.3 s; replica 2:
    # one client, 0.4 s, then 0.1 s: first round (0.1 + 0.2 + 0.4) / 3, later (0.1 + 0.3 +
    # 0.1) / 3
    a = SimpleNamespace(arrival=np.array([0.0, 0.0, 1.0, 1.0]),
                        first_token=np.array([0.1, 0.2, 1.1, 1.3]))
    b = SimpleNamespace(arrival=np.array([0.0, 2.0]), first_token=np.array([0.4, 2.1]))
    cold, later = rounds_ttft([a, b], [2, 1])
    assert cold == pytest.approx(0.7 / 3) and later == pytest.approx(0.5 / 3)
    # a run of one round (four clients, TTFTs 0.1, 0.2, 0.1, 0.3 s) has no later requests
    cold, later = rounds_ttft([a], [4])
    assert cold == pytest.approx(0.7 / 4) and math.isnan(later)
    with pytest.raises(ValueError):  # a client count per replica
        rounds_ttft([a, b], [2])
