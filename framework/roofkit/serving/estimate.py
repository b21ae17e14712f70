"""A request-level serving estimate: a static batch of ``B`` requests of ``I`` prompt tokens
that each generate ``O`` tokens, on ``tp`` devices of one node.

The device work of every step comes from the workload's circuit (:mod:`roofkit.circuit`):
the same templates, op-cost rules, device roofline and cost model as ``roofkit.decode`` and
``roofkit.prefill``, with tensor parallelism as the circuit shards it (two all-reduces per
transformer layer on the device's link). What serving adds is the request-level account:

    TTFT   = prefill(B x I tokens, with the embedding and the LM head) + host(prefill step)
    ITL_j  = decode(B rows, context I + j) + host(decode step),   j = 1 .. O-1
             (max(decode, host) for an engine whose profile overlaps its host work)
    e2e    = TTFT + sum_j ITL_j          (summed as the KV read grows, not ITL_1 * (O - 1))
    output tokens/s = B * O / e2e
    energy = tp * (E(prefill) + sum_j E(decode_j) + TDP * 0.30 * host time)

where ``E`` of a device step is the Engine's power model,
``TDP * (0.30 + 0.70 * utilization) * time``, and the host time of every step (the device
waiting for the next launch) is counted at the idle fraction.

where ``host`` is the host-dispatch arithmetic of :mod:`.overhead` over the plan's kernel
count, and the ``O - 1`` decode steps are one vectorized circuit call over their contexts.
The cost model follows the basis: ``roofline`` (datasheet), ``roofline_calibrated``
(calibrated).

Memory per device is the circuit's footprint of one of ``tp`` shards:
``weights + B * (kv(context) + state)``; it fits when that is within the device's usable
memory (capacity * usable_fraction). The largest batch that fits at a context is
``floor((usable - weights) / (kv(context) + state))``. Activations, workspaces and the
runtime's own memory beyond the usable fraction are not counted, except where the engine
profile sizes its KV cache after a profiling pass (``[kv_sizing] profile_run``, vLLM V1):
then usable is less the lower bound of that pass's peak the load simulator also takes
(:func:`roofkit.load.simulate.profile_peak`, at the profile's token and sequence limits on
the device), and the estimate's notes say so.
"""

from __future__ import annotations

import math

import attrs
import numpy as np

from .. import bounds
from ..circuit import api as _circuit
from ..circuit.results import Footprint, bound_of
from ..circuit.roofline import BASES, device_roofline, host_calibration, resolve_basis
from ..errors import ArgumentError, OOMError, SpecError, shown
from ..results import Headline, Result
from . import overhead as _overhead


