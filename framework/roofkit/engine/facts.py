"""What ``Engine.solve`` needs to know about a workload, a device and a precision, resolved once.

Resolution (catalogue lookup, TOML loading, the circuit's parameter and FLOP counts) happens
the first time a name or object is seen; afterwards a solve finds its facts with one dict hit.
Caches live on the registry (``registry.memo``), so a fresh registry starts fresh.
"""

from __future__ import annotations

from pathlib import Path

from .. import units
from ..errors import RoofkitError, UnknownNameError, closest
from ..files import real_path
from ..registry import Registry, is_path_ref, resolve


class WorkloadFacts:
    """A workload reduced to the numbers of the engine's equation.

    ``flops`` is the forward FLOPs of one sample: one token for a template (token-based)
    workload, one declared sample (an image, an utterance…) for a generic one.
    """

    __slots__ = (
        "active_params",
        "flops",
        "heads",
        "hidden",
        "layers",
        "name",
        "params",
        "per_token",
        "sample",
        "source",
        "spec",
        "transformer",
    )

    def __init__(self, spec, *, params, active_params, flops, layers, per_token, sample,
                 hidden=None, heads=None, source=""):
        self.spec = spec
        self.name = spec.name
        self.params = float(params)
        self.active_params = float(active_params)
        self.flops = float(flops)
        self.layers = int(layers) if layers else 1
        self.per_token = per_token
        self.sample = sample
        self.hidden = hidden
        self.heads = heads
        # the transformer training-memory formula needs the hidden width and head count
        self.transformer = bool(per_token and hidden and heads)
        self.source = source


