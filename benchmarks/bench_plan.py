"""Median time of the SLO planner: Llama-3.1-70B on H100, H200 and B200, up to 16 devices,
1024 in / 256 out, TTFT p90 <= 2 s and TPOT p90 <= 50 ms, screening only (no simulated
verification).

Run: python benchmarks/bench_plan.py [runs]. The first call compiles the circuit plans of
every (device, precision, TP) and is reported apart; later calls hit the registry's cache.
Target: at least 10^4 configurations in at most 10 s.
"""

from __future__ import annotations

import sys
import time

import roofkit
from _timing import median_seconds

KW = dict(max_devices=16, input_len=1024, output_len=256, slo="ttft_p90=2s,tpot_p90=50ms",
          verify=0)


def main(runs: int = 3) -> None:
    reg = roofkit.build_registry(entry_points=False)
    devices = ["h100", "h200", "b200"]
    t = time.perf_counter()
    r = roofkit.plan("llama-3.1-70b", devices, registry=reg, **KW)
    first = time.perf_counter() - t
    med = median_seconds(lambda: roofkit.plan("llama-3.1-70b", devices, registry=reg, **KW),
                         runs, warm=False)
    print(f"first call (plans compiled): {first:.2f} s for {r.evaluated:,} configurations "
          f"(target 10 s: {'met' if first <= 10 and r.evaluated >= 10_000 else 'MISSED'})")
    print(f"plan, cached plans: median {med:.3f} s for {r.evaluated:,} configurations "
          f"({r.evaluated / med:,.0f} configurations/s), {len(r.rows):,} meet the SLO")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
