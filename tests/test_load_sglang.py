"""SGLang's admission of requests that ignore EOS (the peak check) and its static memory
fraction, by hand."""

from __future__ import annotations

import attrs
import numpy as np
import pytest
from load_fakes import ConstantCosts

from roofkit.load.host import HostTable
from roofkit.load.requests import Stream
from roofkit.load.scheduler import EngineConfig, peak_fits, run
from roofkit.schema.engine import MemoryDefaults


def test_peak_fits_checks_every_finish_in_order_of_the_tokens_left():
    # two requests: (left 2, held 4) and (left 5, held 3), sorted by left.
    # i = 0: both decode for the next one's 5 steps: free - 5 * 2; i = 1: the first has
    # freed its 4, the last decodes its own 5: free + 4 - 5 * 1
    assert not peak_fits(10.0, [5, 2], [3, 4])  # 10 - 10 = 0 is not > 0
    assert peak_fits(11.0, [5, 2], [3, 4])  # 11 - 10 = 1 > 0 and 11 + 4 - 5 = 10 > 0
    # the second condition binds: free 11 with the last one holding little and long to go:
    # (left 1, held 0), (left 12, held 1): i = 0: 11 - 12 * 2 < 0
    assert not peak_fits(11.0, [1, 12], [0, 1])
    # a request with nothing left to generate takes no part: only (3, 1) is checked
    assert peak_fits(3.5, [0, 3], [100, 1])  # 3.5 - 3 = 0.5 > 0
    assert not peak_fits(3.0, [0, 3], [100, 1])
    # nothing left anywhere: fits while any token is free
    assert peak_fits(1.0, [], []) and not peak_fits(0.0, [], [])


def _run(admission, capacity):
    cfg = EngineConfig(max_num_seqs=16, max_num_batched_tokens=8192, chunked_prefill=True,
                       mixed_batches=False, policy="prefill-first", block_size=1,
                       admission=admission, graph_sizes=(), kv_capacity=capacity,
                       kv_token=1.0, state_seq=0.0)
    host = HostTable(eager=[0.0] * 17, graph=[0.0] * 17, measured=None, source="")
    stream = Stream(input_len=np.array([10, 10, 10]), output_len=np.array([5, 5, 5]),
                    arrival=np.zeros(3))
    return run(stream, cfg, ConstantCosts(), host)


def test_peak_admission_holds_back_a_request_the_cache_could_not_finish():
    # KV of 38 tokens; three requests of 10 prompt tokens and 5 output tokens at t = 0.
    # A: free 38 - 10 = 28, 28 - 5 > 0: admitted. B: free 38 - 10 - 10 = 18; A and B each
    # have 5 left: 18 - 5 * 2 = 8 > 0 and 18 + 10 - 5 = 23 > 0: admitted. C: free
    # 38 - 20 - 10 = 8, three with 5 left: 8 - 5 * 3 < 0: refused, and tried again only when
    # a sequence finishes. A and B: prefill [0, 30 ms] (first token), four decode steps to
    # 70 ms; then C: prefill [70, 100 ms], TTFT 100 ms, decodes to 140 ms. Nothing preempted.
    peak = _run("peak", 38.0)
    assert peak.first_token - peak.arrival == pytest.approx([0.030, 0.030, 0.100])
    assert peak.finish == pytest.approx([0.070, 0.070, 0.140])
    assert peak.preemptions == 0
    assert peak.step_kv.max() <= 38.0
    # grow admits C at once (30 of 38 tokens held), the three grow 3 tokens a step and the
    # third decode step needs 39: C is preempted and recomputed
    grow = _run("grow", 38.0)
    assert grow.first_token[2] - grow.arrival[2] == pytest.approx(0.030)
    assert grow.preemptions == 1
    # with room for the three at their peak (30 + 3 * 4 = 42 tokens) peak admits them all
    roomy = _run("peak", 46.0)
    assert roomy.first_token - roomy.arrival == pytest.approx([0.030, 0.030, 0.030])


def test_the_static_memory_fraction_goes_by_tp_band():
    m = MemoryDefaults(static_fraction={"1": 0.88, "2": 0.87, "4": 0.85, "8": 0.81,
                                        "16": 0.79})
    assert [m.fraction(tp) for tp in (1, 2, 3, 4, 7, 8, 15, 16, 64)] == \
        [0.88, 0.87, 0.87, 0.85, 0.85, 0.81, 0.81, 0.79, 0.79]
    assert MemoryDefaults().fraction(4) is None


def test_the_sglang_profiles_take_their_versions_memory_fraction(registry):
    new, old = registry.spec("engines", "sglang"), registry.spec("engines", "sglang-0.3")
    # server_args.py of v0.4.0: 0.81 at TP >= 8; of v0.3.0: 0.83; both 0.85 at TP 4
    assert (new.memory.fraction(8), old.memory.fraction(8)) == (0.81, 0.83)
    assert new.memory.fraction(4) == old.memory.fraction(4) == 0.85
    assert new.memory.fraction(1) == 0.88
    assert new.scheduler.admission == "peak" and old.scheduler.admission == "grow"


