"""Per-op energy: a step's joules from the FLOPs and bytes of its circuit rows.

``E = min(P_idle * t + sum_rows(e_flop[slot] * flops + e_byte * bytes), TDP * t)``

``P_idle`` and ``e_byte`` (DRAM energy per byte) are data in ``specs/energy/devices.toml``,
each with its source; ``e_flop[slot] = (TDP - P_idle) / peak[slot]`` is derived (the energy
one FLOP adds when the board runs the slot's datasheet peak at its power limit). Link bytes
are not charged (no cited per-bit link energy yet). A device without constants falls back to
the Engine reference's ``TDP * (0.3 + 0.7 * HFU) * t`` (:func:`roofkit.engine.calibration.energy`),
and :func:`model_name` says which model answered.
"""

from __future__ import annotations

import functools
import tomllib
from pathlib import Path

import attrs
import numpy as np

from . import units
from .errors import SpecError
from .files import read_spec_bytes
from .paths import builtin_specs_dir

__all__ = ["EnergyConstants", "constants", "load_table", "model_name", "serving_energy",
           "step_energy"]

PJ = 1e-12


@attrs.frozen
class EnergyConstants:
    """One device's per-op energy constants (SI: W and J/byte)."""

    device: str
    p_idle: float
    e_byte: float
    sources: dict = attrs.field(factory=dict)

    def e_flop(self, tdp: float, peak: float) -> float:
        """J/FLOP of a slot: ``(TDP - P_idle) / peak``."""
        return (tdp - self.p_idle) / peak if peak > 0.0 else 0.0


def load_table(path: Path) -> dict[str, EnergyConstants]:
    """Read an energy-constants TOML (see ``specs/energy/devices.toml``)."""
    try:
        data = tomllib.loads(read_spec_bytes(path).decode("utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise SpecError(f"{path}: cannot read the energy constants ({exc})") from exc
    table = {}
    for name, row in data.items():
        if not isinstance(row, dict):
            raise SpecError(f"{path}: [{name}] must be a table with p_idle and e_byte_hbm")
        for key in ("p_idle", "e_byte_hbm"):
            if key not in row:
                raise SpecError(f"{path}: [{name}] lacks {key!r}; add it with a source in "
                                f"[{name}.sources]")
        try:
            p_idle = units.parse(str(row["p_idle"]), "power")
            e_bit = float(row["e_byte_hbm"])
        except (ValueError, TypeError) as exc:
            raise SpecError(f"{path}: [{name}] p_idle must be a power such as '80 W' and "
                            f"e_byte_hbm a number of pJ/bit ({exc})") from exc
        if not (0.0 <= p_idle <= 1e6 and 0.0 <= e_bit <= 1e4):  # NaN fails both
            raise SpecError(f"{path}: [{name}] p_idle must be in [0, 1 MW] and e_byte_hbm "
                            "in [0, 10,000] pJ/bit")
        if not row.get("sources"):
            raise SpecError(f"{path}: [{name}] has no [{name}.sources]; every constant "
                            "needs its source")
        table[name] = EnergyConstants(name, p_idle, e_bit * 8.0 * PJ, dict(row["sources"]))
    return table


@functools.cache
def _builtin() -> dict[str, EnergyConstants]:
    return load_table(builtin_specs_dir() / "energy" / "devices.toml")


def constants(device: str, table: dict | None = None) -> EnergyConstants | None:
    """The constants of ``device``, or None (the TDP model then answers)."""
    return (_builtin() if table is None else table).get(device)


def model_name(device: str, table: dict | None = None) -> str:
    """``per-op`` when ``device`` has constants, else ``tdp`` (the fallback)."""
    return "per-op" if constants(device, table) is not None else "tdp"


def step_energy(estimate, table: dict | None = None):
    """Joules of one device for a circuit estimate (float, or an array over its contexts);
    its rows hold all instances. Without constants: the estimate's own TDP-model energy."""
    t = np.asarray(estimate.time, dtype=float)
    tdp = float(estimate.tdp)
    c = constants(estimate.device, table)
    if c is None:
        return np.asarray(estimate.energy, dtype=float) if tdp > 0.0 else t * 0.0
    e = c.p_idle * t
    for row in estimate.rows:
        peak = float(estimate.slot_peaks.get(row.slot, 0.0))
        e = e + c.e_flop(tdp, peak) * np.asarray(row.flops, dtype=float) \
            + c.e_byte * np.asarray(row.bytes, dtype=float)
    return np.minimum(e, tdp * t) if tdp > 0.0 else e


def serving_energy(est, table: dict | None = None) -> float:
    """Joules of a :class:`~roofkit.serving.estimate.ServingEstimate` on the per-op model:
    prefill, every decode step, and the host time at idle power, times ``tp``."""
    if not est.parts:
        return 0.0
    pre, dec, steps, host_time = est.parts
    c = constants(pre.device, table)
    if c is None:
        return float(est.energy)
    e = float(step_energy(pre, table))
    if dec is not None:
        e += float(np.sum(np.broadcast_to(step_energy(dec, table), (steps,))))
    return est.tp * (e + c.p_idle * host_time)
