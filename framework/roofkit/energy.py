"""Per-op energy: a step's joules from the FLOPs and bytes of its circuit rows.

``E = min(P_static * t + sum_rows(e_flop[slot] * flops + e_byte * bytes + e_link * link_bytes),
TDP * t)``

- ``P_static``: the board's power while kernels run (clocks and voltage up, leakage, clock
  tree), whatever they compute; ``P_idle`` (the board at rest) is charged for host time only.
- ``e_byte = e_hbm + e_onchip``: DRAM energy per byte plus the on-chip movement of that byte
  (crossbar, L2, shared memory) to the registers that use it.
- ``e_link``: energy per byte sent over the scale-up link (``link_bytes`` of a row).
- ``e_flop[slot] = (TDP - P_static) / peak[slot]`` (derived, not stored): the energy one
  FLOP adds when the board runs the slot's peak at its power limit; ``peak`` is the slot's
  measured maximum achievable matmul rate (``flops_at_tdp``) where the table gives one (a
  GEMM sweep runs the board at its power limit), else the datasheet peak.
- the ``min`` is the power cap: a board never draws more than its TDP on average.

The constants are data in ``specs/energy/devices.toml``, each with its source. A device
without constants falls back to the Engine reference's ``TDP * (0.3 + 0.7 * HFU) * t``
(:func:`roofkit.engine.calibration.energy`), and :func:`model_name` says which model answered.
"""

from __future__ import annotations

import functools
import math
import tomllib
from pathlib import Path

import attrs
import numpy as np

from . import units
from .errors import SpecError
from .files import read_spec_bytes
from .paths import builtin_specs_dir

__all__ = ["EnergyConstants", "constants", "fit_power", "limited_time", "load_table",
           "model_name", "serving_energy", "serving_times", "step_energy", "step_time",
           "steps_energy"]

PJ = 1e-12
_BITS = ("e_byte_hbm", "e_byte_onchip", "e_byte_link")  # pJ/bit keys
_KEYS = {"p_idle", "p_static", "flops_at_tdp", "sources", *_BITS}


@attrs.frozen
class EnergyConstants:
    """One device's per-op energy constants (SI: W and J/byte). ``p_static`` defaults to
    ``p_idle`` (and a table without ``p_idle`` gives it ``p_static``); ``e_byte`` is DRAM plus
    on-chip movement per DRAM byte, ``e_link`` the scale-up link's energy per byte."""

    device: str
    p_idle: float
    e_byte: float
    sources: dict = attrs.field(factory=dict)
    p_static: float | None = None
    e_link: float = 0.0
    flops_at_tdp: dict = attrs.field(factory=dict)  # slot -> FLOP/s reached at the power limit

    @property
    def p_busy(self) -> float:
        """W while kernels run, before the work they do (``p_static``, else ``p_idle``)."""
        return self.p_idle if self.p_static is None else self.p_static

    def e_flop(self, tdp: float, peak: float, slot: str = "") -> float:
        """J/FLOP of a slot: ``(TDP - P_static) / peak`` (0 where that is negative), ``peak``
        being ``flops_at_tdp[slot]`` where given, else the datasheet ``peak`` passed in."""
        peak = self.flops_at_tdp.get(slot, peak)
        return max(tdp - self.p_busy, 0.0) / peak if peak > 0.0 else 0.0


def _bits(path, name, row, key) -> float:
    if key not in row:
        return 0.0
    try:
        v = float(row[key])
    except (ValueError, TypeError) as exc:
        raise SpecError(f"{path}: [{name}] {key} must be a number of pJ/bit ({exc})") from exc
    if not 0.0 <= v <= 1e4:  # NaN fails too
        raise SpecError(f"{path}: [{name}] {key} must be in [0, 10,000] pJ/bit")
    return v


