"""Wall-clock timing shared by the benchmarks: the median of repeated timed blocks.

A block is ``number`` back-to-back calls of ``fn``; its time is their mean, so a fast call
(microseconds) is timed over many calls and a slow one (seconds) over one.
"""

from __future__ import annotations

import statistics
import time


def timings(fn, repeat: int, number: int = 1, warm: bool = True) -> list[float]:
    """Mean seconds per call of each of ``repeat`` blocks of ``number`` calls of ``fn``.

    ``warm`` makes one untimed call first (caches filled, plans compiled).
    """
    if warm:
        fn()
    blocks = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        blocks.append((time.perf_counter() - t0) / number)
    return blocks


def median_seconds(fn, repeat: int, number: int = 1, warm: bool = True) -> float:
    """Median over ``repeat`` blocks of the mean time of ``number`` calls of ``fn``."""
    return statistics.median(timings(fn, repeat, number, warm))
