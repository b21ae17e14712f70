"""Fit a power-metered roofline sweep into per-op energy constants (docs/energy.md).

Reads the output of te42kyfo/gpu-benches ``gpu-roofline`` (rows such as
``0.250 Fl/B  3759 GB/s  940 GF/s  1980 Mhz  572 W  57°C``) and fits, by least squares over
every row (:func:`roofkit.energy.fit_power`),

    P = p_static + e_byte * bandwidth + e_fp64 * FLOP rate

``p_static`` is the board's power while kernels run before the work they do, ``e_byte`` the
energy per DRAM byte moved to the registers (DRAM, crossbar, L2, L1). The files are not part
of roofkit (GPL-3.0 repository); fetch them first, e.g.

    https://github.com/te42kyfo/gpu-benches/blob/1c36d509ee717dca9215c27135fa1e611bb03ed1/gpu-roofline/h200.txt
    .../gpu-roofline/alex_a100_40.txt

Run: python benchmarks/energy_power_fit.py h200.txt [alex_a100_40.txt ...]
Prints per file: rows, p_static W, e_byte pJ/B and pJ/bit, e_fp64 pJ/FLOP, rms residual W.
"""

from __future__ import annotations

import re
import sys

import numpy as np

from roofkit.energy import fit_power

ROW = re.compile(r"([\d.]+) GB/s\s+([\d.]+) GF/s\s+\d+ Mhz\s+([\d.]+) W")


def rows_of(text: str) -> list[tuple[float, float, float]]:
    """(bandwidth B/s, FLOP/s, W) per row of a gpu-roofline output."""
    return [(float(bw) * 1e9, float(f) * 1e9, float(w)) for bw, f, w in ROW.findall(text)]


def main(paths: list[str]) -> int:
    if not paths:
        print(__doc__)
        return 1
    for path in paths:
        with open(path, encoding="utf-8") as fh:
            rows = rows_of(fh.read())
        p0, eb, ef = fit_power(rows)
        res = [w - (p0 + eb * bw + ef * f) for bw, f, w in rows]
        print(f"{path}: {len(rows)} rows  p_static {p0:.1f} W  e_byte {eb * 1e12:.1f} pJ/B "
              f"({eb * 1e12 / 8:.2f} pJ/bit)  e_fp64 {ef * 1e12:.2f} pJ/FLOP  "
              f"rms residual {float(np.sqrt(np.mean(np.square(res)))):.1f} W")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