def _watts(path, name, row, key) -> float:
    try:
        v = units.parse(str(row[key]), "power")
    except (ValueError, TypeError) as exc:
        raise SpecError(f"{path}: [{name}] {key} must be a power such as '80 W' "
                        f"({exc})") from exc
    if not (math.isfinite(v) and 0.0 <= v <= 1e6):
        raise SpecError(f"{path}: [{name}] {key} must be in [0, 1 MW]")
    return v


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
        if "e_byte_hbm" not in row:
            raise SpecError(f"{path}: [{name}] lacks 'e_byte_hbm'; add it with a source in "
                            f"[{name}.sources]")
        if "p_idle" not in row and "p_static" not in row:
            raise SpecError(f"{path}: [{name}] lacks 'p_idle' (and 'p_static'); add one with "
                            f"a source in [{name}.sources]")
        unknown = sorted(set(row) - _KEYS)
        if unknown:
            raise SpecError(f"{path}: [{name}] unknown keys {unknown}; known: "
                            f"{sorted(_KEYS)}")
        p_static = _watts(path, name, row, "p_static") if "p_static" in row else None
        p_idle = _watts(path, name, row, "p_idle") if "p_idle" in row else p_static
        hbm, onchip, link = (_bits(path, name, row, k) for k in _BITS)
        flops = row.get("flops_at_tdp", {})
        if not isinstance(flops, dict):
            raise SpecError(f"{path}: [{name}] flops_at_tdp must be a table of slot = "
                            "'... TFLOP/s'")
        try:
            flops = {k: units.parse(str(v), "throughput") for k, v in flops.items()}
        except (ValueError, TypeError) as exc:
            raise SpecError(f"{path}: [{name}.flops_at_tdp] needs rates such as "
                            f"'794.5 TFLOP/s' ({exc})") from exc
        if not all(math.isfinite(v) and v > 0.0 for v in flops.values()):
            raise SpecError(f"{path}: [{name}.flops_at_tdp] rates must be finite and > 0")
        sources = row.get("sources")
        if not sources or not isinstance(sources, dict):
            raise SpecError(f"{path}: [{name}] has no [{name}.sources]; every constant "
                            "needs its source")
        missing = sorted(k for k in set(row) - {"sources"} if k not in sources)
        if missing:
            raise SpecError(f"{path}: [{name}.sources] lacks {missing}; every constant "
                            "needs its source")
        table[name] = EnergyConstants(name, p_idle, (hbm + onchip) * 8.0 * PJ, dict(sources),
                                      p_static=p_static, e_link=link * 8.0 * PJ,
                                      flops_at_tdp=flops)
    return table


def fit_power(rows) -> tuple[float, float, float]:
    """Least-squares fit of a power-metered sweep: ``rows`` of (bandwidth B/s, FLOP rate
    FLOP/s, board power W), ``P = p_static + e_byte * bandwidth + e_flop * rate``. Returns
    ``(p_static W, e_byte J/B, e_flop J/FLOP)`` (how ``specs/energy/devices.toml`` got its
    ``p_static`` and per-byte totals; ``benchmarks/energy_power_fit.py`` runs it on a file)."""
    a = np.array([[1.0, bw * 1e-12, f * 1e-12] for bw, f, _ in rows], dtype=float)
    y = np.array([w for *_, w in rows], dtype=float)
    if a.shape[0] < 3 or np.linalg.matrix_rank(a) < 3:
        raise ValueError("fit_power needs >= 3 rows that vary bandwidth and FLOP rate "
                         "independently")
    x = np.linalg.lstsq(a, y, rcond=None)[0]
    return float(x[0]), float(x[1]) * 1e-12, float(x[2]) * 1e-12


@functools.cache
def _builtin() -> dict[str, EnergyConstants]:
    return load_table(builtin_specs_dir() / "energy" / "devices.toml")


def constants(device: str, table: dict | None = None) -> EnergyConstants | None:
    """The constants of ``device``, or None (the TDP model then answers)."""
    return (_builtin() if table is None else table).get(device)


