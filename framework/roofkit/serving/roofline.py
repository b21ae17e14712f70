"""The constants a serving estimate runs on, on one of two bases that are never mixed silently.

``datasheet``: the device spec's ceilings (memory bandwidth, dense peak per compute slot,
interconnect latency and bandwidth) and its modeling overheads (per-kernel launch, per-step
dispatch). ``calibrated``: the measured achievable values of ``specs/calibration`` (STREAM
bandwidth, best GEMM throughput per slot with its efficiency against GEMM size, FlashAttention
throughput, fitted all-reduce models, the host's kernel-launch cost); a constant without a
measurement keeps its datasheet value, and :attr:`Roofline.provenance` says so.

Time of a kernel of ``F`` FLOPs and ``B`` bytes on slot ``s``, with ``c = F / (P_s *
eta_s(F_gemm))`` and ``m = B / BW``:

    t = (c^p + m^p)^(1/p)

``eta_s`` is the measured throughput at a GEMM of ``F_gemm`` FLOPs over the sweep's best,
interpolated in log FLOPs (1 on the datasheet basis and where no sweep exists). ``p`` says
how far a kernel overlaps memory traffic with math: the datasheet roofline takes perfect
overlap, ``p = inf``, i.e. ``t = max(c, m)``; the calibrated basis solves ``p`` from a GEMM
measured where ``c`` and ``m`` are about equal (``[mixed]`` in the calibration spec), whose
measured time lies between ``max(c, m)`` (p = inf) and ``c + m`` (p = 1).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import attrs
import numpy as np

from ..errors import RoofkitError
from .collective import AllReduce, Ring, fit

BASES = ("datasheet", "calibrated")

#: fp16 and bf16 run on the same tensor-core datapath at the same datasheet rate; a
#: measurement of one stands for the other when the device lists equal peaks for both.
SAME_RATE = {"fp16": "bf16", "bf16": "fp16"}


@attrs.frozen
class Roofline:
    """A device's constants on one basis, with the source of each."""

    device: object
    basis: str
    bandwidth: float
    peaks: Mapping[str, float]
    curves: Mapping[str, tuple[np.ndarray, np.ndarray]]
    attention_peak: float | None
    allreduce: AllReduce | None
    launch: float
    step_dispatch: float
    provenance: Mapping[str, str]
    overlap: float = math.inf

    def combine(self, compute, memory):
        """``(c^p + m^p)^(1/p)``; ``max(c, m)`` when ``p`` is infinite."""
        c = np.asarray(compute, dtype=float)
        m = np.asarray(memory, dtype=float)
        if math.isinf(self.overlap):
            return np.maximum(c, m)
        p = self.overlap
        top = np.maximum(np.maximum(c, m), 1e-300)
        return top * ((c / top) ** p + (m / top) ** p) ** (1.0 / p)

    def slot(self, precision) -> tuple[str, str]:
        """The compute slot a matmul at ``precision`` runs on, and a note when it falls back.

        Integer weight formats are weight-only quantization (dequantized into 16-bit GEMMs):
        they run on the bf16 slot. Float formats take their own slot, else their fallback.
        """
        chain = ("bf16", "fp16", "fp32") if precision.kind == "int" else precision.slots()
        for s in chain:
            if s in self.peaks:
                note = "" if s == chain[0] else (
                    f"{precision.name} runs on the {s} slot of {self.device.name} "
                    f"(no {chain[0]} peak)")
                return s, note
        raise RoofkitError(f"{self.device.name} has no compute slot for {precision.name} "
                           f"(tried {', '.join(chain)})")

    def efficiency(self, slot: str, gemm_flops):
        """Measured GEMM throughput at ``gemm_flops`` over the sweep's best (1 without one)."""
        curve = self.curves.get(slot)
        if curve is None:
            return 1.0
        x = np.log(np.maximum(np.asarray(gemm_flops, dtype=float), 1.0))
        return np.interp(x, curve[0], curve[1])

    def matmul_rate(self, slot: str, gemm_flops):
        return self.peaks[slot] * self.efficiency(slot, gemm_flops)

    def allreduce_time(self, message, n: int):
        if n <= 1:
            return 0.0 * np.asarray(message, dtype=float)
        if self.allreduce is None:
            raise RoofkitError(f"{self.device.name} has no [interconnect]; tensor parallelism "
                               "needs a device-to-device link")
        return self.allreduce.time(message, n)

    def describe(self) -> str:
        """One line: the basis and what it rests on."""
        if self.basis == "datasheet":
            return f"datasheet ceilings of {self.device.name} (device spec)"
        host = ("launch", "step")
        measured = sorted(k for k, v in self.provenance.items()
                          if not v.startswith("datasheet") and k not in host)
        host_part = "; host: measured kernel launch" if not self.provenance.get(
            "launch", "datasheet").startswith("datasheet") else ""
        if not measured:
            return (f"calibrated basis, but no measurement of {self.device.name} in "
                    f"specs/calibration: its constants are the datasheet's{host_part}")
        return (f"calibrated: measured {', '.join(measured)} for {self.device.name}; other "
                f"constants from the datasheet{host_part}")


