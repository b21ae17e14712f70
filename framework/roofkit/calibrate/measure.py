"""The measurements ``roofkit calibrate`` makes, whatever the backend: memory bandwidth (copy
and triad over sizes), matrix throughput per precision over sizes, one GEMM where compute
and memory are about equal (the overlap), kernel launch latency, and all-reduce bus bandwidth
over message sizes when several devices are visible.

Each figure is the median of ``repeats`` samples; a sample runs the operation often enough to
last ``min_sample_s`` and divides. Bytes moved: copy 2 S (read S, write S), triad 3 S (two
arrays read, one written, STREAM's count); a GEMM M x N x K is 2 M N K FLOPs; an all-reduce
of S bytes over n devices has bus bandwidth busbw = S / t * 2 (n - 1) / n (nccl-tests).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable

import attrs


@attrs.frozen
class Settings:
    """What to measure: array sizes (bytes per array), square GEMM sizes, message sizes."""

    bandwidth_sizes: tuple[int, ...]
    gemm_sizes: tuple[int, ...]
    message_sizes: tuple[int, ...]
    repeats: int
    min_sample_s: float
    mixed_bytes: int

    @classmethod
    def for_backend(cls, kind: str, quick: bool) -> Settings:
        """``kind`` is ``cpu`` or ``gpu``; ``quick`` is a short run (CI: a few seconds)."""
        mib = 1 << 20
        if kind == "cpu":
            if quick:
                return cls((4 * mib, 16 * mib, 32 * mib), (64, 128, 256), (), 3, 0.01,
                           16 * mib)
            return cls((4 * mib, 16 * mib, 64 * mib, 256 * mib), (128, 256, 512, 1024, 2048),
                       (), 5, 0.1, 128 * mib)
        if quick:
            return cls((64 * mib, 256 * mib), (1024, 4096), (1 * mib, 64 * mib), 3, 0.02,
                       256 * mib)
        return cls((64 * mib, 256 * mib, 1024 * mib, 4096 * mib),
                   (512, 1024, 2048, 4096, 8192, 16384),
                   (8 << 10, 1 * mib, 16 * mib, 256 * mib, 1024 * mib), 7, 0.1, 1024 * mib)


@attrs.frozen
class Results:
    """Measured figures: bandwidth in B/s by array size, throughput in FLOP/s by slot and
    shape ``MxNxK``, the mixed GEMM by slot ``(shape, FLOP/s, element bytes)``, launch in
    seconds, bus bandwidth in B/s by message size (empty with one device)."""

    copy: dict[int, float]
    triad: dict[int, float]
    gemm: dict[str, dict[str, float]]
    mixed: dict[str, tuple[str, float, float]]
    launch: float
    allreduce: dict[int, float]
    devices: int

    @property
    def bandwidth(self) -> float:
        """The triad at the largest size: past the caches, the memory's own rate."""
        return self.triad[max(self.triad)]

    def peak(self, slot: str) -> float:
        return max(self.gemm[slot].values())


def median_time(run: Callable[[int], float], min_sample_s: float, repeats: int) -> float:
    """Seconds per call: ``run(inner)`` returns the seconds ``inner`` calls took; ``inner``
    grows until a sample lasts ``min_sample_s``; the median of ``repeats`` samples."""
    run(1)  # warm up: allocation, first-touch, library initialisation
    inner = 1
    t = run(inner)
    while t < min_sample_s and inner < 1 << 20:
        inner *= 2 if t <= 0 else max(2, min(64, math.ceil(min_sample_s / t)))
        t = run(inner)
    samples = [t / inner] + [run(inner) / inner for _ in range(repeats - 1)]
    return statistics.median(samples)


def mixed_shape(peak: float, bandwidth: float, elem: float, nbytes: int) -> tuple[int, int, int]:
    """An M x n x n GEMM whose compute and memory times are about equal: with M >> n,
    flops / bytes = 2 M n^2 / (elem * M * 2n) = n / elem, so n = elem * peak / bandwidth;
    M sized so the A and C matrices hold ``nbytes``."""
    n = max(8, round(elem * peak / bandwidth / 8.0) * 8)
    m = max(n, int(nbytes / (2 * n * elem)))
    return m, n, n


def measure(backend, settings: Settings, log: Callable[[str], None] = lambda s: None) -> Results:
    """Run every measurement on ``backend`` (see :mod:`roofkit.calibrate.backends`)."""
    s = settings
    copy, triad = {}, {}
    for size in s.bandwidth_sizes:
        copy[size] = 2.0 * size / median_time(backend.copy(size), s.min_sample_s, s.repeats)
        triad[size] = 3.0 * size / median_time(backend.triad(size), s.min_sample_s, s.repeats)
        log(f"bandwidth {size / 2**20:g} MiB: copy {copy[size] / 1e9:.3g} GB/s, "
            f"triad {triad[size] / 1e9:.3g} GB/s")
    gemm: dict[str, dict[str, float]] = {}
    for slot in backend.slots:
        rates = {}
        for n in s.gemm_sizes:
            t = median_time(backend.matmul(n, n, n, slot), s.min_sample_s, s.repeats)
            rates[f"{n}x{n}x{n}"] = 2.0 * n ** 3 / t
            log(f"gemm {slot} {n}^3: {rates[f'{n}x{n}x{n}'] / 1e9:.4g} GFLOP/s")
        gemm[slot] = rates
    bandwidth = triad[max(triad)]
    mixed = {}
    for slot in backend.slots:
        elem = backend.element_bytes(slot)
        m, n, k = mixed_shape(max(gemm[slot].values()), bandwidth, elem, s.mixed_bytes)
        t = median_time(backend.matmul(m, n, k, slot), s.min_sample_s, s.repeats)
        mixed[slot] = (f"{m}x{n}x{k}", 2.0 * m * n * k / t, elem)
        log(f"mixed {slot} {m}x{n}x{k}: {mixed[slot][1] / 1e9:.4g} GFLOP/s")
    launch = median_time(backend.launch(), s.min_sample_s, s.repeats)
    log(f"launch: {launch * 1e6:.3g} us")
    allreduce = {}
    n = backend.devices
    if n > 1:
        for size in s.message_sizes:
            t = median_time(backend.allreduce(size), s.min_sample_s, s.repeats)
            allreduce[size] = size / t * 2.0 * (n - 1) / n
            log(f"all-reduce {size} B over {n}: busbw {allreduce[size] / 1e9:.3g} GB/s")
    return Results(copy, triad, gemm, mixed, launch, allreduce, n)
