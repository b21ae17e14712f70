"""Device rooflines: the constants a node is costed against, and the basis they rest on.

``basis="datasheet"`` takes the device spec's ceilings: dense peaks per compute slot, memory
bandwidth, the ``[interconnect]`` latency and bandwidth, the modeling overheads (kernel
launch, step dispatch). It is a pure roofline: no GEMM-size efficiency, perfect overlap of
compute and memory (``p = inf``), attention at the slot's peak.

``basis="calibrated"`` takes the measured achievable constants of ``specs/calibration/``
(one file per device, ``device = "<key>"``, and host files without one), each with its
source; a constant without a measurement keeps its datasheet value and the basis says so:

==================  ==========================================================================
bandwidth           ``[bandwidth]``: a STREAM triad
peaks per slot      ``[compute.<slot>]``: the best GEMM of a shape sweep (fp16 and bf16
                    stand for each other where the datasheet lists equal peaks)
GEMM efficiency     ``[gemm.<slot>]``: throughput against GEMM size (:mod:`.calibrated`)
overlap ``p``       solved from ``[mixed.<slot>]``, a GEMM where compute and memory are equal
attention           ``[attention.<name>]``: FlashAttention throughput, for prefill
link                ``[allreduce.<name>]``: each algorithm fitted to the ring (:mod:`.collective`)
kernel launch       the device calibration's ``[launch.kernel]``, else the host's
==================  ==========================================================================

A precision whose slot the device lacks (NVFP4 on an H100) runs at the first slot of its
fallback chain the device has (:meth:`roofkit.types.Precision.slots`); the roofline records
the substitution as a note for the result's basis.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path

import attrs

from ..errors import SpecError
from ..types import Precision
from .calibrated import combine, efficiency, gemm_curve, overlap_exponent
from .collective import LinkModel, Ring, curve, fit

BASES = ("datasheet", "calibrated")


@attrs.frozen
class DeviceRoofline:
    """The constants one device is costed with, and where they come from.

    ``peaks`` maps a compute slot to FLOP/s; ``bandwidth`` is B/s of primary memory;
    ``launch`` s per kernel; ``dispatch`` s per step (host); ``graph_node`` s of device time
    per kernel of a replayed CUDA graph beyond its roofline time (0: not measured).
    ``curves`` maps a slot to its GEMM-efficiency curve, ``overlap`` is the ``p`` of ``(c^p
    + m^p)^(1/p)`` (infinite: the roofline's max), ``attention_peak`` the measured prefill
    attention throughput (None: the slot's peak), ``link`` the interconnect (None: the
    device has none). ``basis`` names the sources and what was derived; ``measured`` is true
    only for constants measured on this device class; ``provenance`` gives the source of
    each constant.
    """

    device: str
    peaks: Mapping[str, float]
    bandwidth: float
    launch: float
    vector_slot: str
    basis: str
    measured: bool
    sources: tuple[str, ...] = ()
    derived: tuple[str, ...] = ()
    name: str = "datasheet"
    dispatch: float = 0.0
    curves: Mapping[str, tuple] = attrs.field(factory=dict)
    overlap: float = math.inf
    attention_peak: float | None = None
    link: LinkModel | None = None
    max_devices: int = 1
    provenance: Mapping[str, str] = attrs.field(factory=dict)
    graph_node: float = 0.0

    @property
    def bandwidth_measured(self) -> bool:
        """Whether the memory bandwidth is a measurement (the calibrated range of the
        prediction intervals: a memory-bound estimate rests on it)."""
        return self.measured and self.provenance.get("memory.bandwidth", "").startswith(
            "calibration")

    def slot_for(self, precision: Precision) -> tuple[str, float, str | None]:
        """(slot, peak, note): the precision's own slot, else its first fallback present.

        The note is None when the own slot is used, else a sentence for the basis.
        """
        chain = precision.slots()
        for slot in chain:
            if slot in self.peaks:
                if slot == precision.slot:
                    return slot, self.peaks[slot], None
                return slot, self.peaks[slot], (
                    f"{precision.name} on {self.device}: no {precision.slot} peak; runs at the "
                    f"{slot} peak {self.peaks[slot] / 1e12:.4g} TFLOP/s (fallback chain "
                    f"{', '.join(precision.fallback)})")
        raise SpecError(f"device {self.device!r} has none of the compute slots "
                        f"{', '.join(chain)} that {precision.name} can run on")

    def vector_peak(self) -> float:
        return self.peaks[self.vector_slot]

    def efficiency(self, slot: str, gemm_flops):
        """Measured GEMM throughput at ``gemm_flops`` over the sweep's best (1 without one)."""
        return efficiency(self.curves.get(slot), gemm_flops)

    def matmul_rate(self, slot: str, gemm_flops):
        """``P_slot * eta_slot(gemm_flops)``, FLOP/s."""
        return self.peaks[slot] * self.efficiency(slot, gemm_flops)

    def combine(self, c, m):
        """``(c^p + m^p)^(1/p)`` at this roofline's overlap ``p``."""
        return combine(c, m, self.overlap)


def _datasheet(device) -> DeviceRoofline:
    prov = device.provenance
    used = [f"compute.{k}" for k in device.compute] + ["memory.bandwidth", "overheads.launch"]
    sources, derived = [], []
    for path in used:
        entry = prov.get(path) or prov.get(path.split(".")[0]) or ""
        head = entry.split(":", 1)[0].strip()
        if head == "derived":
            derived.append(path)
        elif head in device.sources and head not in sources:
            sources.append(head)
    text = f"datasheet ceiling for {device.name} (sources {', '.join(sources) or 'none named'}"
    if derived:
        text += f"; derived, not published: {', '.join(derived)}"
    text += ")"
    vector = "fp32" if "fp32" in device.compute else device.default_slot
    provenance = {"memory.bandwidth": "datasheet",
                  **{f"compute.{s}": "datasheet" for s in device.compute},
                  "launch": "datasheet: device overheads.launch",
                  "dispatch": "datasheet: device overheads.dispatch"}
    ic = device.interconnect
    link = None
    if ic is not None:
        link = LinkModel({"datasheet": {2: Ring(ic.latency or 0.0, ic.bandwidth,
                                                "interconnect")}}, "datasheet")
        provenance["interconnect"] = "datasheet"
    return DeviceRoofline(device=device.name, peaks=dict(device.compute),
                          bandwidth=device.memory.bandwidth, launch=device.overheads.launch,
                          vector_slot=vector, basis=text, measured=False,
                          sources=tuple(sources), derived=tuple(derived), name="datasheet",
                          dispatch=device.overheads.dispatch, link=link,
                          max_devices=1 if ic is None else ic.max_devices,
                          provenance=provenance)


#: fp16 and bf16 run on one tensor-core datapath: a measurement of one stands for the other
#: when the datasheet lists equal peaks for both.
_SAME_RATE = {"fp16": "bf16", "bf16": "fp16"}


def _catalogue(registry):
    cats = getattr(registry, "catalogues", None) if registry is not None else None
    return cats.get("calibration") if cats else None


def _device_calibration(registry, device):
    """(the calibration measuring ``device``, its origin), or (None, None)."""
    cat = _catalogue(registry)
    for key in cat or ():
        c = cat[key]
        target = getattr(c, "device", None)
        if target is not None and target in (device.name, *device.aliases):
            return c, cat.origin(key)
    return None, None


def host_calibration(registry) -> dict:
    """Host tables merged over every host calibration (no ``device``): ``launch`` (kernel
    launch costs) and ``engines`` (per-step engine profiles)."""
    launch, engines = {}, {}
    cat = _catalogue(registry)
    for key in cat or ():
        c = cat[key]
        if getattr(c, "device", None) is None:
            launch.update(c.launch)
            engines.update(c.engines)
    return {"launch": launch, "engines": engines}


def _value(m):
    return getattr(m, "value", m)


def _stands_for(slot, table, sheet_peaks):
    """The measured slot of ``table`` that stands for ``slot``: its own, else its same-rate
    twin where the datasheet lists equal peaks for both (None: none)."""
    if slot in table:
        return slot
    twin = _SAME_RATE.get(slot)
    if twin in table and twin in sheet_peaks and \
            math.isclose(sheet_peaks[slot], sheet_peaks[twin]):
        return twin
    return None


def _measured_link(cal, device) -> LinkModel:
    """Ring models fitted to each measured all-reduce algorithm, per group size."""
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
        ring = fit(points, m.devices, best_bus, algo)
        models.setdefault(algo, {})[m.devices] = curve(points, m.devices, ring)
    return LinkModel(models, "calibrated")


#: the basis that names the default rule: :func:`default_basis` of the device
AUTO = "auto"


def resolve_basis(basis, device, registry=None) -> str:
    """``basis`` itself, or for ``"auto"`` (or None) the :func:`default_basis` of ``device``
    (a name, path or spec)."""
    if basis not in (None, AUTO):
        return basis
    from ..registry import resolve

    reg = resolve(registry)
    return default_basis(reg.device(device), reg)


def default_basis(device, registry=None) -> str:
    """The one default rule of every command: ``calibrated`` where ``device`` has measured
    constants in ``specs/calibration/``, else ``datasheet``."""
    return "calibrated" if device_roofline(device, "calibrated", registry).measured \
        else "datasheet"


def device_roofline(device, basis: str = "datasheet", registry=None) -> DeviceRoofline:
    """The roofline of ``device`` on ``basis`` ("datasheet" or "calibrated"); cached per
    registry (the constants do not change while a registry lives)."""
    if basis not in BASES:
        raise SpecError(f"unknown basis {basis!r}; one of {', '.join(BASES)}")
    if registry is None or not hasattr(registry, "_memo"):
        return _build(device, basis, registry)
    key = ("device-roofline", id(device), basis)
    hit = registry._memo.get(key)
    if hit is not None and hit[0] is device:
        return hit[1]
    roof = _build(device, basis, registry)
    registry._memo[key] = (device, roof)
    return roof


def _build(device, basis, registry) -> DeviceRoofline:
    sheet = _datasheet(device)
    if basis == "datasheet":
        return sheet
    prov = dict(sheet.provenance)
    host = host_calibration(registry)
    launch = sheet.launch
    host_note = ""
    if "kernel" in host["launch"]:
        m = host["launch"]["kernel"]
        launch = m.value
        prov["launch"] = f"calibration host: launch.kernel ({m.source})"
        host_note = "; host: measured kernel launch"
    cal, origin = _device_calibration(registry, device)
    if cal is None:
        return attrs.evolve(sheet, name="calibrated", launch=launch, provenance=prov,
                            basis=f"no calibration for {device.name} in specs/calibration/ "
                            "(datasheet only: no measurement of it is published in the sources "
                            f"read), so {sheet.basis}{host_note}")
    peaks = dict(sheet.peaks)
    measured_keys, sources = [], []

    def take(key, m, what):
        measured_keys.append(key)
        src = getattr(m, "source", "")
        if src and src not in sources:
            sources.append(src)
        prov[key if key != "bandwidth" else "memory.bandwidth"] = \
            f"calibration {cal.name}: {what} ({src})"

    if "kernel" in cal.launch:  # measured on this device (roofkit calibrate) beats the host's
        launch = cal.launch["kernel"].value
        take("launch", cal.launch["kernel"], "launch.kernel")
        prov["launch"] = f"calibration {cal.name}: launch.kernel ({cal.launch['kernel'].source})"
    graph_node = 0.0
    if "graph_node" in cal.launch:
        graph_node = cal.launch["graph_node"].value
        take("graph_node", cal.launch["graph_node"], "launch.graph_node")
    bandwidth = sheet.bandwidth
    if cal.bandwidth is not None:
        bandwidth = _value(cal.bandwidth)
        take("bandwidth", cal.bandwidth, "bandwidth")
    curves = {}
    for slot in list(peaks):
        src = _stands_for(slot, cal.compute, sheet.peaks)
        if src is not None:
            peaks[slot] = _value(cal.compute[src])
            take(f"compute.{slot}", cal.compute[src], f"compute.{src}")
        gsrc = _stands_for(slot, cal.gemm, sheet.peaks)
        if gsrc is not None and cal.gemm[gsrc].points():
            curves[slot] = gemm_curve(cal.gemm[gsrc].points())
            take(f"gemm.{slot}", cal.gemm[gsrc], f"gemm.{gsrc}")
    attention = None
    if cal.attention:
        akey = sorted(cal.attention)[0]
        attention = _value(cal.attention[akey])
        take("attention", cal.attention[akey], f"attention.{akey}")
    link = sheet.link
    if cal.allreduce:
        link = _measured_link(cal, device)
        measured_keys.append("interconnect")
        prov["interconnect"] = "calibration {}: allreduce {} ({})".format(
            cal.name, ", ".join(sorted(cal.allreduce)),
            "; ".join(sorted({m.source for m in cal.allreduce.values()})))
        for m in cal.allreduce.values():
            if m.source not in sources:
                sources.append(m.source)
    roof = DeviceRoofline(
        device=device.name, peaks=peaks, bandwidth=bandwidth, launch=launch,
        vector_slot=sheet.vector_slot, basis="", measured=True, sources=tuple(sources),
        derived=sheet.derived, name="calibrated", dispatch=sheet.dispatch, curves=curves,
        attention_peak=attention, link=link, max_devices=sheet.max_devices, provenance=prov,
        graph_node=graph_node)
    overlap = math.inf
    if cal.mixed:
        ps = [_overlap(roof, slot, row) for slot, row in sorted(cal.mixed.items())
              if slot in peaks]
        ps = [p for p in ps if p is not None]
        if ps:
            overlap = sum(ps) / len(ps)
            measured_keys.append("overlap")
            prov["overlap"] = "calibration {}: mixed {} ({})".format(
                cal.name, ", ".join(sorted(cal.mixed)),
                "; ".join(sorted({m.source for m in cal.mixed.values()})))
    kept = [f"compute.{s}" for s in peaks if f"compute.{s}" not in measured_keys]
    if "bandwidth" not in measured_keys:
        kept.insert(0, "bandwidth")
    where = f"calibration/{Path(str(origin)).name}"
    text = (f"measured achievable for {device.name} ({where}: {', '.join(measured_keys)}; "
            f"{len(sources)} source(s))")
    if not math.isinf(overlap):
        text += f"; compute/memory overlap p = {overlap:.3g}"
    if kept:
        text += f"; datasheet ceiling kept for {', '.join(kept)}"
    text += host_note
    return attrs.evolve(roof, basis=text, overlap=overlap, provenance=prov)


def _overlap(roof: DeviceRoofline, slot: str, row) -> float | None:
    """The overlap exponent that reproduces the mixed-bound GEMM ``row`` on ``roof``."""
    dims = row.dims()
    if dims is None:
        return None
    m_, n_, k_ = dims
    flops = 2.0 * m_ * n_ * k_
    nbytes = m_ * k_ * row.a_bytes + k_ * n_ * row.b_bytes + m_ * n_ * row.c_bytes
    c = float(flops / roof.matmul_rate(slot, flops))
    return overlap_exponent(c, nbytes / roof.bandwidth, flops / row.throughput)