def _calibrations(registry):
    cats = getattr(registry, "catalogues", {})
    return cats.get("calibration", {}) if cats else {}


def device_calibration(registry, device):
    """The calibration spec measuring ``device`` (None when there is none)."""
    for cal in _calibrations(registry).values():
        if cal.device == device.name:
            return cal
    return None


def host_calibration(registry) -> dict:
    """Host tables merged over every host calibration (no ``device``): launch and engines."""
    launch, engines = {}, {}
    for cal in _calibrations(registry).values():
        if cal.device is None:
            launch.update(cal.launch)
            engines.update(cal.engines)
    return {"launch": launch, "engines": engines}


def _datasheet_allreduce(device) -> AllReduce | None:
    ic = device.interconnect
    if ic is None:
        return None
    ring = Ring(ic.latency or 0.0, ic.bandwidth, "datasheet link")
    return AllReduce({"datasheet": {2: ring}}, "datasheet")


def _curve(points: list[tuple[float, float]]):
    xs = np.log([f for f, _ in points])
    top = max(r for _, r in points)
    return xs, np.array([r / top for _, r in points])


def build(device, basis: str, registry) -> Roofline:
    """The roofline of ``device`` on ``basis`` (``datasheet`` or ``calibrated``)."""
    if basis not in BASES:
        raise RoofkitError(f"unknown basis {basis!r}; one of {', '.join(BASES)}")
    prov = {"memory.bandwidth": "datasheet"}
    prov.update({f"compute.{s}": "datasheet" for s in device.compute})
    if device.interconnect is not None:
        prov["interconnect"] = "datasheet"
    prov["launch"] = "datasheet: device overheads.launch"
    sheet = Roofline(device=device, basis=basis, bandwidth=device.memory.bandwidth,
                     peaks=dict(device.compute), curves={}, attention_peak=None,
                     allreduce=_datasheet_allreduce(device), launch=device.overheads.launch,
                     step_dispatch=device.overheads.dispatch, provenance=prov)
    if basis == "datasheet":
        return sheet
    cal = device_calibration(registry, device)
    host = host_calibration(registry)
    bandwidth, peaks, curves = sheet.bandwidth, dict(sheet.peaks), {}
    attention, allreduce = None, sheet.allreduce
    launch, dispatch = sheet.launch, 0.0
    if "kernel" in host["launch"]:
        launch = host["launch"]["kernel"].value
        prov["launch"] = f"calibration host: launch.kernel ({host['launch']['kernel'].source})"
    else:
        dispatch = sheet.step_dispatch
    if cal is not None:
        if cal.bandwidth is not None:
            bandwidth = cal.bandwidth.value
            prov["memory.bandwidth"] = f"calibration {cal.name}: bandwidth ({cal.bandwidth.source})"
        def stands_for(slot, table):
            """The measured slot of ``table`` that stands for ``slot``: its own, else its
            same-rate twin when the datasheet lists equal peaks for both (None: none)."""
            if slot in table:
                return slot
            twin = SAME_RATE.get(slot)
            if twin in table and twin in device.compute and \
                    math.isclose(device.compute[slot], device.compute[twin]):
                return twin
            return None

        for slot in device.compute:
            src = stands_for(slot, cal.compute)
            if src is not None:
                peaks[slot] = cal.compute[src].value
                prov[f"compute.{slot}"] = (f"calibration {cal.name}: compute.{src} "
                                           f"({cal.compute[src].source})")
            gsrc = stands_for(slot, cal.gemm)
            if gsrc is not None:
                points = cal.gemm[gsrc].points()
                if points:
                    curves[slot] = _curve(points)
                    prov[f"gemm.{slot}"] = (f"calibration {cal.name}: gemm.{gsrc} "
                                            f"({cal.gemm[gsrc].source})")
        if cal.attention:
            key = sorted(cal.attention)[0]
            attention = cal.attention[key].value
            prov["attention"] = f"calibration {cal.name}: attention.{key} " \
                                f"({cal.attention[key].source})"
        if cal.allreduce:
            allreduce = _measured_allreduce(cal, device)
            prov["interconnect"] = "calibration {}: allreduce {} ({})".format(
                cal.name, ", ".join(sorted(cal.allreduce)),
                "; ".join(sorted({m.source for m in cal.allreduce.values()})))
    evolved = attrs.evolve(device, memory=attrs.evolve(device.memory, bandwidth=bandwidth),
                           compute=peaks)
    out = Roofline(device=evolved, basis=basis, bandwidth=bandwidth, peaks=peaks, curves=curves,
                   attention_peak=attention, allreduce=allreduce, launch=launch,
                   step_dispatch=dispatch, provenance=prov)
    if cal is not None and cal.mixed:
        ps = [overlap_exponent(out, slot, row) for slot, row in sorted(cal.mixed.items())
              if slot in peaks]
        ps = [p for p in ps if p is not None]
        if ps:
            prov["overlap"] = "calibration {}: mixed {} ({})".format(
                cal.name, ", ".join(sorted(cal.mixed)),
                "; ".join(sorted({m.source for m in cal.mixed.values()})))
            out = attrs.evolve(out, overlap=float(np.mean(ps)), provenance=prov)
    return out