@attrs.frozen(eq=False, repr=False)
class ServingEstimate(Result):
    """The estimate of one serving configuration; times in seconds inside, ms in ``*_ms``."""

    workload: str
    device: str
    basis: str
    basis_detail: str
    provenance: dict
    batch: int
    input_len: int
    output_len: int
    tp: int
    precision: str
    kv_cache_dtype: str
    engine: str | None
    slot: str
    ttft: float
    itl_steps: np.ndarray
    e2e: float
    prefill_host: _overhead.StepOverhead
    decode_host: _overhead.StepOverhead
    footprint: Footprint
    usable_memory: float
    fit_context: int
    cost_model: str = ""
    notes: tuple[str, ...] = ()
    launches_source: str = ""
    prefill_device: float = 0.0
    plugins: tuple[str, ...] = ()  # the registry's plugin set that produced this estimate
    device_class: str = ""  # vendor and category, the stratum of its intervals
    measured: bool = False  # the calibrated basis rests on a measured bandwidth of the device
    #: a step's batch lies outside the range an engine profile it uses was measured at (its
    #: host time, or a kernel profile): the intervals take the "outside" stratum
    outside_profile_range: bool = False
    # the circuit estimates the breakdown and energy are computed from, on access
    parts: tuple = attrs.field(default=(), repr=False)
    #: the engine forms a decode step while the device runs the one before (ITL = max(device,
    #: host) instead of device + host)
    host_overlap: bool = False

    #: the headline figures that carry an interval
    HEADLINES = ("ttft_ms", "itl_ms", "e2e_ms", "output_tokens_per_s")

    def intervals(self, level: float = 0.8) -> dict:
        """Per headline figure its prediction interval at ``level`` (:mod:`roofkit.intervals`:
        out-of-sample residuals of engine x metric x device class x calibrated range)."""
        from ..intervals import estimate_interval, table

        rows, out = table(), {}
        for name in self.HEADLINES:
            value = getattr(self, name)
            if value is None:
                continue
            iv = estimate_interval(float(value), rows, metric=name,
                                   engine=self.engine or "", device_class=self.device_class,
                                   inside=self.measured and self.basis == "calibrated",
                                   beyond=self.outside_profile_range, level=level)
            if iv is not None:
                out[name] = iv
        return out

    @property
    def decode_breakdown(self) -> tuple:
        """Per node: its share of the mean decode step, largest first (empty at O = 1)."""
        dec = self.parts[1] if len(self.parts) > 1 else None
        return () if dec is None else tuple(_breakdown(dec))

    @property
    def energy(self) -> float:
        """J, all tp devices over the batch's requests (see the module docstring)."""
        if not self.parts:
            return 0.0
        from ..engine.calibration import energy as _energy

        pre, dec, steps, host_time = self.parts
        e = float(pre.energy)
        if dec is not None:
            e += float(np.sum(np.broadcast_to(dec.energy, (steps,))))
        return self.tp * (e + _energy(pre.tdp, 0.0, host_time))  # idle on the host

    @property
    def energy_measured_model(self) -> float:
        """J on the per-op energy model (:func:`roofkit.energy.serving_energy`); the TDP
        model's :attr:`energy` where the device has no per-op constants."""
        from ..energy import serving_energy

        return serving_energy(self)

    HEADLINE = (
        Headline("ttft", "ms", "ttft_ms", "time to first token"),
        Headline("itl", "ms", "itl_ms", "inter-token latency"),
        Headline("e2e", "ms", "e2e_ms", "end-to-end"),
        Headline("output_tokens_per_s", "token/s", "output_tokens_per_s", "output tokens/s"),
        Headline("energy", "J", "energy", "energy", key_name="energy_j"),
        Headline("memory_per_device", "B", "memory_per_device", "memory per device",
                 key_name="required_per_device_bytes"),
    )
    KIND = "serving estimate"
    PLOT = "serve"

    def title(self) -> str:
        tp = f"{self.tp} x " if self.tp > 1 else ""
        return (f"{self.workload} on {tp}{self.device}: batch {self.batch}, "
                f"{self.input_len} in / {self.output_len} out, {self.precision}, "
                f"{self.basis} basis")

    # -- headline numbers -----------------------------------------------------------------
    @property
    def ttft_ms(self) -> float:
        return self.ttft * 1e3

    @property
    def itl_ms(self) -> float | None:
        """Inter-token latency, mean over the ``O - 1`` decode steps (None when O = 1)."""
        return float(np.mean(self.itl_steps)) * 1e3 if len(self.itl_steps) else None

    @property
    def e2e_ms(self) -> float:
        return self.e2e * 1e3

    @property
    def energy_per_output_token(self) -> float:
        """J per generated token, all devices: energy / (B * O)."""
        return self.energy / (self.batch * self.output_len)

    @property
    def output_tokens_per_s(self) -> float:
        """Generated tokens per second of the whole batch: B * O / e2e."""
        return self.batch * self.output_len / self.e2e

    # -- memory (one device) --------------------------------------------------------------
    @property
    def weights_per_device(self) -> float:
        return self.footprint.weights

    @property
    def kv_per_token_per_device(self) -> float:
        return self.footprint.kv_per_token

    @property
    def state_per_seq_per_device(self) -> float:
        return self.footprint.state_per_seq

    def per_sequence(self, context: int) -> float:
        """KV (windows cap it) and recurrent state of one sequence at ``context``, bytes."""
        return float(self.footprint.kv_bytes(float(context))) + self.footprint.state_per_seq

    @property
    def memory_per_device(self) -> float:
        return self.weights_per_device + self.batch * self.per_sequence(self.fit_context)

    @property
    def fits(self) -> bool:
        return self.memory_per_device <= self.usable_memory

    def max_batch(self, context: int | None = None) -> int:
        """The largest batch whose weights, KV and state fit at ``context`` tokens (0: none)."""
        context = self.input_len + self.output_len if context is None else context
        free = self.usable_memory - self.weights_per_device
        if free <= 0:
            return 0
        per = self.per_sequence(max(context, 1))
        return 10**12 if per <= 0 else int(free // per)

    # -- pint at the edge -----------------------------------------------------------------
    def quantity(self, name: str):
        """``ttft``, ``itl`` or ``e2e`` as a pint Quantity in ms."""
        from ..units import Q

        value = {"ttft": self.ttft_ms, "itl": self.itl_ms, "e2e": self.e2e_ms}[name]
        return None if value is None else Q(value, "ms")

    def to_dict(self, level: float = 0.8) -> dict:
        itl = self.itl_steps * 1e3
        return {
            "intervals": {k: v.to_dict() for k, v in self.intervals(level).items()},
            "workload": self.workload, "device": self.device, "tp": self.tp,
            "batch": self.batch, "input_len": self.input_len, "output_len": self.output_len,
            "precision": self.precision, "kv_cache_dtype": self.kv_cache_dtype,
            "engine": self.engine,
            "compute_slot": self.slot, "cost_model": self.cost_model,
            "ttft_ms": self.ttft_ms, "itl_ms": self.itl_ms,
            "itl_first_ms": float(itl[0]) if len(itl) else None,
            "itl_last_ms": float(itl[-1]) if len(itl) else None,
            "e2e_ms": self.e2e_ms, "output_tokens_per_s": self.output_tokens_per_s,
            "output_tokens_per_s_per_device": self.output_tokens_per_s / self.tp,
            "energy_j": self.energy,
            "energy_measured_model_j": self.energy_measured_model,
            **_power_limited(self),
            "energy_per_output_token_j": self.energy_per_output_token,
            "fits": self.fits,
            "outside_profile_range": self.outside_profile_range,
            "max_batch": self.max_batch(),
            "memory": {
                "context": self.fit_context,
                "weights_per_device_bytes": self.weights_per_device,
                "kv_bytes_per_token_per_device": self.kv_per_token_per_device,
                "state_bytes_per_seq_per_device": self.state_per_seq_per_device,
                "required_per_device_bytes": self.memory_per_device,
                "usable_per_device_bytes": self.usable_memory,
            },
            "host": {
                "decode_step_s": self.decode_host.host_time,
                "prefill_step_s": self.prefill_host.host_time,
                "launches_per_step": self.decode_host.launches,
                "launches_source": self.launches_source,
                "launch_s": self.decode_host.launch,
                "step_dispatch_s": self.decode_host.dispatch,
                "step_dispatch_source": self.decode_host.source,
            },
            "decode_breakdown": list(self.decode_breakdown),
            "basis": self.basis, "basis_detail": self.basis_detail,
            "provenance": dict(self.provenance), "notes": list(self.notes),
            "plugins": list(self.plugins),
        }


def _power_limited(est) -> dict:
    """e2e and mean ITL (ms) with the device steps at their power-limited time, the time
    the per-op energy is charged over (:func:`roofkit.energy.serving_times`)."""
    from ..energy import serving_times

    e2e, itl = serving_times(est)
    return {"e2e_power_limited_ms": e2e * 1e3,
            "itl_power_limited_ms": None if itl is None else itl * 1e3}


def _positive_int(name: str, value) -> int:
    """An integer >= 1 within the bound of ``name`` (:mod:`roofkit.bounds`)."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise ArgumentError(f"{name} must be an integer >= 1, got {shown(value)}")
    return bounds.check_int(name, int(value))


@attrs.frozen
class Config:
    """A serving configuration resolved once: the registry, workload and device specs, the
    names the report shows, and the keywords of its ``roofkit.circuit.api`` calls."""

    reg: object
    workload: object
    device: object
    precision: str  # the weights' format name
    kv_cache_dtype: str
    circuit: dict  # keywords of roofkit.circuit.api calls


def _default_basis(registry, workload, device, basis) -> str:
    """``basis``, or for ``"auto"`` the device's default (calibrated where it has a
    calibration, else datasheet); the workload is looked up first, so swapped arguments get
    the workload's message."""
    if basis != "auto":
        return basis
    from ..registry import resolve

    reg = resolve(registry)
    reg.workload(workload)
    return resolve_basis(basis, device, reg)


