"""Speed of Engine.solve and Engine.sweep against the reference implementation's figures.

    python benchmarks/bench_solve.py

Prints the median time of one ``Engine.solve`` (Llama-3.1-8B, H100, batch 32, warm caches)
and of one 120-point ``Engine.sweep`` (5 devices x 8 batch sizes x 3 precisions), and their
ratios to the reference (1,150 us per solve, 140 ms per 120-point sweep). Targets: at most
11 us and 2 ms. Medians over repeated timed blocks; nothing here is asserted.
"""

from __future__ import annotations

import sys

from _timing import median_seconds

REFERENCE_SOLVE_US = 1150.0
REFERENCE_SWEEP_MS = 140.0
TARGET_SOLVE_US = 11.0
TARGET_SWEEP_MS = 2.0

DEVICES = ["h100", "a100-80gb", "h200", "b200", "l4"]
BATCHES = [1, 2, 4, 8, 16, 32, 64, 128]
PRECISIONS = ["fp16", "bf16", "fp8"]


def main() -> int:
    from roofkit import Engine, RoofkitError

    model = "llama-3.1-8b"
    try:
        Engine.solve(model, "h100", batch_size=32)
    except RoofkitError as exc:
        print(f"note: {model} is not solvable here ({exc}); timing resnet-50 instead",
              file=sys.stderr)
        model = "resnet-50"

    solve_s = median_seconds(lambda: Engine.solve(model, "h100", batch_size=32),
                             number=2000, repeat=25)
    rows = Engine.sweep(model, DEVICES, BATCHES, PRECISIONS)
    points = len(DEVICES) * len(BATCHES) * len(PRECISIONS)
    sweep_s = median_seconds(lambda: Engine.sweep(model, DEVICES, BATCHES, PRECISIONS),
                             number=20, repeat=25)

    solve_us, sweep_ms = solve_s * 1e6, sweep_s * 1e3
    print(f"Engine.solve({model}, h100, batch 32): median {solve_us:.2f} us "
          f"(target <= {TARGET_SOLVE_US:g} us; reference {REFERENCE_SOLVE_US:,.0f} us: "
          f"{REFERENCE_SOLVE_US / solve_us:,.0f}x faster)")
    print(f"Engine.sweep, {points} points ({len(rows)} feasible rows): median "
          f"{sweep_ms:.3f} ms (target <= {TARGET_SWEEP_MS:g} ms; reference "
          f"{REFERENCE_SWEEP_MS:g} ms: {REFERENCE_SWEEP_MS / sweep_ms:,.0f}x faster)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
