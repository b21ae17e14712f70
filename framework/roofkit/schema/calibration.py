"""Calibration specs: measured achievable ceilings, kept apart from datasheet figures.

A calibration file either measures one device (``device = "h100-sxm"``: achievable memory
bandwidth, matrix throughput per compute slot and its dependence on GEMM size, attention
throughput, all-reduce latency and bus bandwidth) or the host (``device`` left out: kernel
launch cost, per-step engine overheads). Every number is a :class:`Measured` table that
carries the URL it was read from, where in that source, and notes; nothing is typed
without one. A file written by ``roofkit calibrate`` measured here: its sources say
``roofkit calibrate ...`` and its ``[provenance]`` records the command, date, host, backend
and library versions. The circuit's ``calibrated`` basis (``roofkit.circuit.roofline``, and so
``roofkit.serve`` and ``roofkit.sweep``) reads these; the ``datasheet``
basis never does.
"""

from __future__ import annotations

import re

import attrs

from .common import check_key
from .device import SLOTS
from .fields import count, keyed, number, positive, quantities, quantity

#: bytes per element of a GEMM operand: up to fp64's 8
ELEMENT_BYTES = positive(8.0)

_SHAPE = re.compile(r"^\s*(\d+)\s*x\s*(\d+)\s*x\s*(\d+)\s*$")
_URL = re.compile(r"^https?://\S+$")
_LOCAL = re.compile(r"^roofkit calibrate\b")
#: what a calibration measured by ``roofkit calibrate`` records about its run
LOCAL_PROVENANCE = ("command", "date", "host", "backend", "versions")


@attrs.frozen
class Measured:
    """Where a measured number comes from: the URL, the place in it, and caveats."""

    source: str
    where: str = ""
    notes: str = ""


@attrs.frozen
class MeasuredBandwidth(Measured):
    """An achievable bandwidth (bytes per second), e.g. a STREAM triad."""

    value: float = quantity("bandwidth")


@attrs.frozen
class MeasuredThroughput(Measured):
    """An achievable throughput (FLOP per second), e.g. the best GEMM of a shape sweep."""

    value: float = quantity("throughput")


@attrs.frozen
class MeasuredTime(Measured):
    """A measured time, e.g. the host cost of one kernel launch."""

    value: float = quantity("time", high=1.0)


@attrs.frozen
class GemmSweep(Measured):
    """GEMM throughput measured at several shapes ``"MxNxK"``: efficiency against size.

    The estimator reads it as throughput against the FLOPs of one GEMM, ``2*M*N*K``,
    interpolated in log FLOPs and held flat outside the measured range.
    """

    throughput: dict[str, float] = quantities("throughput")

    def points(self) -> list[tuple[float, float]]:
        """``(flops of one GEMM, measured FLOP/s)`` sorted by FLOPs."""
        out = []
        for shape, rate in self.throughput.items():
            m = _SHAPE.match(shape)
            if m:
                a, b, c = (float(g) for g in m.groups())
                out.append((2.0 * a * b * c, rate))
        return sorted(out)


@attrs.frozen
class MixedGemm(Measured):
    """One GEMM measured where neither compute nor memory dominates (``"MxNxK"``, its
    throughput, and the element sizes of A, B and C). From it the estimator derives how
    much a kernel overlaps its memory traffic with its math: the exponent ``p`` of
    ``t = (t_compute^p + t_memory^p)^(1/p)`` that reproduces the measured time (p = 1: no
    overlap, the sum; p -> infinity: perfect overlap, the roofline's max)."""

    shape: str = ""
    throughput: float = quantity("throughput")
    a_bytes: float = number(ELEMENT_BYTES, default=2.0)
    b_bytes: float = number(ELEMENT_BYTES, default=2.0)
    c_bytes: float = number(ELEMENT_BYTES, default=2.0)

    def dims(self) -> tuple[float, float, float] | None:
        m = _SHAPE.match(self.shape)
        return tuple(float(g) for g in m.groups()) if m else None