def configure(registry, workload, device, precision, kv_cache_dtype, basis, tp,
              engine: str | None = None, engine_version: str | None = None) -> Config:
    """Resolve names; ``precision`` is the weights' format (an integer format is weight-only
    quantization: the circuit runs it beside 16-bit activations). ``engine`` (and its
    ``engine_version``) selects the engine's kernel profiles for the nodes they cover."""
    from ..registry import resolve

    if basis not in BASES:
        raise SpecError(f"unknown basis {basis!r}; one of {', '.join(BASES)}")
    reg = resolve(registry)
    w = reg.workload(workload)
    d = reg.device(device)
    wp = reg.precision(precision or w.formats.get("default", "bf16"))
    kp = reg.precision(kv_cache_dtype)
    kw = {"precision": precision, "kv_cache_dtype": kp.name, "basis": basis, "tp": tp,
          "registry": reg}
    if engine:
        kw["engine"] = engine
        if engine_version:
            kw["engine_version"] = engine_version
    if "activations" not in w.formats and (wp.activations or wp.kind == "int"):
        # a format that declares its activations (AWQ int4: fp16; LLM.int8(): int8) runs
        # beside them; another integer weight format is weight-only quantization (W4A16,
        # W8A16): the weights are widened to the 16-bit activations before the multiply
        kw["formats"] = {"activations": wp.activations or "bf16"}
    return Config(reg, w, d, wp.name, kp.name, kw)


