"""Device rooflines: the ceilings a node is costed against, and the basis they rest on.

``basis="datasheet"`` takes the device spec's dense peaks per compute slot and its memory
bandwidth: ceilings, not predictions. ``basis="calibrated"`` takes measured achievable
constants from ``specs/calibration/`` when one is registered for the device (an entry with
``device`` or ``devices``, ``bandwidth``, ``compute`` per slot and, optionally, ``launch``,
``sources`` and ``measured``); without one the datasheet is used and the basis says so.

A precision whose slot the device lacks (NVFP4 on an H100) runs at the first slot of its
fallback chain the device has (:meth:`roofkit.types.Precision.slots`); the roofline records
the substitution as a note for the result's basis.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import attrs

from ..errors import SpecError
from ..types import Precision

BASES = ("datasheet", "calibrated")


@attrs.frozen
class DeviceRoofline:
    """The constants one device is costed with, and where they come from.

    ``peaks`` maps a compute slot to FLOP/s; ``bandwidth`` is B/s of primary memory;
    ``launch`` s per kernel. ``basis`` names the sources and what was derived; ``measured``
    is true only for constants measured on this device class.
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
    return DeviceRoofline(device=device.name, peaks=dict(device.compute),
                          bandwidth=device.memory.bandwidth, launch=device.overheads.launch,
                          vector_slot=vector, basis=text, measured=False,
                          sources=tuple(sources), derived=tuple(derived))


#: fp16 and bf16 run on one tensor-core datapath: a measurement of one stands for the other
#: when the datasheet lists equal peaks for both.
_SAME_RATE = {"fp16": "bf16", "bf16": "fp16"}


def _calibrations(registry, device):
    """(device calibration, its origin, host calibration) from ``specs/calibration/``."""
    cat = registry.catalogues.get("calibration") if registry is not None else None
    dev = origin = host = None
    for key in cat or ():
        c = cat[key]
        target = getattr(c, "device", None)
        if target is None:
            host = host or c
        elif target in (device.name, *device.aliases) and dev is None:
            dev, origin = c, cat.origin(key)
    return dev, origin, host


def _value(m):
    return getattr(m, "value", m)


def device_roofline(device, basis: str = "datasheet", registry=None) -> DeviceRoofline:
    """The roofline of ``device`` on ``basis`` ("datasheet" or "calibrated").

    Calibrated: bandwidth and per-slot peaks measured on this device class replace the
    datasheet's; a slot without a measurement keeps its ceiling and the basis lists it;
    the kernel launch is the host's measured ``launch.kernel``.
    """
    if basis not in BASES:
        raise ValueError(f"basis must be one of {', '.join(BASES)}, got {basis!r}")
    sheet = _datasheet(device)
    if basis == "datasheet":
        return sheet
    cal, origin, host = _calibrations(registry, device)
    if cal is None:
        return attrs.evolve(sheet, basis=f"no calibration for {device.name} in "
                            f"specs/calibration/, so {sheet.basis}")
    peaks = dict(sheet.peaks)
    measured_keys, sources = [], []

    def take(key, m):
        measured_keys.append(key)
        src = getattr(m, "source", "")
        if src and src not in sources:
            sources.append(src)

    bandwidth = sheet.bandwidth
    if getattr(cal, "bandwidth", None) is not None:
        bandwidth = _value(cal.bandwidth)
        take("bandwidth", cal.bandwidth)
    comp = dict(getattr(cal, "compute", {}) or {})
    for slot in list(peaks):
        m = comp.get(slot)
        twin = _SAME_RATE.get(slot)
        if m is None and twin in comp and sheet.peaks.get(twin) == sheet.peaks[slot]:
            m = comp[twin]
        if m is not None:
            peaks[slot] = _value(m)
            take(f"compute.{slot}", m)
    launch = sheet.launch
    if host is not None and "kernel" in (getattr(host, "launch", {}) or {}):
        launch = _value(host.launch["kernel"])
        take("launch.kernel (host)", host.launch["kernel"])
    kept = [f"compute.{s}" for s in peaks if f"compute.{s}" not in measured_keys]
    if "bandwidth" not in measured_keys:
        kept.insert(0, "bandwidth")
    where = f"calibration/{Path(str(origin)).name}"
    text = (f"measured achievable for {device.name} ({where}: {', '.join(measured_keys)}; "
            f"{len(sources)} source(s))")
    if kept:
        text += f"; datasheet ceiling kept for {', '.join(kept)}"
    return DeviceRoofline(device=device.name, peaks=peaks, bandwidth=bandwidth, launch=launch,
                          vector_slot=sheet.vector_slot, basis=text, measured=True,
                          sources=tuple(sources), derived=sheet.derived)