@attrs.frozen
class AllReduceMeasurement(Measured):
    """All-reduce over ``devices`` devices with one ``algorithm`` (``nccl``, ``custom``…),
    measured at several message sizes (keys: bytes). Either the time (``time``) or the
    nccl-tests bus bandwidth (``bus_bandwidth``, busbw = algbw * 2(n-1)/n) per size."""

    algorithm: str = ""
    devices: int = count(default=2, minimum=2, maximum=100_000)
    time: dict[str, float] = quantities("time")
    bus_bandwidth: dict[str, float] = quantities("bandwidth")

    def points(self) -> list[tuple[float, float]]:
        """``(message bytes, seconds)`` sorted by size; bus bandwidth read as
        t = 2(n-1)/n * S / busbw."""
        n = self.devices
        out = [(float(s), t) for s, t in self.time.items() if s.isdigit()]
        out += [(float(s), 2.0 * (n - 1) / n * float(s) / bw)
                for s, bw in self.bus_bandwidth.items() if s.isdigit()]
        return sorted(out)


#: how an engine host-time component continues above its largest measured batch
ABOVE = ("hold", "linear")


@attrs.frozen
class StepMeasurement:
    """One measurement of an engine host-time component: its time at each measured batch
    size (``by_batch``) and where it comes from (a further one of a component, ``also``, has
    a source of its own: another run, host or publisher)."""

    by_batch: dict[str, float] = quantities("time")
    source: str = ""
    where: str = ""
    notes: str = ""


@attrs.frozen
class StepTable(StepMeasurement):
    """One component of an engine's per-step host time, measured at several batch sizes
    (``"8" = "0.165 ms"``). ``above``: beyond the largest measured batch the time is held
    at its value there (``"hold"``, the default) or extended along the last two measured
    points (``"linear"``: for a component whose code does a fixed amount of work per
    request, said with a citation in ``above_where``). ``source``: the URL of a component
    measured apart from its profile (the profile's ``source`` otherwise); such a component
    is a calibration constant of its own (``engines.<profile>.components.<name>``).
    ``also``: further measurements of the same component from other sources, each a
    constant of its own (``...components.<name>.also.<i>``); the component's time is the
    mean of its measurements, t(B) = (1/m) sum_j t_j(B), each interpolated as above, so
    that leaving one source out keeps the others'."""

    above: str = "hold"
    above_where: str = ""
    also: list[StepMeasurement] = attrs.field(factory=list)

    def tables(self) -> list[dict[str, float]]:
        """The ``by_batch`` of every measurement of the component, its own first."""
        return [self.by_batch, *(m.by_batch for m in self.also)]


@attrs.frozen
class EngineProfile(Measured):
    """A serving engine's host work per step (scheduling, input preparation, sampling,
    output processing), summed over ``components`` and interpolated in batch size."""

    display_name: str = ""
    components: dict[str, StepTable] = attrs.field(factory=dict)


