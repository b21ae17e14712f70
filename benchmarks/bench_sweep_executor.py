"""Sweeps on a process pool: the whole table back, or only what a query keeps.

    python benchmarks/bench_sweep_executor.py [repeats]

A 1,000,000-point engine sweep (Llama-3.1-70B, 10 devices x 5 precisions x 20,000 batch
sizes) in one process, then on a 2-worker ``ProcessPoolExecutor`` returning every row, and
returning only the best row per device (``best_by=("device", "throughput_per_s")``, reduced
in the workers). Prints medians and the pool / in-process ratios. Nothing is asserted.
"""

from __future__ import annotations

import multiprocessing
import sys
from concurrent.futures import ProcessPoolExecutor

import numpy as np

import roofkit
from _timing import median_seconds

DEVICES = ["h100", "h200", "b200", "mi300x", "a100-80gb", "l40s", "gaudi3", "tpu-v5p",
           "mi355x", "rtx-5090"]
PRECISIONS = ["fp16", "bf16", "fp8", "int8", "nvfp4"]
BATCHES = np.arange(1, 20_001)


def main(repeats: int = 3) -> None:
    grid = dict(workload="llama-3.1-70b", devices=DEVICES, precisions=PRECISIONS,
                batch_sizes=BATCHES)
    local = median_seconds(lambda: roofkit.sweep(**grid), repeats)
    best = dict(best_by=("device", "throughput_per_s"))
    local_best = median_seconds(lambda: roofkit.sweep(**grid, **best), repeats)
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=2, mp_context=ctx) as pool:
        full = median_seconds(lambda: roofkit.sweep(**grid, executor=pool), repeats)
        reduced = median_seconds(lambda: roofkit.sweep(**grid, executor=pool, **best), repeats)
    n = len(DEVICES) * len(PRECISIONS) * len(BATCHES)
    print(f"engine sweep, {n:,} points (median of {repeats}):")
    print(f"  in process, whole table            {local:.3f} s")
    print(f"  in process, best per device        {local_best:.3f} s")
    print(f"  2-worker pool, whole table back    {full:.3f} s  ({full / local:.2f}x in-process)")
    print(f"  2-worker pool, reduced in workers  {reduced:.3f} s  "
          f"({reduced / local_best:.2f}x in-process)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