class DeviceFacts:
    """A device reduced to SI floats: peaks per slot, memory tiers, overheads, TDP.

    The capacity check and the bandwidth path of ``Engine.solve`` (scalar and vectorized
    alike) are decided here:

    * it fits (``feasible``) when the footprint is within primary memory, as the reference
      says; flash does not make a configuration fit (:meth:`fits`);
    * when it fits: on-chip SRAM if the weights fit in it, else flash when the device has
      one that holds the weights (inference only), else primary memory
      (:meth:`resident_path`);
    * when it does not, the offload-limited estimate (:meth:`misfit_path`): in inference,
      flash when it holds the weights (they are read in place: ``flash_resident``; flash is
      read-only at run time, so never in training); else host offload at
      ``min(memory, host link)``, all traffic charged at the limiting link, if the spec
      declares a ``[host_link]``; without one nothing can be offloaded, so there is no path
      (bandwidth 0, tier ``"none"``: infinite latency).
    """

    __slots__ = (
        "_peak_of",
        "bandwidth",
        "capacity",
        "default_peak",
        "default_slot",
        "dispatch",
        "flash_bandwidth",
        "flash_capacity",
        "host_bandwidth",
        "host_link_declared",
        "layer",
        "name",
        "offload_bandwidth",
        "offload_tier",
        "origin",
        "peaks",
        "spec",
        "sram_bandwidth",
        "sram_capacity",
        "tdp",
    )

    def __init__(self, spec, origin: str = ""):
        self.spec = spec
        self.origin = origin
        self.name = spec.name
        self.peaks = dict(spec.compute)
        self.default_slot = spec.default_slot
        self.default_peak = spec.compute[spec.default_slot]
        self.capacity = spec.memory.capacity
        self.bandwidth = spec.memory.bandwidth
        sram = spec.sram
        self.sram_capacity = sram.capacity if sram is not None else None
        self.sram_bandwidth = sram.bandwidth if sram is not None else None
        flash = spec.flash
        # a flash tier without a published bandwidth cannot be costed, so it is no path
        usable_flash = flash is not None and flash.bandwidth is not None
        self.flash_capacity = flash.capacity if usable_flash else None
        self.flash_bandwidth = flash.bandwidth if usable_flash else None
        self.host_link_declared = spec.host_link is not None
        self.host_bandwidth = spec.host_link.bandwidth if spec.host_link is not None else None
        if self.host_bandwidth is not None:
            # offload charges all traffic at the limiting link
            self.offload_bandwidth = min(self.bandwidth, self.host_bandwidth)
            self.offload_tier = "offload"
        else:  # no link to host memory: nothing can be offloaded
            self.offload_bandwidth = 0.0
            self.offload_tier = "none"
        self.tdp = spec.power.tdp if spec.power.tdp is not None else 0.0
        self.dispatch = spec.overheads.dispatch
        self.layer = spec.overheads.layer
        self._peak_of: dict[str, tuple[float, str, bool]] = {}

    def flash_holds(self, weights: float) -> bool:
        """Whether the weights fit the device's flash (a flash tier with a bandwidth)."""
        return self.flash_capacity is not None and weights <= self.flash_capacity

    def fits(self, footprint: float) -> bool:
        """The reference's capacity check: the footprint within primary memory."""
        return footprint <= self.capacity

    def resident_path(self, weights: float, training: bool = False) -> tuple[float, str]:
        """(bandwidth, tier) when the configuration fits: weights resident in SRAM, else
        streamed from flash where the device has one that holds them (inference only), else
        primary memory."""
        if self.sram_bandwidth is not None and weights <= self.sram_capacity:
            return self.sram_bandwidth, "sram"
        if not training and self.flash_holds(weights):
            return self.flash_bandwidth, "flash"
        return self.bandwidth, "memory"

    def misfit_path(self, weights: float = float("inf"), training: bool = True
                    ) -> tuple[float, str]:
        """(bandwidth, tier) of the offload-limited estimate when it does not fit: the
        weights read in place from flash (inference, flash holding them), host offload, or
        no path at all."""
        if not training and self.flash_holds(weights):
            return self.flash_bandwidth, "flash"
        return self.offload_bandwidth, self.offload_tier

    def misfit_reason(self, need: str, what: str, training: bool,
                      weights: float = float("inf")) -> str:
        """Why a configuration does not fit: ``need`` (e.g. "needs 25 MB") and ``what``
        (e.g. "int8 weights"), with the tiers that were tried and how its latency is
        estimated. One text for the scalar and the vectorized sweeps."""
        cap = units.fmt(self.capacity, "bytes")
        text = f"{need} ({what}) but {self.name} has {cap}"
        if self.flash_capacity is not None:
            flash = units.fmt(self.flash_capacity, "bytes")
            if training:
                text += (f" (its {flash} flash is read-only at run time: training state "
                         "cannot live there)")
            elif self.flash_holds(weights):
                return (text + f"; the weights fit its {flash} of flash, so the latency "
                        "reads them in place from flash (flash_resident)")
            else:
                text += f" and {flash} of flash"
        if not self.host_link_declared:
            text += "; no [host_link], so nothing can be offloaded: it cannot run"
        return text

    def fit_reason(self, what: str, weights: float, training: bool) -> str:
        """Why a configuration fits (the tier that holds it)."""
        text = f"fits: {what} within {self.name}'s {units.fmt(self.capacity, 'bytes')}"
        if not training and self.sram_capacity is not None and weights <= self.sram_capacity:
            return text
        if not training and self.flash_holds(weights):
            text += (f"; the weights stay in its {units.fmt(self.flash_capacity, 'bytes')} of "
                     "flash, read in place")
        return text

    def peak(self, prec: PrecisionFacts) -> tuple[float, str, bool]:
        """(FLOP/s, slot used, fell back?) for a precision: its own slot's peak, or, as the
        reference engine does, the device's default peak when the device lists none for it."""
        hit = self._peak_of.get(prec.name)
        if hit is None:
            own = self.peaks.get(prec.slot)
            if own is not None:
                hit = (own, prec.slot, False)
            else:
                hit = (self.default_peak, self.default_slot, True)
            self._peak_of[prec.name] = hit
        return hit


class PrecisionFacts:
    __slots__ = ("bytes_per_element", "name", "precision", "slot")

    def __init__(self, precision):
        self.precision = precision
        self.name = precision.name
        self.bytes_per_element = precision.bytes_per_element
        self.slot = precision.slot


def _template_facts(spec, registry) -> WorkloadFacts:
    try:
        from ..circuit.stats import workload_stats
    except ImportError as exc:  # the circuit package is another issue's work
        raise RoofkitError(
            f"workload {spec.name!r} is described by its architecture (template "
            f"{spec.template!r}); its parameters and FLOPs come from roofkit.circuit, which "
            f"is not available ({exc})") from None
    st = workload_stats(spec, registry=registry)
    dims = spec.dims
    return WorkloadFacts(
        spec, params=st.params, active_params=getattr(st, "active_params", st.params),
        flops=st.flops_per_token, layers=st.layers, per_token=True, sample="token",
        hidden=dims.get("hidden"), heads=dims.get("heads"),
        source=f"derived by the circuit from template {spec.template!r}")


def workload_facts(spec, registry) -> WorkloadFacts:
    """The engine's view of a workload spec (generic: as declared; template: the circuit's)."""
    if spec.generic is not None:
        g = spec.generic
        return WorkloadFacts(spec, params=g.params, active_params=g.params,
                             flops=g.flops_per_sample, layers=g.layers, per_token=False,
                             sample=g.sample, source="declared in the workload spec")
    return _template_facts(spec, registry)