def _footprint(s: Config) -> Footprint:
    # the bytes only: one footprint per device whatever the basis (its weight-floor time
    # is at the datasheet bandwidth)
    kw = {**{k: v for k, v in s.circuit.items() if k != "basis"}, "basis": "datasheet"}
    return _circuit.footprint(s.workload, s.device, **kw)


def usable_memory(reg, w, d, engine: str | None) -> tuple[float, str | None]:
    """One device's memory for weights and KV, ``capacity * usable_fraction``, less the
    profiling peak when ``engine``'s profile sizes its KV cache after a profiling pass
    (``[kv_sizing] profile_run``); with the note that says which (None without a peak)."""
    usable = d.memory.capacity * d.memory.usable_fraction
    if not engine:
        return usable, None
    from ..circuit.kernels import engine_spec
    from ..load.simulate import profile_peak

    spec = engine_spec(reg, engine)
    if spec is None or not spec.kv_sizing.profile_run:
        return usable, None
    seqs, toks = spec.limits(d)
    peak = profile_peak(w, toks, seqs, spec.kv_sizing.sampler_logit_bytes)
    if peak is None:
        return usable, (f"{spec.name} sizes its KV cache after a profiling pass; {w.name} has "
                        "no 'hidden' or 'vocab' dim, so its peak is not taken from the usable "
                        "memory of the fit check")
    return usable - peak, (f"fit check: {spec.name} sizes its KV cache after a profiling pass "
                           f"of {toks} tokens ({min(toks, seqs)} sequences in its sampler "
                           f"warm-up): at least {peak / 1e9:.2f} GB a device taken from the "
                           f"usable {usable / 1e9:.2f} GB (a lower bound of that pass's peak)")


def _matmul_slot(est) -> str:
    """The slot of the weight matmuls that do most of a step's FLOPs."""
    best, slot = -1.0, ""
    for r in est.rows:
        if r.op in ("paged_attention", "mla_attention"):
            continue
        f = float(np.max(r.flops))
        if f > best and r.slot:
            best, slot = f, r.slot
    return slot


def _breakdown(est) -> list[dict]:
    """Per node: its share of the mean decode step, largest first."""
    rows = []
    for r in est.rows:
        t = float(np.mean(r.time))
        bound = bound_of(float(np.mean(r.t_memory)), float(np.mean(r.t_compute)), t,
                         float(np.mean(r.t_link)))
        rows.append({"node": r.node, "op": r.op, "count": r.count, "time_s": t,
                     "bound": str(bound)})
    return sorted(rows, key=lambda r: -r["time_s"])


