"""Median wall time of `roofkit devices` as a whole process (interpreter start included).

Run: python benchmarks/bench_startup.py [runs]. The first run warms the spec cache (and
writes bytecode, as ``pip install`` does) and is reported separately. Target: at most 0.35 s.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import time

from _timing import timings

REFERENCE_S = 3.9  # the reference implementation's time to answer anything


def main(runs: int = 15) -> None:
    exe = shutil.which("roofkit")
    cmd = [exe, "devices"] if exe else [sys.executable, "-m", "roofkit.cli", "devices"]
    # as installed: pip compiles bytecode, so a shell's PYTHONDONTWRITEBYTECODE is dropped
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    def devices():
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=env)

    t = time.perf_counter()
    devices()
    print(f"first run (cold spec cache possible): {time.perf_counter() - t:.3f} s")
    times = timings(devices, runs, warm=False)
    med = statistics.median(times)
    print(f"roofkit devices: median {med:.3f} s over {runs} runs "
          f"(min {min(times):.3f}, max {max(times):.3f})")
    print(f"target 0.35 s: {'met' if med <= 0.35 else 'MISSED'}; "
          f"{REFERENCE_S / med:.1f}x faster than the reference's {REFERENCE_S} s")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 15)