class EngineCache:
    """Per-registry lookup tables: name or object -> facts, in one dict hit once warm."""

    def __init__(self, registry: Registry):
        self.registry = registry
        self.plugins = registry.plugin_set  # recorded in every profile
        self.workloads: dict = {}   # str | Path -> WorkloadFacts
        self.devices: dict = {}     # str | Path -> DeviceFacts
        self.by_id: dict = {}       # id(spec) -> facts (spec kept alive by the facts)
        self.precisions: dict = {}  # str -> PrecisionFacts

    # -- workloads -----------------------------------------------------------------------
    def workload(self, ref) -> WorkloadFacts:
        if is_path_ref(ref):  # keyed by the file's real path and content, not as typed
            return self._workload_of_spec(self.registry.workload(ref))
        if isinstance(ref, str):
            hit = self.workloads.get(ref)
            if hit is None:
                spec = self.registry.workload(ref)
                hit = self._workload_of_spec(spec)
                self.workloads[ref] = hit
            return hit
        hit = self.by_id.get(id(ref))
        if hit is None or hit.spec is not ref:
            spec = self.registry.workload(ref)  # type check: a Workload spec or ArgumentError
            hit = self.by_id[id(ref)] = workload_facts(spec, self.registry)
        return hit

    def _workload_of_spec(self, spec) -> WorkloadFacts:
        hit = self.by_id.get(id(spec))
        if hit is None or hit.spec is not spec:
            hit = self.by_id[id(spec)] = workload_facts(spec, self.registry)
        return hit

    # -- devices -------------------------------------------------------------------------
    def device(self, ref) -> DeviceFacts:
        if is_path_ref(ref):  # keyed by the file's real path and content, not as typed
            spec = self.registry.device(ref)
            hit = self.by_id.get(id(spec))
            if hit is None or hit.spec is not spec:
                hit = self.by_id[id(spec)] = DeviceFacts(spec, self._origin(spec, ref))
            return hit
        if isinstance(ref, str):
            hit = self.devices.get(ref)
            if hit is None:
                spec = self.registry.device(ref)
                hit = self.by_id.get(id(spec))
                if hit is None or hit.spec is not spec:
                    hit = self.by_id[id(spec)] = DeviceFacts(spec, self._origin(spec, ref))
                self.devices[ref] = hit
            return hit
        hit = self.by_id.get(id(ref))
        if hit is None or hit.spec is not ref:
            spec = self.registry.device(ref)
            hit = self.by_id[id(ref)] = DeviceFacts(spec, self._origin(spec, None))
        return hit

    def _origin(self, spec, ref) -> str:
        """The file a device spec came from (for the basis line)."""
        devices = self.registry.catalogues.get("devices")
        if devices is not None and spec.name in devices:
            entry = devices.entry(spec.name)
            if entry.obj is spec:
                return str(entry.origin)
        if isinstance(ref, str | Path):
            return str(real_path(ref))
        return "a spec object passed by the caller"

    # -- precisions ----------------------------------------------------------------------
    def precision(self, name) -> PrecisionFacts:
        hit = self.precisions.get(name) if isinstance(name, str) else None
        if hit is None:
            if not isinstance(name, str):
                from ..types import Precision

                if isinstance(name, Precision):
                    return PrecisionFacts(name)
                from ..errors import ArgumentError, shown

                raise ArgumentError(f"precision must be a name such as 'bf16', got "
                                    f"{shown(name, 80)} ({type(name).__name__})")
            table = self.registry.precisions
            prec = table.get(name.strip().lower())
            if prec is None:
                known = sorted({p.name for p in table.values()})
                hint = ("Known precisions: " + ", ".join(known) + "."
                        if closest(name, known) or len(known) > 40 else "")
                raise UnknownNameError("precision", name, known, hint=hint)
            hit = self.precisions[name] = PrecisionFacts(prec)
        return hit


#: (registry, cache) of the previous call: skips the memo lookup. One tuple, replaced whole,
#: so threads using different registries never see one registry paired with another's cache.
_LAST: tuple = (None, None)


def cache_for(registry: Registry | None) -> EngineCache:
    """The engine cache of ``registry`` (the process default registry when None)."""
    global _LAST
    reg = resolve(registry)
    last = _LAST
    if reg is last[0]:
        return last[1]
    cache = reg.memo("roofkit.engine.cache", lambda: EngineCache(reg))
    _LAST = (reg, cache)
    return cache


def describe_peak(df: DeviceFacts, prec: PrecisionFacts) -> str:
    peak, slot, fell_back = df.peak(prec)
    text = f"{units.fmt(peak, 'throughput')} ({slot})"
    if fell_back:
        text += (f"; {df.name} lists no {prec.slot} peak for {prec.name}, so the device's "
                 f"default peak is used")
    return text
