"""The SLO planner: ranked, SLO-meeting, Pareto-marked, refusals counted, executor-equal."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import pytest

import roofkit
from roofkit.testing import run_cli

KW = dict(input_len=512, output_len=128, slo="ttft_p90=1s,tpot_p90=8ms", max_devices=2,
          concurrencies=(1, 8, 32, 128))


@pytest.fixture(scope="module")
def result():
    return roofkit.plan("llama-3.1-8b", ["h100"], verify=1, **KW)


def test_rows_meet_the_slo_best_first(result):
    rows = result.rows
    assert rows
    per_dev = [r["output_tokens_per_s_per_device"] for r in rows]
    assert per_dev == sorted(per_dev, reverse=True)
    assert all(r["ttft_ms"] <= 1000 and r["tpot_ms"] <= 8 for r in rows)
    assert {r["mode"] for r in rows} == {"aggregated", "disaggregated"}


def test_every_configuration_is_ranked_or_refused_with_a_reason(result):
    assert result.evaluated == len(result.rows) + sum(result.refused.values())
    assert result.evaluated >= 30
    assert any("above the SLO" in k for k in result.refused)


def test_the_pareto_front_is_not_dominated(result):
    front = result.pareto
    assert front
    for p in front:
        assert not any(r["output_tokens_per_s_per_device"] > p["output_tokens_per_s_per_device"]
                       and r["output_tokens_per_s_per_user"] > p["output_tokens_per_s_per_user"]
                       for r in result.rows if r.get("verified") != "missed")


def test_the_best_is_verified_by_the_simulator(result):
    best, sim = result.best, result.verified[0]["simulated"]
    assert result.verified[0]["layout"] == best["layout"]
    # the steady-state screening and the step simulation agree on throughput
    assert sim["output_tokens_per_s_per_device"] == pytest.approx(
        best["output_tokens_per_s_per_device"], rel=0.15)


def test_an_executor_gives_the_same_ranking(result):
    with ThreadPoolExecutor(2) as ex:
        again = roofkit.plan("llama-3.1-8b", ["h100"], verify=0, executor=ex, **KW)
    def screened(rows):  # the simulated verdict is the verification's, not the screening's
        return [{k: v for k, v in r.items() if k != "verified"} for r in rows]

    assert screened(again.rows) == screened(result.rows)


def test_plan_cli_json(capsys):
    code, out, _ = run_cli(capsys, "plan", "llama-3.1-8b", "--devices", "h100",
                           "--max-devices", "2", "--input-len", "256", "--output-len", "64",
                           "--slo", "ttft_p90=2s,tpot_p90=50ms", "--verify", "0", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["meeting_slo"] > 0 and data["configurations"][0]["device"] == "h100-sxm"


def test_plan_refuses_a_missing_slo():
    with pytest.raises(roofkit.RoofkitError, match="needs an SLO"):
        roofkit.plan("llama-3.1-8b", ["h100"], input_len=128, output_len=16, slo="")


def test_a_moe_gets_expert_parallel_layouts():
    r = roofkit.plan("mixtral-8x7b", ["h100"], input_len=256, output_len=64,
                     slo="ttft_p90=5s,tpot_p90=200ms", max_devices=2, concurrencies=(4, 16),
                     precisions=["fp8"], verify=0, disagg=False)
    ep = [x for x in r.rows if x.get("ep") == 2]
    assert ep and all(x["devices"] == 2 and x["layout"] == "EP2 attention-DP2" for x in ep)


def test_verification_runs_the_steady_state_and_demotes_a_miss(result):
    v = result.verified[0]
    sim = v["simulated"]
    # arrivals at the screened rate: tokens/s/device x devices / output length
    best = next(r for r in result.rows if r["layout"] == v["layout"]
                and r["concurrency"] == v["concurrency"] and r["device"] == v["device"]
                and r["precision"] == v["precision"])
    assert sim["requests_rate_per_s"] == pytest.approx(
        best["output_tokens_per_s_per_device"] * best["devices"] / KW["output_len"])
    total = best["concurrency"] * best.get("decode_workers", 1)
    n = max(5 * total, 64)
    cut = min(total, (n - 1) // 3)
    assert sim["warmup_requests"] == cut and sim["kept_requests"] == n - 2 * cut
    assert best["verified"] == ("met" if sim["slo_met"] else "missed")
    # the ranking puts every configuration the simulation says misses the SLO last
    flags = [r.get("verified") == "missed" for r in result.rows]
    assert flags == sorted(flags)
    assert any("warm-up" in n for n in result.notes)


def test_a_configuration_the_simulation_misses_is_demoted(monkeypatch):
    import importlib

    plan_mod = importlib.import_module("roofkit.load.plan")

    real = plan_mod._verify
    calls = []

    def first_misses(*args):
        v = real(*args)
        calls.append(v["layout"])
        if len(calls) == 1:
            v["simulated"]["slo_met"] = False
        return v

    monkeypatch.setattr(plan_mod, "_verify", first_misses)
    r = roofkit.plan("llama-3.1-8b", ["h100"], verify=1, **KW)
    screened_best = max(r.rows, key=lambda x: x["output_tokens_per_s_per_device"])
    assert screened_best["verified"] == "missed" and not screened_best["pareto"]
    assert r.rows[-1] is screened_best
    # the next one was verified in its place, and now leads
    assert len(calls) == 2 and r.best["verified"] == "met"
    assert any("1 configuration(s)" in n for n in r.notes)


def test_plan_plot_marks_the_pareto_front(result, tmp_path):
    pytest.importorskip("matplotlib")
    import xml.etree.ElementTree as ET

    from roofkit import plot

    text = plot.save(result.plot(), tmp_path / "plan.svg").read_text()
    root = ET.fromstring(text)
    svg = "{http://www.w3.org/2000/svg}"
    front = next(e for e in root.iter() if e.get("id") == "pareto")
    assert len(list(front.iter(f"{svg}use"))) == len(result.pareto) >= 1
    groups = {e.get("id") for e in root.iter() if (e.get("id") or "").startswith("group-")}
    assert groups == {"group-h100-sxm_aggregated", "group-h100-sxm_disaggregated"}
    assert "output tokens/s per device" in text and "output tokens/s per user" in text


def test_plan_cli_plot_writes_the_file(capsys, tmp_path):
    pytest.importorskip("matplotlib")
    out_file = tmp_path / "plan.png"
    code, out, _ = run_cli(capsys, "plan", "llama-3.1-8b", "--devices", "h100",
                           "--max-devices", "1", "--input-len", "256", "--output-len", "64",
                           "--slo", "ttft_p90=2s,tpot_p90=50ms", "--verify", "0",
                           "--plot", str(out_file))
    assert code == 0 and f"wrote {out_file}" in out
    assert out_file.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    code, _, err = run_cli(capsys, "plan", "llama-3.1-8b", "--devices", "h100",
                           "--input-len", "256", "--output-len", "64", "--slo",
                           "ttft_p90=2s", "--plot", str(tmp_path / "plan.gif"))
    assert code == 1 and ".png, .svg or .pdf" in err


def test_a_cluster_plan_pipelines_across_nodes():
    # Llama-3.1-405B in bf16 (810 GB of weights) does not fit one node of 8 H100s at TP8;
    # on the dgx-h100 cluster TP8 x PP2 over two nodes holds half the layers a device
    r = roofkit.plan("llama-3.1-405b", ["dgx-h100"], input_len=1024, output_len=128,
                     slo="ttft_p90=5s,tpot_p90=200ms", max_devices=16, concurrencies=(8, 32),
                     precisions=["bf16"], verify=1, disagg=False)
    assert r.rows and not any(x["layout"] == "TP8" for x in r.rows)
    pp2 = [x for x in r.rows if x["layout"] == "TP8 PP2"]
    assert pp2 and all(x["devices"] == 16 and x["cluster"] == "dgx-h100" and x["pp"] == 2
                       for x in pp2)
    assert r.refused["weights do not fit"] >= 2  # TP8 alone, at both concurrencies
    assert r.refused["tp x pp above max devices 16"] > 0
    assert r.verified and r.verified[0]["cluster"] == "dgx-h100"
    assert any("across nodes on dgx-h100" in n for n in r.notes)


def test_pipeline_screening_adds_the_stage_sends_by_hand():
    from roofkit.load.fabric import fabric_of
    from roofkit.load.plan import layout_costs

    reg = roofkit.build_registry(entry_points=False)
    w = reg.workload("llama-3.1-8b")
    d, fab = fabric_of(reg, "16xh100")
    C = (1, 8, 64)
    args = (reg, w, d, "bf16", 8, 512, 128, C, "vllm", "bf16", "calibrated")
    one = layout_costs(*args, fab=fab)
    two = layout_costs(*args, pp=2, fab=fab)
    # TP8 fills a node, so the one stage boundary crosses the default network:
    # 5 us + rows * hidden * 2 B / 50 GB/s per step
    for i, c in enumerate(C):
        assert two.t_dec[i] - one.t_dec[i] == pytest.approx(5e-6 + c * 4096 * 2 / 50e9,
                                                            rel=1e-6)
        # the prompt joining a step adds its 512 rows' sends, not a second latency
        assert two.x[i] - one.x[i] == pytest.approx(512 * 4096 * 2 / 50e9, rel=1e-6)


def test_a_device_beyond_one_node_is_planned_on_an_ad_hoc_cluster():
    r = roofkit.plan("mixtral-8x7b", ["h100"], input_len=256, output_len=64,
                     slo="ttft_p90=5s,tpot_p90=200ms", max_devices=16, concurrencies=(16,),
                     precisions=["fp8"], verify=0, disagg=False)
    assert {x["cluster"] for x in r.rows} == {"16xh100-sxm"}
    assert any(x.get("ep") == 8 for x in r.rows)
    assert r.refused["ep does not divide the experts"] == 1  # EP16 over 8 experts
    assert any(x.get("pp") == 2 and x["devices"] == 16 for x in r.rows)


def test_a_trace_sets_the_lengths_and_feeds_the_verification(tmp_path):
    trace = tmp_path / "t.jsonl"
    trace.write_text("".join(json.dumps({"arrival": 0.1 * i, "input_len": 400 + 200 * (i % 2),
                                         "output_len": 100 + 56 * (i % 2)}) + "\n"
                             for i in range(20)))
    r = roofkit.plan("llama-3.1-8b", ["h100"], slo="ttft_p90=2s,tpot_p90=50ms", trace=trace,
                     max_devices=1, concurrencies=(8,), verify=1, disagg=False)
    assert (r.input_len, r.output_len) == (500, 128)  # the trace's means
    assert r.verified and any("length pairs" in n for n in r.notes)


def test_plan_needs_lengths_or_a_trace():
    with pytest.raises(roofkit.RoofkitError, match="input_len and output_len"):
        roofkit.plan("llama-3.1-8b", ["h100"], slo="ttft_p90=1s")


def test_a_disaggregated_ttft_waits_for_the_decode_step(result):
    # TTFT = t_pre + t_kv + t_dec(C) and TPOT = t_dec(C): the first token streams at the
    # decode worker's step boundary, so TTFT - TPOT = t_pre + t_kv, the same for every
    # decode layout and concurrency behind one prefill pool (one node: one KV link), while
    # TPOT itself grows with the concurrency
    by_pool = {}
    for r in result.rows:
        if r["mode"] == "disaggregated":
            key = (r["precision"], r["prefill_workers"], r["prefill_tp"])
            by_pool.setdefault(key, []).append(r)
    spans = [rows for rows in by_pool.values() if len({r["tpot_ms"] for r in rows}) > 1]
    assert spans
    for rows in spans:
        gap = [r["ttft_ms"] - r["tpot_ms"] for r in rows]
        assert max(gap) - min(gap) == pytest.approx(0.0, abs=1e-9)
        assert min(gap) > 0


def test_screening_takes_vllm_v1_s_profiling_peak_from_the_kv_cache():
    import numpy as np

    from roofkit.circuit import api as circuit
    from roofkit.load.fabric import fabric_of
    from roofkit.load.plan import layout_costs
    from roofkit.load.simulate import profile_peak

    reg = roofkit.build_registry(entry_points=False)
    w = reg.workload("llama-3.1-8b")
    d, fab = fabric_of(reg, "h100")
    C = tuple(range(1, 4097))
    lay = layout_costs(reg, w, d, "bf16", 1, 4096, 1024, C, "vllm", "bf16", "calibrated",
                       fab=fab)
    fp = circuit.footprint(w, d, kv_cache_dtype="bf16", registry=reg, tp=1,
                           basis="calibrated")
    spec = reg.spec("engines", "vllm-v1")
    seqs, toks = spec.limits(d)
    peak = profile_peak(w, toks, seqs)
    assert peak > 1e9  # 8192 x 4096 x 2 B + 1024 x 128256 x 16 B = 2.17 GB
    # grow admission holds the prompt and half the output on average
    per = fp.kv_per_token * (4096 + 1024 / 2) + fp.state_per_seq
    cap = d.memory.capacity * d.memory.usable_fraction - fp.weights - peak
    assert int(np.count_nonzero(lay.kv_ok)) == int(cap // per)