def overlap_exponent(roof: Roofline, slot: str, row) -> float | None:
    """The ``p`` with ``(c^p + m^p)^(1/p)`` equal to the measured time of ``row`` (a
    :class:`~roofkit.schema.calibration.MixedGemm`), by bisection on ``1 <= p <= 64``;
    infinite when the measurement is at or below ``max(c, m)``, 1 at or above ``c + m``."""
    dims = row.dims()
    if dims is None:
        return None
    m_, n_, k_ = dims
    flops = 2.0 * m_ * n_ * k_
    nbytes = m_ * k_ * row.a_bytes + k_ * n_ * row.b_bytes + m_ * n_ * row.c_bytes
    c = float(flops / roof.matmul_rate(slot, flops))
    m = nbytes / roof.bandwidth
    t = flops / row.throughput
    if t <= max(c, m):
        return math.inf
    if t >= c + m:
        return 1.0

    def f(p):
        return (c ** p + m ** p) ** (1.0 / p) - t

    lo, hi = 1.0, 64.0
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        if f(mid) > 0:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def _measured_allreduce(cal, device) -> AllReduce:
    """Ring models fitted to each measured algorithm, per group size."""
    best_bus = 0.0
    for m in cal.allreduce.values():
        if m.bus_bandwidth:
            size = max(m.bus_bandwidth, key=int)
            best_bus = max(best_bus, m.bus_bandwidth[size])
    if best_bus <= 0 and device.interconnect is not None:
        best_bus = device.interconnect.bandwidth
    models: dict[str, dict[int, Ring]] = {}
    for key, m in sorted(cal.allreduce.items()):
        points = m.points()
        if not points:
            continue
        algo = m.algorithm or key
        models.setdefault(algo, {})[m.devices] = fit(points, m.devices, best_bus, algo)
    return AllReduce(models, "calibrated")