def model_name(device: str, table: dict | None = None) -> str:
    """``per-op`` when ``device`` has constants, else ``tdp`` (the fallback)."""
    return "per-op" if constants(device, table) is not None else "tdp"


def _dynamic(estimate, c: EnergyConstants, tdp: float):
    """J the rows add beyond static power: ``sum(e_flop * F + e_byte * B + e_link * L)``."""
    e = 0.0
    for row in estimate.rows:
        peak = float(estimate.slot_peaks.get(row.slot, 0.0))
        e = e + c.e_flop(tdp, peak, row.slot) * np.asarray(row.flops, dtype=float) \
            + c.e_byte * np.asarray(row.bytes, dtype=float) \
            + c.e_link * np.asarray(getattr(row, "link_bytes", 0.0), dtype=float)
    return e


def limited_time(t, dynamic, c: EnergyConstants, tdp: float):
    """The step's time under the power limit, ``max(t, E_dyn / (TDP - P_static))``: work
    whose energy would draw more than TDP over ``t`` makes the board lower its clock until
    it does not (unchanged where the device gives no TDP above its static power)."""
    t = np.asarray(t, dtype=float)
    headroom = tdp - c.p_busy
    return np.maximum(t, np.asarray(dynamic, dtype=float) / headroom) if headroom > 0.0 else t


def step_time(estimate, table: dict | None = None):
    """Seconds of a circuit estimate's step under the power limit (:func:`limited_time`);
    the estimate's own time where the device has no per-op constants."""
    t = np.asarray(estimate.time, dtype=float)
    tdp = float(estimate.tdp)
    c = constants(estimate.device, table)
    return t if c is None else limited_time(t, _dynamic(estimate, c, tdp), c, tdp)


def step_energy(estimate, table: dict | None = None):
    """Joules of one device for a circuit estimate (float, or an array over its contexts);
    its rows hold all instances: ``P_static * t' + E_dyn`` over the power-limited time
    ``t'`` (:func:`limited_time`), so average power never exceeds TDP. Without constants:
    the estimate's own TDP-model energy."""
    t = np.asarray(estimate.time, dtype=float)
    tdp = float(estimate.tdp)
    c = constants(estimate.device, table)
    if c is None:
        return np.asarray(estimate.energy, dtype=float) if tdp > 0.0 else t * 0.0
    dyn = _dynamic(estimate, c, tdp)
    return c.p_busy * limited_time(t, dyn, c, tdp) + dyn


def steps_energy(estimate, host_time: float = 0.0, table: dict | None = None) -> float:
    """Joules of one device over a step plus ``host_time`` seconds of host work at
    ``P_idle`` (the TDP model's idle floor ``0.3 * TDP`` where the device has no constants)."""
    from .engine.calibration import energy as _tdp_energy

    e = float(np.sum(step_energy(estimate, table)))
    c = constants(estimate.device, table)
    idle = _tdp_energy(float(estimate.tdp), 0.0, host_time) if c is None \
        else c.p_idle * host_time
    return e + idle


def serving_times(est, table: dict | None = None) -> tuple[float, float | None]:
    """``(e2e, mean ITL)`` in s of a serving estimate with its device steps under the power
    limit (:func:`step_time`; the host time unchanged, beside each step or, for an engine that
    overlaps it, under it); the estimate's own without per-op constants."""
    if not est.parts:
        return float(est.e2e), None
    pre, dec, steps, _ = est.parts
    if constants(pre.device, table) is None:
        itl = est.itl_ms
        return float(est.e2e), None if itl is None else itl * 1e-3
    e2e = float(step_time(pre, table)) + est.prefill_host.host_time
    itl = None
    if dec is not None and steps:
        t = np.broadcast_to(step_time(dec, table), (steps,))
        h = est.decode_host.host_time
        steps_t = np.maximum(t, h) if est.host_overlap else t + h
        e2e += float(np.sum(steps_t))
        itl = float(np.mean(steps_t))
    return e2e, itl


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
    return est.tp * (e + c.p_busy * host_time)
