"""`roofkit devices` startup of two or more checkouts, runs interleaved so that a shared
machine's load falls on each alike: median wall and CPU time (user + system) per checkout.

Run: python benchmarks/bench_startup_ab.py [--runs N] CHECKOUT [CHECKOUT...]
Each checkout runs with its own ``framework/`` and ``plugins/`` on PYTHONPATH and its own
fresh spec cache (warmed by two runs first). CPU time is the steadier figure when the
machine is busy.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

CODE = "import sys; from roofkit.cli import main; sys.exit(main(['devices']))"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("checkouts", nargs="+")
    ap.add_argument("--runs", type=int, default=15)
    args = ap.parse_args()
    base = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    envs = {}
    for tree in args.checkouts:
        env = dict(base, PYTHONPATH=f"{tree}/framework{os.pathsep}{tree}/plugins",
                   ROOFKIT_CACHE_DIR=tempfile.mkdtemp(prefix="roofkit-ab-"))
        env.pop("ROOFKIT_NO_CACHE", None)
        for _ in range(2):  # warm the spec cache and the bytecode
            subprocess.run([sys.executable, "-c", CODE], env=env, check=True,
                           stdout=subprocess.DEVNULL)
        envs[tree] = env
    wall: dict[str, list[float]] = {t: [] for t in envs}
    cpu: dict[str, list[float]] = {t: [] for t in envs}
    for _ in range(args.runs):
        for tree, env in envs.items():
            r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-c", CODE], env=env, check=True,
                           stdout=subprocess.DEVNULL)
            wall[tree].append(time.perf_counter() - t0)
            r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu[tree].append(r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime)
    for tree in envs:
        print(f"{tree}: wall median {statistics.median(wall[tree]):.3f} s "
              f"(min {min(wall[tree]):.3f}); cpu median {statistics.median(cpu[tree]):.3f} s "
              f"(min {min(cpu[tree]):.3f}) over {args.runs} runs")


if __name__ == "__main__":
    main()
