"""Speed of the Hugging Face importer.

    python benchmarks/bench_import.py

Prints the median time to import one config.json into a checked workload (dense Llama,
DeepSeek-V3's MLA-MoE, Qwen3-Next's hybrid), the median time to name an imported folder
again (the registry finds it by its files' stamps), and a catalogue name for comparison.
Medians over repeated timed blocks; nothing here is asserted.
"""

from __future__ import annotations

import sys
from pathlib import Path

from _timing import median_seconds

HF = Path(__file__).parents[1] / "tests" / "data" / "hf"
MODELS = ["llama-3.1-8b", "deepseek-v3", "qwen3-next-80b-a3b"]


def main() -> int:
    import roofkit
    from roofkit.importers import workload_from_hf

    reg = roofkit.build_registry(entry_points=False)
    for name in MODELS:
        t = median_seconds(lambda n=name: workload_from_hf(HF / n, registry=reg), 5, number=5)
        print(f"import {name:22s} {t * 1e3:8.2f} ms")
    folder = str(HF / "llama-3.1-8b")
    again = median_seconds(lambda: reg.workload(folder), 7, number=200)
    named = median_seconds(lambda: reg.workload("llama-3.1-8b"), 7, number=2000)
    print(f"name an imported folder again {again * 1e6:8.1f} us")
    print(f"name a catalogue workload     {named * 1e6:8.1f} us  (ratio {again / named:.0f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
