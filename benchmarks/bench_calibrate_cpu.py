"""Calibrate this CPU with ``roofkit calibrate`` (numpy backend), then predict two numpy
workloads on the calibrated CPU device and time them: an MLP forward pass and a batched
matrix-vector product. Prints predicted and measured medians and their ratio.

Run: python benchmarks/bench_calibrate_cpu.py [--quick] [runs]

The prediction is the calibrated cost model of one node per numpy call (what
``roofline_calibrated`` does for a circuit node), plus one launch per call:

    t = (c^p + m^p)^(1/p) + launch,  c = F / (P_fp32 * eta(F)),  m = bytes / BW

with P, eta (the GEMM-size curve), p (the measured overlap), BW (the triad) and the launch
all from the calibration just written. A numpy call is one node: ``x @ W`` (a GEMM, its
bytes x, W and the output), ``np.maximum(h, 0, out=h)`` (a vector op at the fp32 peak, its
bytes read and written).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time

import numpy as np

import roofkit
from _timing import median_seconds
from roofkit.calibrate import calibrate
from roofkit.circuit.roofline import device_roofline

F32 = 4.0


def gemm_time(roof, m: int, n: int, k: int, gemms: int = 1) -> float:
    """One numpy matmul of ``gemms`` independent (m x k) @ (k x n) products."""
    flops = 2.0 * m * n * k * gemms
    nbytes = F32 * (m * k + k * n + m * n) * gemms
    c = flops / (roof.peaks["fp32"] * roof.efficiency("fp32", flops / gemms))
    return roof.combine(c, nbytes / roof.bandwidth) + roof.launch


def vector_time(roof, elements: int) -> float:
    c = elements / roof.vector_peak()
    return roof.combine(c, 2 * F32 * elements / roof.bandwidth) + roof.launch


def main(quick: bool = False, runs: int = 20) -> None:
    out = tempfile.mkdtemp(prefix="roofkit-cal-")
    t0 = time.perf_counter()
    run = calibrate("numpy", quick=quick, out=out, name="bench-cpu",
                    command="python benchmarks/bench_calibrate_cpu.py")
    r = run.results
    print(f"calibrated in {time.perf_counter() - t0:.1f} s: triad {r.bandwidth / 1e9:.3g} GB/s, "
          f"fp32 {r.peak('fp32') / 1e9:.3g} GFLOP/s, launch {r.launch * 1e6:.3g} us ({out})")
    reg = roofkit.build_registry(entry_points=False, spec_paths=[out])
    roof = device_roofline(reg.device("bench-cpu"), "calibrated", reg)
    rng = np.random.default_rng(0)
    rows = []

    # MLP forward: batch 64, 1024 -> 4096 -> ReLU -> 1024, fp32
    b, d, h = 64, 1024, 4096
    x = rng.standard_normal((b, d), dtype=np.float32)
    w1 = rng.standard_normal((d, h), dtype=np.float32)
    w2 = rng.standard_normal((h, d), dtype=np.float32)
    hid = np.empty((b, h), np.float32)
    y = np.empty((b, d), np.float32)

    def mlp():
        np.matmul(x, w1, out=hid)
        np.maximum(hid, 0, out=hid)
        np.matmul(hid, w2, out=y)

    pred = gemm_time(roof, b, h, d) + vector_time(roof, b * h) + gemm_time(roof, b, d, h)
    rows.append((f"MLP forward {b}x{d}->{h}->{d}", pred, median_seconds(mlp, runs)))

    # batched matvec: 32 independent (2048 x 2048) @ (2048,) products
    g, n = 32, 2048
    a = rng.standard_normal((g, n, n), dtype=np.float32)
    v = rng.standard_normal((g, n, 1), dtype=np.float32)
    o = np.empty((g, n, 1), np.float32)
    pred = gemm_time(roof, n, 1, n, gemms=g)
    rows.append((f"batched matvec {g} x {n}x{n}", pred, median_seconds(
        lambda: np.matmul(a, v, out=o), runs)))

    print(f"{'workload':34s} {'predicted':>12s} {'measured':>12s} {'pred/meas':>10s}")
    for name, p, m in rows:
        print(f"{name:34s} {p * 1e3:10.3f} ms {m * 1e3:10.3f} ms {p / m:10.2f}")
    print(f"basis: {roof.basis}")
    if hasattr(os, "getloadavg"):
        print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs: other work on "
              "the machine between calibration and timing moves both")


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--quick"]
    main(quick="--quick" in sys.argv[1:], runs=int(args[0]) if args else 20)
