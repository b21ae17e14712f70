"""Design-space sweeps at a million points a second: ``roofkit.sweep`` against a scalar loop.

    python benchmarks/bench_sweep.py [repeats]

Times (median over ``repeats`` runs, warm caches):

* a 1,000,000-point Engine sweep of Llama-3.1-70B: 10 devices x 5 precisions x 20,000
  batch sizes (``mode="engine"``, the Engine.solve equation);
* a 100,000-point decode sweep of Llama-3.1-70B: 5 devices x 2 precisions x 10 contexts x
  1,000 batch sizes (``mode="decode"``, the circuit's per-node estimate).

and a scalar loop (``Engine.solve``, ``roofkit.decode``) over a random sample of each grid,
extrapolated per point. Targets: at most 2 s per sweep on a 2-core machine; the reference
implementation does about 870 points a second. Nothing here is asserted.
"""

from __future__ import annotations

import random
import sys
import time

import numpy as np

from _timing import median_seconds

REFERENCE_POINTS_PER_S = 870.0
TARGET_S = 2.0
WORKLOAD = "llama-3.1-70b"

ENGINE_DEVICES = ["h100", "h200", "b200", "mi300x", "a100-80gb", "l40s", "gaudi3", "tpu-v5p",
                  "mi355x", "rtx-5090"]
ENGINE_PRECISIONS = ["fp16", "bf16", "fp8", "int8", "nvfp4"]
ENGINE_BATCHES = np.arange(1, 20_001)

DECODE_DEVICES = ["h100", "h200", "b200", "mi300x", "a100-80gb"]
DECODE_PRECISIONS = ["fp8", "bf16"]
DECODE_CONTEXTS = [128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 131072]
DECODE_BATCHES = np.arange(1, 1_001)


def scalar_per_point(call, grid, sample: int, seed: int = 0) -> float:
    rng = random.Random(seed)
    points = [tuple(rng.choice(axis) for axis in grid) for _ in range(sample)]
    call(*points[0])
    t0 = time.perf_counter()
    for p in points:
        call(*p)
    return (time.perf_counter() - t0) / sample


def report(name: str, n: int, median: float, per_point: float) -> None:
    rate = n / median
    loop = per_point * n
    print(f"{name}: {n:,} points, median {median:.3f} s, {rate:,.0f} points/s "
          f"(target {TARGET_S:g} s: {'met' if median <= TARGET_S else 'MISSED'})")
    print(f"  scalar loop: {per_point * 1e6:.1f} us/point -> {loop:.1f} s for the grid; "
          f"vectorized is {loop / median:,.0f}x faster; "
          f"{rate / REFERENCE_POINTS_PER_S:,.0f}x the reference's {REFERENCE_POINTS_PER_S:g} "
          f"points/s")


def main(repeats: int = 5) -> int:
    import roofkit
    from roofkit import Engine

    reg = roofkit.default_registry()

    def engine():
        return roofkit.sweep(WORKLOAD, ENGINE_DEVICES, ENGINE_PRECISIONS, ENGINE_BATCHES,
                             registry=reg)

    table = engine()  # warm: plans compiled, facts resolved
    med = median_seconds(engine, repeats, warm=False)
    per = scalar_per_point(
        lambda d, p, b: Engine.solve(WORKLOAD, d, batch_size=int(b), precision=p, registry=reg),
        [ENGINE_DEVICES, ENGINE_PRECISIONS, ENGINE_BATCHES.tolist()], 5000)
    report("engine sweep", len(table), med, per)

    def decode():
        return roofkit.sweep(WORKLOAD, DECODE_DEVICES, DECODE_PRECISIONS, DECODE_BATCHES,
                             contexts=DECODE_CONTEXTS, mode="decode", registry=reg)

    table = decode()
    med = median_seconds(decode, repeats, warm=False)
    per = scalar_per_point(
        lambda d, p, c, b: roofkit.decode(WORKLOAD, d, batch=int(b), context=int(c),
                                          precision=p, registry=reg).time,
        [DECODE_DEVICES, DECODE_PRECISIONS, DECODE_CONTEXTS, DECODE_BATCHES.tolist()], 500)
    report("decode sweep", len(table), med, per)

    t0 = time.perf_counter()
    front = table.where("itl_ms <= 50", "fits").pareto("throughput_per_s", "latency_ms")
    best = table.where("fits").best_by("device", "throughput_per_s")
    print(f"queries on the decode table: where + pareto ({len(front)} rows) and best_by "
          f"({len(best)} rows) in {time.perf_counter() - t0:.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 5))