def estimate(workload, device, *, batch: int = 1, input_len: int = 128, output_len: int = 128,
             tp: int = 1, precision: str | None = None, kv_cache_dtype: str = "bf16",
             basis: str = "auto", engine: str | None = None, registry=None,
             fit_context: int | None = None, require_fit: bool = False,
             engine_version: str | None = None) -> ServingEstimate:
    """The serving estimate of a static batch; see the module docstring for the equations.

    ``fit_context`` is the context the memory check holds per sequence (default: input +
    output, the end of the request). ``engine`` names the engine's measured host time (a
    profile of the host calibration) and its kernel profiles (``specs/engines``, by name,
    alias or host calibration profile; ``engine_version`` picks the kernels of a version,
    default the profile's own).
    """
    batch = _positive_int("batch", batch)
    input_len = _positive_int("input_len", input_len)
    output_len = _positive_int("output_len", output_len)
    tp = _positive_int("tp", tp)
    bounds.check_int("input_len + output_len", input_len + output_len)  # the last context
    basis = _default_basis(registry, workload, device, basis)
    s = configure(registry, workload, device, precision, kv_cache_dtype, basis, tp, engine,
                  engine_version)
    reg, w, d = s.reg, s.workload, s.device
    roof = device_roofline(d, basis, reg)
    host = host_calibration(reg)
    notes = []

    # prefill: B sequences of I tokens, causal; the decode steps j = 1 .. O-1 at context I + j
    # head=True: the embedding gather of the prompt and the LM head of the first token,
    # which the first token waits for
    pre = _circuit.prefill(w, d, tokens=input_len, seqs=batch, head=True, **s.circuit)
    launches = pre.kernels
    on_host = _overhead.host_engine(reg, host, engine)
    overlap = _overhead.host_overlaps(reg, engine)
    pre_host = _overhead.step_overhead(roof, host, launches, batch, on_host)
    ttft = float(pre.time) + pre_host.host_time
    dec_host = _overhead.step_overhead(roof, host, launches, batch, on_host)
    ctx = input_len + np.arange(1, output_len, dtype=float)
    itl = np.zeros(0)
    dec = None
    host_time = pre_host.host_time
    if len(ctx):
        dec = _circuit.decode(w, d, batch=batch, context=ctx, **s.circuit)
        t_dec = np.broadcast_to(np.asarray(dec.time, dtype=float), ctx.shape)
        h = dec_host.host_time
        # an overlapped engine prepares step j + 1 while step j runs: the device waits for
        # the host only where the host takes longer
        itl = (np.maximum(t_dec, h) if overlap else t_dec + h).copy()
        host_time += float(np.maximum(h - t_dec, 0.0).sum()) if overlap else h * len(ctx)
    if overlap:
        notes.append(f"engine {engine!r}: host work of a decode step overlapped with the "
                     "device (ITL = max(device, host)); the first step's is not")
    if on_host is not None and basis == "datasheet":
        notes.append(f"engine {engine!r}: its measured step time enters the calibrated basis "
                     "only")
    outside = (pre_host.outside_profile_range or dec_host.outside_profile_range or
               pre.outside_profile_range or (dec is not None and dec.outside_profile_range))
    if pre_host.note:
        notes.append(pre_host.note)
    notes += [n for n in pre.notes if n not in notes]
    if dec is not None:
        notes += [n for n in dec.notes if n not in notes]
    e2e = ttft + float(itl.sum())
    fp = _footprint(s)
    usable, fit_note = usable_memory(reg, w, d, engine)
    if fit_note:
        notes.append(fit_note)
    est = ServingEstimate(
        workload=w.name, device=d.name, basis=basis, basis_detail=pre.basis,
        provenance=dict(roof.provenance), batch=batch, input_len=input_len,
        output_len=output_len, tp=tp, precision=s.precision, kv_cache_dtype=s.kv_cache_dtype,
        engine=engine, slot=_matmul_slot(pre), ttft=ttft, itl_steps=itl, e2e=e2e,
        prefill_host=pre_host, decode_host=dec_host, footprint=fp, usable_memory=usable,
        fit_context=input_len + output_len if fit_context is None else int(fit_context),
        cost_model=pre.cost_model, notes=tuple(notes),
        launches_source=f"kernels counted from the circuit plan ({launches} node instances "
        f"per step{', collectives included' if tp > 1 else ''})",
        prefill_device=float(pre.time), plugins=pre.plugins,
        device_class=f"{(d.vendor or 'other').lower()} {d.category}",
        measured=roof.bandwidth_measured, outside_profile_range=outside,
        parts=(pre, dec, len(ctx), host_time), host_overlap=overlap)
    if require_fit and not est.fits:
        raise OOMError(
            f"{w.name} at batch {batch}, context {est.fit_context} needs "
            f"{est.memory_per_device / 1e9:.1f} GB per device; {d.name} has "
            f"{usable / 1e9:.1f} GB usable (largest batch that fits: {est.max_batch()})",
            required=est.memory_per_device, available=usable)
    return est