@attrs.frozen
class Calibration:
    """Measured achievable ceilings of one device (``device``) or of the host (no device)."""

    name: str = attrs.field(validator=check_key)
    display_name: str = ""
    device: str | None = None
    bandwidth: MeasuredBandwidth | None = None
    compute: dict[str, MeasuredThroughput] = keyed(keys=SLOTS, closed=True)
    gemm: dict[str, GemmSweep] = keyed(keys=SLOTS, closed=True)
    mixed: dict[str, MixedGemm] = keyed(keys=SLOTS, closed=True)
    attention: dict[str, MeasuredThroughput] = attrs.field(factory=dict)
    allreduce: dict[str, AllReduceMeasurement] = attrs.field(factory=dict)
    host_link: dict[str, MeasuredBandwidth] = attrs.field(factory=dict)
    #: the estimator reads ``kernel`` (one launch), ``kernel_sync`` (a launch the host
    #: waits on) and ``graph_node`` (the device time one kernel of a replayed CUDA graph
    #: costs beyond its traffic: its start, ramp and drain); other names record
    #: measurements it does not use
    launch: dict[str, MeasuredTime] = keyed(keys=("kernel", "kernel_sync", "graph_node"))
    engines: dict[str, EngineProfile] = attrs.field(factory=dict)
    notes: str = ""
    provenance: dict[str, str] = attrs.field(factory=dict)  # a measurement made here

    def measurements(self) -> list[tuple[str, Measured]]:
        """Every measured table with its key path (``compute.bf16``, ``engines.vllm-v0``…)."""
        out: list[tuple[str, Measured]] = []
        if self.bandwidth is not None:
            out.append(("bandwidth", self.bandwidth))
        for table in ("compute", "gemm", "mixed", "attention", "allreduce", "host_link",
                      "launch", "engines"):
            out += [(f"{table}.{k}", v) for k, v in getattr(self, table).items()]
        out += [(f"engines.{k}.components.{c}", t) for k, prof in self.engines.items()
                for c, t in prof.components.items() if t.source]
        out += [(f"engines.{k}.components.{c}.also.{i}", m) for k, prof in self.engines.items()
                for c, t in prof.components.items() for i, m in enumerate(t.also)]
        return out

    def problems(self) -> list[tuple[str, str]]:
        """Cross-field checks: every measurement cites a URL; shapes and keys parse."""
        out = []
        local = [k for k in LOCAL_PROVENANCE if not str(self.provenance.get(k, "")).strip()]
        for path, m in self.measurements():
            src = m.source.strip()
            if _LOCAL.match(src):
                if local:
                    out.append((f"{path}.source", f"{src!r} is a measurement made here: the "
                                f"file's [provenance] needs {', '.join(local)}"))
            elif not _URL.match(src):
                out.append((f"{path}.source", f"a measurement needs the URL it was read from "
                            f"(or 'roofkit calibrate' with a [provenance] table), got {src!r}"))
        for table in ("compute", "gemm", "mixed"):
            for slot in getattr(self, table):
                if slot not in SLOTS:
                    out.append((f"{table}.{slot}", f"unknown compute slot {slot!r}; slots: "
                                f"{', '.join(SLOTS)}"))
        for slot, sweep in self.gemm.items():
            if not sweep.throughput:
                out.append((f"gemm.{slot}.throughput", "a GEMM sweep needs at least one shape"))
            for shape in sweep.throughput:
                if not _SHAPE.match(shape):
                    out.append((f"gemm.{slot}.throughput.{shape}",
                                f"shape {shape!r} is not 'MxNxK' (e.g. '4096x4096x4096')"))
        for slot, mixed in self.mixed.items():
            if mixed.dims() is None:
                out.append((f"mixed.{slot}.shape",
                            f"shape {mixed.shape!r} is not 'MxNxK' (e.g. '802816x192x768')"))
        for name, ar in self.allreduce.items():
            sizes = [*ar.time, *ar.bus_bandwidth]
            if not sizes:
                out.append((f"allreduce.{name}", "give `time` or `bus_bandwidth` per message size"))
            for size in sizes:
                if not size.isdigit() or int(size) < 1:
                    out.append((f"allreduce.{name}.{size}",
                                f"message size {size!r} is not a whole number of bytes"))
        for name, engine in self.engines.items():
            for comp, tab in engine.components.items():
                for i, by_batch in enumerate(tab.tables()):
                    at = f"engines.{name}.components.{comp}" + (f".also.{i - 1}" if i else "")
                    if not by_batch:
                        out.append((f"{at}.by_batch", "a measurement needs by_batch (e.g. "
                                                      "{ \"1\" = \"0.5 ms\" })"))
                    for b in by_batch:
                        if not b.isdigit() or int(b) < 1:
                            out.append((f"{at}.by_batch.{b}",
                                        f"batch size {b!r} is not an integer >= 1"))
                key = f"engines.{name}.components.{comp}.above"
                if tab.above not in ABOVE:
                    out.append((key, f"{tab.above!r} is not one of {', '.join(ABOVE)}: "
                                     "'hold' keeps the largest measured batch's time above "
                                     "it, 'linear' extends the last two measured points"))
                elif tab.above == "linear" and len(tab.by_batch) < 2:
                    out.append((key, "'linear' needs by_batch at two batch sizes or more "
                                     "(a slope); measured at one, the time is batch-independent"))
                elif tab.above == "linear" and not tab.above_where:
                    out.append((f"engines.{name}.components.{comp}.above_where",
                                "a linear extension past the measured batches needs its "
                                "reason: cite the code that does per-request work"))
        device_only = ("bandwidth", "compute", "gemm", "mixed", "attention", "allreduce",
                   "host_link")
        if self.device is None:
            for f in device_only:
                if getattr(self, f):
                    out.append((f, f"[{f}] measures a device; set `device = \"<device key>\"`"))
        return out


def check(cal: Calibration, tables) -> list[tuple[str, str]]:
    """Cross-checks against the registry: a device calibration names a catalogued device."""
    devices = tables.get("devices")
    if cal.device is not None and devices is not None and cal.device not in devices:
        return [("device", f"unknown device {cal.device!r} (not in the devices catalogue)")]
    return []
