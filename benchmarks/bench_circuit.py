"""Median time of a circuit decode estimate of Llama-3.1-70B (80 layers) on an H100.

Run: python benchmarks/bench_circuit.py [runs]. The first call compiles the plan (lowering,
rule compilation, roofline) and is reported apart; the timed calls hit the registry's cache
and do float or numpy arithmetic only. Targets: one batch at most 1 ms, 64 batch sizes at
once at most 3 ms.
"""

from __future__ import annotations

import sys
import time

import numpy as np

import roofkit
from _timing import median_seconds


def main(runs: int = 2000) -> None:
    reg = roofkit.build_registry(entry_points=False)
    batches = np.arange(1, 65)
    t = time.perf_counter()
    roofkit.decode("llama-3.1-70b", "h100", batch=1, context=2048, registry=reg)
    print(f"first call (lower + compile + cache): {1e3 * (time.perf_counter() - t):.2f} ms")
    one = median_seconds(lambda: roofkit.decode("llama-3.1-70b", "h100", batch=1,
                                                context=2048, registry=reg), runs, warm=False)
    many = median_seconds(lambda: roofkit.decode("llama-3.1-70b", "h100", batch=batches,
                                                 context=2048, registry=reg), runs // 4,
                          warm=False)
    print(f"decode llama-3.1-70b on h100, batch 1:        median {1e3 * one:.3f} ms "
          f"(target 1 ms: {'met' if one <= 1e-3 else 'MISSED'})")
    print(f"decode llama-3.1-70b on h100, 64 batch sizes: median {1e3 * many:.3f} ms "
          f"(target 3 ms: {'met' if many <= 3e-3 else 'MISSED'})")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2000)
