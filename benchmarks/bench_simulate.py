"""Median time of a load simulation: Llama-3.1-8B on an H100, vLLM V1 profile, a closed loop
of 64 clients, 512 prompt and 128 output tokens.

Run: python benchmarks/bench_simulate.py [runs]. Reported apart: the whole call (stream,
step tables, host table, loop, statistics) and the engine loop alone on tables built once
(what a planner re-running one deployment pays). Targets: 10^4 requests <= 1 s, 10^5
requests <= 10 s on one core.
"""

from __future__ import annotations

import sys
import time

import roofkit
from _timing import median_seconds
from roofkit.load import requests as _requests
from roofkit.load.scheduler import run

KW = dict(concurrency=64, input_len=512, output_len=128, engine="vllm")


def main(runs: int = 3) -> None:
    import importlib

    sim = importlib.import_module("roofkit.load.simulate")
    reg = roofkit.build_registry(entry_points=False)
    w, d = reg.workload("llama-3.1-8b"), reg.device("h100")
    t = time.perf_counter()
    roofkit.simulate(w, d, requests=100, registry=reg, **KW)
    print(f"first call (plans compiled, tables built): {time.perf_counter() - t:.2f} s")
    for n, target in ((10_000, 1.0), (100_000, 10.0)):
        whole = median_seconds(lambda n=n: roofkit.simulate(w, d, requests=n, registry=reg, **KW),
                               runs if n <= 10_000 else 1, warm=False)
        st = _requests.stream(requests=n, concurrency=64, input_len=512, output_len=128)
        rep = sim.build_replica(reg, w, d, engine="vllm", tp=1, precision=None,
                                kv_cache_dtype="bf16", basis="calibrated", stream=st)
        loop = median_seconds(lambda st=st, rep=rep: run(st, rep.cfg, rep.costs, rep.host),
                              runs if n <= 10_000 else 1, warm=False)
        print(f"simulate {n:>7,} requests: whole call median {whole:.2f} s, engine loop "
              f"{loop:.2f} s (target {target:g} s: {'met' if whole <= target else 'MISSED'})")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