#: how an in-flight-batching scheduler admits a request against the KV cache
ADMISSIONS = {
    "grow": "the cache grows with each request's tokens (vLLM; TensorRT-LLM MAX_UTILIZATION): "
            "on average I + O/2 tokens held",
    "reserve": "a request is admitted only with room for all I + O tokens (TensorRT-LLM's "
               "default GUARANTEED_NO_EVICT)",
}


def max_load(workload, device, *, input_len: int, output_len: int, tp: int = 1,
             precision: str | None = None, kv_cache_dtype: str = "bf16",
             basis: str = "auto", engine: str | None = None, registry=None,
             max_requests: int | None = None, admission: str = "grow",
             engine_version: str | None = None) -> ServingEstimate:
    """Offline serving at full load with in-flight batching and a paged KV cache.

    The concurrency is the batch whose KV fits at the context the scheduler holds per
    request, ``B = floor((usable - weights) / (kv(ctx) + state))`` per device (at most
    ``max_requests``), with ``ctx = I + O/2`` when the cache grows with the tokens
    (``admission="grow"``) or ``ctx = I + O`` when a request is admitted only with room for
    all of its tokens (``"reserve"``); throughput is then that of a batch of ``B``, whose
    decode steps read the KV of contexts ``I + 1 .. I + O - 1``.
    """
    if admission not in ADMISSIONS:
        raise SpecError(f"admission must be one of {', '.join(ADMISSIONS)}, got {admission!r}: "
                        + "; ".join(f"{k}: {v}" for k, v in ADMISSIONS.items()))
    input_len = _positive_int("input_len", input_len)
    output_len = _positive_int("output_len", output_len)
    if max_requests is not None:
        max_requests = _positive_int("max_requests", max_requests)
    basis = _default_basis(registry, workload, device, basis)
    s = configure(registry, workload, device, precision, kv_cache_dtype, basis,
                  _positive_int("tp", tp), engine, engine_version)
    fp = _footprint(s)
    d = s.device
    usable, _ = usable_memory(s.reg, s.workload, d, engine)
    mean_ctx = input_len + (output_len if admission == "reserve" else math.ceil(output_len / 2))
    free = usable - fp.weights
    per = float(fp.kv_bytes(float(mean_ctx))) + fp.state_per_seq
    batch = 0 if free <= 0 else (10**6 if per <= 0 else int(free // per))
    if batch < 1:
        raise OOMError(f"{s.workload.name} does not fit on {tp} x {d.name} at context "
                       f"{mean_ctx}", required=fp.weights, available=usable)
    if max_requests is not None:
        batch = min(batch, max_requests)
    est = estimate(s.workload, d, batch=batch, input_len=input_len, output_len=output_len,
                   tp=tp, precision=precision, kv_cache_dtype=s.kv_cache_dtype, basis=basis,
                   engine=engine, registry=s.reg, fit_context=mean_ctx,
                   engine_version=engine_version)
    held = "the whole request" if admission == "reserve" else "the mean context"
    return attrs.evolve(est, notes=(*est.notes, f"max load: {batch} requests in flight, the KV "
                                    f"capacity at {held} ({mean_ctx} tokens; admission "
                                    f"{admission!r}: {ADMISSIONS[admission]})"))