def test_the_kv_cache_is_the_memory_fraction_less_the_weights(registry):
    import importlib

    from roofkit.circuit import api as circuit
    from roofkit.load import requests
    from roofkit.load.fabric import fabric_of

    simulate = importlib.import_module("roofkit.load.simulate")
    w = registry.workload("llama-3.1-8b")
    d, fab = fabric_of(registry, "h100")
    st = requests.stream(requests=4, concurrency=None, rate=1.0, trace=None, input_len=128,
                         output_len=128, seed=0, think_time=None)
    kw = dict(tp=1, precision=None, kv_cache_dtype="bf16", basis="calibrated", stream=st,
              fabric=fab)
    weights = circuit.footprint(w, d, kv_cache_dtype="bf16", registry=registry, tp=1,
                                basis="calibrated").weights
    sgl = simulate.build_replica(registry, w, d, engine="sglang", **kw)
    vllm = simulate.build_replica(registry, w, d, engine="vllm", **kw)
    # the H100's runtime total, 85,045,477,376 B, x 0.88 (SGLang at TP 1) and x 0.9 (the
    # device spec's usable fraction); vllm (vllm-v1) also takes its profiling pass's peak at
    # 8192 tokens and 1024 sequences: 8192 x 4096 x 2 B + 1024 x 128256 x 16 B = 2,168,455,168 B
    assert sgl.cfg.kv_capacity == pytest.approx(85_045_477_376 * 0.88 - weights)
    assert vllm.cfg.kv_capacity == pytest.approx(85_045_477_376 * 0.9 - weights - 2_168_455_168)
    assert any("88% of each device's memory" in n for n in sgl.notes)


@pytest.mark.parametrize("fractions, key", [({"2": 0.9}, "memory.static_fraction"),
                                            ({"1": 1.5}, "memory.static_fraction.1"),
                                            ({"1": 0.9, "x": 0.8}, "memory.static_fraction.x")])
def test_a_bad_memory_fraction_is_a_clear_problem(registry, fractions, key):
    spec = registry.spec("engines", "sglang")
    bad = attrs.evolve(spec, memory=attrs.evolve(spec.memory, static_fraction=fractions))
    assert key in [k for k, _ in bad.problems()]


def test_the_request_pool_follows_the_kv_pool(registry):
    pool = registry.spec("engines", "sglang").scheduler.request_pool
    # model_runner.py of v0.4.0: min(max(int(K / L * 512), 2048), 4096) slots, and
    # tp_worker.py: at most K // 2 running. 1,032,000 KV tokens at a 131,072-token context:
    # int(4031.25) = 4031 slots; 200,000 tokens: int(781.25) lifts to the 2048 floor;
    # 2,000,000 tokens: 7812 is held at 4096; 3,000 tokens: the pool is 2048 but only
    # 3000 // 2 = 1500 may run
    assert pool.seqs(1_032_000, 131072) == 4031
    assert pool.seqs(200_000, 131072) == 2048
    assert pool.seqs(2_000_000, 131072) == 4096
    assert pool.seqs(3_000, 131072) == 1500
    assert registry.spec("engines", "sglang-0.3").scheduler.request_pool.largest == 5120


def test_a_simulation_caps_its_batch_at_the_request_pool():
    from roofkit.load.simulate import simulate

    # llama-3.1-8b on one H100 under sglang: 80 GB x 0.88 less 16 GB of weights over
    # 128 KiB a token is about 412k KV tokens, int(412k / 131072 * 512) = about 1609 slots,
    # lifted to the 2048 floor
    r = simulate("llama-3.1-8b", "h100", engine="sglang", concurrency=8, requests=8,
                 input_len=64, output_len=16)
    note = next(n for n in r.notes if "request pool" in n)
    assert "at most 2048 sequences" in note
    fixed = simulate("llama-3.1-8b", "h100", engine="sglang", concurrency=8, requests=8,
                     input_len=64, output_len=16, max_num_seqs=4)
    assert not any("request pool" in n for n in fixed.notes) and fixed.max_batch <= 4


def test_peak_admission_refuses_a_cache_that_cannot_hold_one_whole_request():
    from roofkit.errors import OOMError

    # 10 prompt + 5 output tokens need 15 at the peak: 14 tokens of KV hold the prompt
    # (grow would start it) but never the whole request
    with pytest.raises(OOMError, match="not one request of 10 \\+ 5 tokens fits"):
        _run("peak", 14.0)
    # grow runs the three one after the other: 10 held, 11..14 as the four decode steps
    # write (the last token's KV is never written), nothing preempted
    grow = _run("grow", 14.0)
    assert np.all(np.isfinite(grow.finish)) and grow.preemptions == 0
    assert grow.step_kv.max() <= 14.0
