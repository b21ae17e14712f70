"""Layouts costed per second by the layout search (one core), Llama-3.1-405B over 1,024 H100s.

Run: python benchmarks/bench_layout_search.py [runs]. Times the vectorised pass alone
(candidates, refusals, training_step over every valid layout) and the whole
``search_layouts`` call (which also recomputes the top layouts one by one with ``train``);
prints medians and layouts per second. Target: at least 1e5 layouts/s on one core.
"""

from __future__ import annotations

import sys

import roofkit
from _timing import median_seconds
from roofkit.fleet.cluster import with_devices
from roofkit.fleet.model import arch_of
from roofkit.fleet.search import _evaluate, candidates, search_layouts


def main(runs: int = 7) -> None:
    reg = roofkit.build_registry(entry_points=False)
    arch = arch_of("llama-3.1-405b", reg)
    cl = with_devices(reg.cluster("dgx-h100"), 1024)
    cand = candidates(arch, 1024, cl.scale_up.size, {})
    n = cand["tp"].size

    def vector_pass():
        _evaluate(arch, cl, "calibrated", reg, cand, 1024, 1024, 8192, 0, False, False, 0.1)

    vector_pass()  # warm the roofline and the collectives' tables
    t = median_seconds(vector_pass, runs, warm=False)
    print(f"vectorised pass: {n:,} layouts in median {1e3 * t:.1f} ms = "
          f"{n / t:,.0f} layouts/s (target 1e5: {'met' if n / t >= 1e5 else 'MISSED'})")
    whole = median_seconds(lambda: search_layouts("llama-3.1-405b", "dgx-h100", devices=1024,
                                                  global_batch=1024, seq_len=8192, top=5,
                                                  registry=reg), max(1, runs // 2),
                           warm=False)
    result = search_layouts("llama-3.1-405b", "dgx-h100", devices=1024, global_batch=1024,
                            seq_len=8192, top=5, registry=reg)
    print("search_layouts (every halving down to one node, top 5 recomputed): "
          f"median {whole:.2f} s, "
          f"{result.evaluated:,} layouts = {result.evaluated / whole:,.0f} layouts/s; "
          f"{result.fitting:,} fit")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 7)
