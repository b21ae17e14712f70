"""Host work per step: kernel launches, the step's own dispatch, and an engine's scheduler.

A step is one host operation that launches ``K`` kernels; with the host-dispatch scenario's
serial arithmetic (no overlap of host and device):

    host_time = 1 * dispatch + K * launch

``K`` is the kernel count of the step's circuit plan (every node instance of the embed,
main and head sections, collectives included). ``launch`` is the host cost of one kernel
launch (datasheet basis: the device spec's ``overheads.launch``; calibrated: the measured
``launch.kernel`` of the host calibration), both read from the circuit's device roofline.
``dispatch`` is the step's fixed host cost: the device spec's ``overheads.dispatch`` on the
datasheet basis; on the calibrated basis the measured launch-and-wait round trip
(``launch.kernel_sync``: a serving loop reads each step's sampled tokens back), or, when an
engine is named, that engine's measured per-step host time at the batch size (its
scheduler, input preparation, sampling and output processing).

An engine's host time is measured at a few batch sizes ``b_1 .. b_n``; between them it is
interpolated linearly, below ``b_1`` extended linearly (towards the fixed per-step cost, at
least 0) and above ``b_n`` held at its value there:

    host(b) = host(b_n)    for b > b_n

A linear extension past the largest measured batch would grow without bound (vidur's vLLM
profile, measured at 8..64 sequences, would add 348 ms a step at 3,200). A component whose
code does a fixed amount of work per scheduled request, and says so with a citation
(``above = "linear"``, ``above_where``), is extended along its last two measured points
instead (vLLM V1's ``update_from_output``, one loop iteration per request). A step outside
``b_1 .. b_n`` is flagged (``outside_profile_range``) and its estimate says so. A profile
measured at one batch size only declares its time batch-independent (TensorRT-LLM's
session runtime, derived at batch 1): it has no range to leave; so has a component of a
profile measured at one batch size (vLLM V1's sampled-token round trip).
"""

from __future__ import annotations

import attrs
import numpy as np

from ..errors import UnknownNameError


@attrs.frozen
class StepOverhead:
    """The host side of one step: ``host = dispatch + launches * launch`` (seconds),
    evaluated by the host-dispatch scenario (:func:`host_dispatch`)."""

    launches: int
    launch: float
    dispatch: float
    source: str = ""
    host_time: float = attrs.field(default=None)
    #: the engine's measured batch range, when its host time comes from an engine profile
    measured: tuple[int, int] | None = None
    batch: int = 0
    above: str = ""  # how the engine's time continues above its measured batches

    @property
    def outside_profile_range(self) -> bool:
        """The step's batch lies outside the batch range the engine's host time was
        measured at."""
        return self.measured is not None and not (
            self.measured[0] <= self.batch <= self.measured[1])

    @property
    def note(self) -> str:
        """A sentence for the estimate when the step is outside the measured range."""
        if not self.outside_profile_range:
            return ""
        lo, hi = self.measured
        how = ((self.above or f"held at its batch-{hi} value") if self.batch > hi else
               f"extended linearly below batch {lo}")
        return (f"engine host time outside its measured batch range: batch {self.batch}, "
                f"measured at {lo}..{hi} ({how}); {self.source}")

    def __attrs_post_init__(self):
        if self.host_time is None:
            object.__setattr__(self, "host_time",
                               host_dispatch(self.launches, self.launch, self.dispatch))

    @property
    def launch_time(self) -> float:
        return self.launches * self.launch

    def scenario(self, device_time: float):
        """This step as a :class:`~roofkit.HostDispatchScenario` against ``device_time``."""
        from ..scenarios import HostDispatchScenario
        from ..units import Q

        return HostDispatchScenario(ops_per_block=1, blocks=1, launches_per_block=self.launches,
                                    dispatch=Q(self.dispatch * 1e6, "us"),
                                    launch=Q(self.launch * 1e6, "us"),
                                    device_time=Q(max(device_time, 1e-12) * 1e6, "us"))


def host_dispatch(launches: int, launch: float, dispatch: float) -> float:
    """Seconds of host work for one step operation that launches ``launches`` kernels: the
    host-dispatch scenario's ``host_time = operations * dispatch + launches * launch`` with
    one operation. A zero cost (which the scenario refuses as an input) drops its term.

    The scenario takes its inputs as SI floats (no pint on this path) against a device time
    of 1 s, so its ``overhead_ratio`` is the host time in seconds."""
    if launches < 1 or launch <= 0 or dispatch <= 0:
        return max(dispatch, 0.0) + max(launches, 0) * max(launch, 0.0)
    from ..scenarios import HostDispatchScenario
    from ..scenarios.base import SIValue

    s = HostDispatchScenario(ops_per_block=1, blocks=1, launches_per_block=int(launches),
                             dispatch=SIValue(dispatch), launch=SIValue(launch),
                             device_time=SIValue(1.0))
    return s.overhead_ratio


