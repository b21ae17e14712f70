"""An overlapped host forms each step one step ahead: arrivals join a step later, by hand."""

from __future__ import annotations

import numpy as np
import pytest
from load_fakes import ConstantCosts

from roofkit.load.host import HostTable
from roofkit.load.requests import Stream
from roofkit.load.scheduler import EngineConfig, run


def _first_tokens(overlap, dense, arrivals, outputs):
    cfg = EngineConfig(max_num_seqs=16, max_num_batched_tokens=8192, chunked_prefill=True,
                       mixed_batches=False, policy="prefill-first", block_size=1,
                       admission="grow", graph_sizes=(), kv_capacity=1e12, kv_token=1.0,
                       state_seq=0.0)
    host = HostTable(eager=[0.0] * 17, graph=[0.0] * 17, measured=None, source="",
                     overlap=overlap)
    stream = Stream(input_len=np.array([100] * len(arrivals)), output_len=np.array(outputs),
                    arrival=np.array(arrivals, dtype=float))
    trace = run(stream, cfg, ConstantCosts(dense), host)
    return trace.first_token - trace.arrival


@pytest.mark.parametrize("dense", [0, 16])  # step by step, and runs of decode steps at once
def test_an_arrival_during_a_decode_step_waits_one_step_more_when_overlapped(dense):
    # A arrives at 0: prefill [0, 30 ms], then decode steps [30, 40], [40, 50], [50, 60] ...
    # B arrives at 45 ms, inside the step [40, 50].
    # serial host: B is seen when that step ends, prefill [50, 80]: TTFT 80 - 45 = 35 ms.
    # overlapped host: the step [50, 60] was formed at 40 ms, before B; B's prefill is the
    # next step, [60, 90]: TTFT 45 ms, one decode step more. C arrives at 1 s to an idle
    # engine and is prefilled at once either way: TTFT 30 ms.
    arrivals, outputs = [0.0, 0.045, 1.0], [11, 2, 2]
    serial = _first_tokens(False, dense, arrivals, outputs)
    overlapped = _first_tokens(True, dense, arrivals, outputs)
    assert serial == pytest.approx([0.030, 0.035, 0.030])
    assert overlapped == pytest.approx([0.030, 0.045, 0.030])


def _decode_pool(overlap, arrivals, outputs):
    cfg = EngineConfig(max_num_seqs=16, max_num_batched_tokens=8192, chunked_prefill=True,
                       mixed_batches=False, policy="prefill-first", block_size=1,
                       admission="grow", graph_sizes=(), kv_capacity=1e12, kv_token=1.0,
                       state_seq=0.0, decode_only=True)
    host = HostTable(eager=[0.0] * 17, graph=[0.0] * 17, measured=None, source="",
                     overlap=overlap)
    stream = Stream(input_len=np.array([100] * len(arrivals)), output_len=np.array(outputs),
                    arrival=np.array(arrivals, dtype=float))
    return run(stream, cfg, ConstantCosts(16), host)


@pytest.mark.parametrize("overlap", [False, True])
def test_a_decode_pool_streams_the_first_token_at_the_next_step_boundary(overlap):
    # A decode pool (prompts prefilled elsewhere): A's KV lands at 0 and it decodes in steps
    # of 10 ms, [0, 10], [10, 20], [20, 30], [30, 40] ... B's KV lands at 25 ms, inside the
    # step [20, 30]. The decode server takes B in at that step's end and streams B's first
    # token (sampled by the prefill pool) then, at 30 ms: 5 ms after its KV landed, serial
    # or overlapped. B then decodes in [30, 40] (serial: 3 tokens, finish 60 ms) or, formed
    # one step ahead, in [40, 50] (overlapped: finish 70 ms). C lands at 1 s on an idle
    # server: streamed at once.
    tr = _decode_pool(overlap, [0.0, 0.025, 1.0], [8, 3, 2])
    assert tr.first_token - tr.arrival == pytest.approx([0.0, 0.005, 0.0])
    assert tr.finish[1] == pytest.approx(0.070 if overlap else 0.060)
    assert tr.finish[2] == pytest.approx(1.020)