def interp_linear_array(x: np.ndarray, xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
    """Piecewise-linear through the points at every ``x``, extended linearly below the first
    (at least 0) and held at the last value above the last (see the module docstring)."""
    x = np.asarray(x, dtype=float)
    if len(xs) == 1:
        return np.full(x.shape, float(ys[0]))
    slope = (ys[1] - ys[0]) / (xs[1] - xs[0])
    below = np.maximum(0.0, ys[0] + slope * (x - xs[0]))
    return np.where(x < xs[0], below, np.interp(x, xs, ys))  # np.interp holds above


def engine_step_times(profile, batches: np.ndarray) -> np.ndarray:
    """An engine's host time per step at every batch of ``batches`` (see
    :func:`engine_step_time`)."""
    total = np.zeros(np.shape(batches))
    for table in profile.components.values():
        linear = getattr(table, "above", "hold") == "linear"
        measured = table.tables()
        for by_batch in measured:  # the mean of the component's measurements
            total += _component_times(by_batch, batches, linear) / len(measured)
    return total


def _component_times(by_batch: dict, batches: np.ndarray, linear: bool) -> np.ndarray:
    """One measurement's time at every batch: interpolated, held above its largest batch
    or, ``linear``, extended along its last two points."""
    pts = sorted((int(b), t) for b, t in by_batch.items())
    xs = np.array([p[0] for p in pts], dtype=float)
    ys = np.array([p[1] for p in pts], dtype=float)
    t = interp_linear_array(batches, xs, ys)
    if linear and len(xs) > 1:
        x = np.asarray(batches, dtype=float)
        slope = (ys[-1] - ys[-2]) / (xs[-1] - xs[-2])
        t = np.where(x > xs[-1], ys[-1] + slope * (x - xs[-1]), t)
    return t


def above_text(profile) -> str:
    """How the profile continues above its largest measured batch, for notes."""
    lin = [n for n, t in profile.components.items()
           if getattr(t, "above", "hold") == "linear" and len(t.by_batch) > 1]
    if not lin:
        return "held at its largest measured batch's value above"
    return (f"{', '.join(lin)} extended linearly above its measured batches (per-request "
            "work), the other components held")


def profile_sources(profile) -> str:
    """The profile's source and those of its components measured apart, for notes."""
    srcs = [profile.source, *(t.source for t in profile.components.values()),
            *(m.source for t in profile.components.values() for m in t.also)]
    return "; ".join(dict.fromkeys(s for s in srcs if s))


def measured_range(profile) -> tuple[int, int] | None:
    """The smallest and largest batch any component of an engine profile was measured at;
    None for a profile measured at one batch size (a batch-independent term). A component
    measured at one batch size is batch-independent: it has no range to leave."""
    keys = sorted({int(k) for t in profile.components.values() for by_batch in t.tables()
                   if len(by_batch) > 1 for k in by_batch})
    return (keys[0], keys[-1]) if len(keys) > 1 else None


def engine_step_time(profile, batch: int) -> float:
    """An engine's host time per step at ``batch``: the sum of its measured components, each
    interpolated linearly in batch size (extended linearly below the measured range, held
    at the largest measured batch's value above it unless the component's ``above`` is
    ``"linear"``); :func:`engine_step_times` at one batch."""
    return float(engine_step_times(profile, np.array([float(batch)]))[0])


def engine_profile(host: dict, name: str):
    engines = host["engines"]
    if name not in engines:
        raise UnknownNameError("engine profile", name, list(engines),
                               hint=f"Engine profiles of specs/calibration (engines.*): "
                                  f"{', '.join(sorted(engines))}.")
    return engines[name]


def host_engine(registry, host: dict, engine: str | None) -> str | None:
    """The host calibration profile ``engine`` names: itself when the host calibration has
    it, else the one an engine profile of ``specs/engines`` of that name points to (None
    when that profile has no measured host time, or the host calibration lacks it: a
    leave-one-source-out registry); an unknown name is an UnknownNameError listing both."""
    if engine is None or engine in host["engines"]:
        return engine
    from ..circuit.kernels import engine_spec

    spec = engine_spec(registry, engine)
    if spec is None:
        cat = registry.catalogues.get("engines") or {}
        known = sorted({*host["engines"], *cat})
        raise UnknownNameError("engine profile", engine, known,
                               hint="Engine profiles: the host calibration's (engines.*) and "
                                    f"specs/engines: {', '.join(known)}.")
    name = spec.host.calibration
    return name if name and name in host["engines"] else None


def host_overlaps(registry, engine: str | None) -> bool:
    """Whether the engine profile ``engine`` names (``specs/engines``, by name, alias or host
    calibration profile) forms the next step while the device runs this one
    (``[host] overlap``); False without an engine or a profile."""
    if engine is None:
        return False
    from ..circuit.kernels import engine_spec

    spec = engine_spec(registry, engine)
    return bool(spec is not None and spec.host.overlap)


def step_overhead(roofline, host: dict, launches: int, batch: int,
                  engine: str | None) -> StepOverhead:
    """The host side of a step of ``launches`` kernels at ``batch`` on ``roofline``'s basis
    (a :class:`roofkit.circuit.roofline.DeviceRoofline`)."""
    if engine is not None and roofline.name == "calibrated":
        prof = engine_profile(host, engine)
        return StepOverhead(launches, roofline.launch, engine_step_time(prof, batch),
                            f"engine {engine}: {profile_sources(prof)}",
                            measured=measured_range(prof), batch=int(batch),
                            above=above_text(prof))
    if roofline.name == "calibrated" and "kernel_sync" in host["launch"]:
        sync = host["launch"]["kernel_sync"]
        return StepOverhead(launches, roofline.launch, sync.value,
                            f"launch.kernel_sync: {sync.source}")
    return StepOverhead(launches, roofline.launch, roofline.dispatch,
                        "device spec overheads.dispatch")
