"""Result objects of circuit estimates: per-node rows, totals, basis; ``to_dict()`` for JSON.

Values are SI floats (s, FLOP, B), or numpy arrays when the estimate ran at many batch
sizes or contexts at once. ``bound`` is ``memory`` when bytes / bandwidth is the larger
roofline term, ``compute`` when FLOPs / peak is, ``interconnect`` when a collective's link
time exceeds both, ``overhead`` when a cost model's extra term (kernel launch) exceeds them.

With tensor parallelism (``tp`` devices) every row is one device's: its shard of the
weights, heads and KV, and the collectives it takes part in. The devices run in lockstep,
so a step's time is one device's time.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs
import numpy as np

from ..results import Headline, Result


def _plain(v):
    """numpy → lists and floats, for JSON."""
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, Mapping):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, tuple | list):
        return [_plain(x) for x in v]
    return v


def _whole(v):
    """Counts for JSON: ints (lists of ints for arrays)."""
    if isinstance(v, np.ndarray):
        return v.astype(np.int64).tolist()
    return int(v)


BOUND_WORDS = ("memory", "compute", "interconnect", "overhead")


def bound_codes(t_mem, t_cmp, time, t_link=0.0) -> np.ndarray:
    """:func:`bound_of` as int8 indices into :data:`BOUND_WORDS` (no string arrays)."""
    t_mem, t_cmp, time, t_link = np.broadcast_arrays(
        *(np.asarray(v, dtype=np.float64) for v in (t_mem, t_cmp, time, t_link)))
    roof = np.maximum(t_mem, t_cmp)
    code = (t_mem < t_cmp).astype(np.int8)
    code[(t_link > 0) & (t_link >= roof)] = 2
    code[time - roof - t_link > np.maximum(roof, t_link)] = 3
    return code


def bound_of(t_mem, t_cmp, time, t_link=0.0):
    """'memory', 'compute', 'interconnect' or 'overhead' (arrays give arrays of words)."""
    roof = np.maximum(t_mem, t_cmp)
    linked = isinstance(t_link, np.ndarray) or t_link > 0
    if isinstance(roof, np.ndarray) or isinstance(time, np.ndarray) or \
            isinstance(t_link, np.ndarray):
        word = np.where(t_mem >= t_cmp, "memory", "compute")
        if not linked:
            return np.where(time - roof > roof, "overhead", word)
        word = np.where((t_link > 0) & (t_link >= roof), "interconnect", word)
        return np.where(time - roof - t_link > np.maximum(roof, t_link), "overhead", word)
    if time - roof - t_link > max(roof, t_link):
        return "overhead"
    if linked and t_link >= roof:
        return "interconnect"
    return "memory" if t_mem >= t_cmp else "compute"


@attrs.frozen
class NodeCost:
    """One node's cost over all its instances (``count`` layers)."""

    node: str
    op: str
    section: str
    count: int
    flops: object
    bytes: object
    time: object
    slot: str = ""
    weight_bytes: object = 0.0
    act_bytes: object = 0.0
    kv_bytes: object = 0.0
    state_bytes: object = 0.0
    t_memory: object = 0.0
    t_compute: object = 0.0
    t_link: object = 0.0
    link_bytes: object = 0.0

    @property
    def bound(self):
        """The term that dominates this node: see :func:`bound_of` (computed on access)."""
        return bound_of(self.t_memory, self.t_compute, self.time, self.t_link)

    def to_dict(self) -> dict:
        """Plain values under unit-suffixed keys (``time_s``, ``memory_time_s``...)."""
        out = {_NODE_KEYS.get(k, k): _plain(v)
               for k, v in attrs.asdict(self, recurse=False).items()}
        out["bound"] = _plain(self.bound)
        return out


#: NodeCost field -> its unit-suffixed key in ``to_dict()``
_NODE_KEYS = {"time": "time_s", "t_memory": "memory_time_s", "t_compute": "compute_time_s",
              "t_link": "link_time_s"}


@attrs.frozen(repr=False)
class Estimate(Result):
    """A decode step or a prefill on one device: per-node rows, totals and the basis.

    ``time`` is the sum of node times (s); ``bound`` the term that dominates the sum.
    Decode: ``batch`` sequences each at ``context`` tokens. Prefill: ``tokens`` tokens at a
    causal half-context ``tokens / 2``. With ``tp > 1`` rows and totals are one device's.
    """

    mode: str
    workload: str
    device: str
    cost_model: str
    basis: str
    measured: bool
    rows: tuple[NodeCost, ...]
    batch: object = 1
    context: object = 0
    tokens: object = 0
    notes: tuple[str, ...] = ()
    settings: Mapping[str, object] = attrs.field(factory=dict)
    tp: int = 1
    footprint: Footprint | None = None  # of one device, for the memory check
    memory_seqs: object = 0  # sequences held (decode: batch; prefill: seqs)
    memory_context: object = 0  # tokens each holds (decode: context; prefill: tokens)
    usable_memory: float = 0.0  # one device's capacity * usable_fraction, B
    capacity: float = 0.0
    usable_fraction: float = 1.0
    plugins: tuple[str, ...] = ()  # the registry's plugin set that produced this estimate
    tdp: float = 0.0  # one device's board power, W (0: the spec declares none)
    slot_peaks: Mapping[str, float] = attrs.field(factory=dict)  # the device's datasheet peaks
    device_class: str = ""  # vendor and category, the stratum of its interval
    inside: bool = False  # its bandwidth is measured: the calibrated range of its interval
    #: an engine kernel covering its nodes was measured at other GEMM rows than it runs
    outside_profile_range: bool = False

    HEADLINE = (
        Headline("time", "s", "time", key_name="time_s"),
        Headline("memory_time", "s", "memory_time", key_name="memory_time_s"),
        Headline("compute_time", "s", "compute_time", key_name="compute_time_s"),
        Headline("link_time", "s", "link_time", key_name="link_time_s"),
        Headline("flops", "FLOP", "flops", key_name="flops"),
        Headline("bytes", "B", "bytes", key_name="bytes"),
        Headline("tokens_per_second", "token/s", "tokens_per_second",
                 key_name="tokens_per_s"),
        Headline("energy", "J", "energy", key_name="energy_j"),
        Headline("memory_required", "B", "memory_required", key_name="required_bytes"),
    )
    KIND = "estimate"
    PLOT = "breakdown"

    def title(self) -> str:
        tp = f"{self.tp} x " if self.tp > 1 else ""
        if self.mode == "decode":
            what = f"decode, batch {_short_count(self.batch)} at context " \
                   f"{_short_count(self.context)}"
        else:
            what = f"{self.mode}, {_short_count(self.tokens)} tokens"
        return f"{self.workload} on {tp}{self.device}: {what}, {_plain(self.bound)}-bound"

    def identity(self) -> dict:
        return {"workload": self.workload, "device": self.device, "mode": self.mode,
                "tp": self.tp, "batch": _plain(self.batch), "context": _plain(self.context),
                "tokens": _plain(self.tokens)}

    def frame_rows(self) -> list[dict]:
        """One row per node (by time, longest first), as ``to_dict()["rows"]``."""
        return [r.to_dict() for r in self.by("node")]

    @property
    def peak(self):
        """Datasheet peak of the slot of the node doing the most FLOPs, FLOP/s (0: none);
        per row for arrays of batch sizes or contexts (the main node can change along
        them, e.g. attention at long contexts), so a row's value never depends on the
        other rows evaluated with it."""
        rows = [r for r in self.rows if r.slot in self.slot_peaks]
        if not rows:
            return 0.0
        flops = [r.flops for r in rows]
        if not any(isinstance(f, np.ndarray) for f in flops):
            main = max(range(len(rows)), key=lambda i: float(flops[i]))
            return float(self.slot_peaks[rows[main].slot])
        stacked = np.stack(np.broadcast_arrays(*(np.asarray(f, dtype=float) for f in flops)))
        peaks = np.array([float(self.slot_peaks[r.slot]) for r in rows])
        return peaks[np.argmax(stacked, axis=0)]

    @property
    def utilization(self):
        """Hardware FLOPs utilization of one device, ``min(flops / (time * peak), 1)``
        against the datasheet peak of the step's main matrix slot (0 without one)."""
        peak = self.peak
        if not np.all(np.asarray(peak) > 0):
            if isinstance(peak, np.ndarray):
                with np.errstate(divide="ignore", invalid="ignore"):
                    u = np.where(peak > 0, self.flops / (self.time * peak), 0.0)
                return np.minimum(u, 1.0)
            return 0.0 * self.time
        return np.minimum(self.flops / (self.time * peak), 1.0)

    @property
    def energy(self):
        """Energy of one device over the step, J: the Engine's power model,
        ``E = TDP * (0.30 + 0.70 * utilization) * time`` (0 when the spec has no TDP)."""
        from ..engine.calibration import energy

        return energy(self.tdp, self.utilization, self.time)

    @property
    def energy_measured_model(self):
        """Energy of one device over the step on the per-op model, J
        (:func:`roofkit.energy.step_energy`; the TDP model where the device has no constants)."""
        from ..energy import step_energy

        return step_energy(self)

    @property
    def time_power_limited(self):
        """The step's time under the power limit, s (:func:`roofkit.energy.step_time`: the
        time the per-op energy is charged over; the step's own without per-op constants)."""
        from ..energy import step_time

        return step_time(self)

    @property
    def memory_required(self):
        """Bytes one device holds for this step: weights + sequences x (KV + state), as
        :meth:`Footprint.bytes` (None without a footprint)."""
        if self.footprint is None:
            return None
        return self.footprint.bytes(self.memory_seqs, self.memory_context)

    @property
    def memory_margin(self):
        """usable - required, B (negative: short by that much)."""
        req = self.memory_required
        return None if req is None else self.usable_memory - req

    @property
    def fits(self):
        """Whether weights, KV cache and state of the step's sequences fit in one device's
        usable memory (an array for arrays of batch sizes or contexts; None without a
        footprint). The time is estimated either way, as if every byte were resident."""
        req = self.memory_required
        if req is None:
            return None
        ok = req <= self.usable_memory
        return ok if isinstance(ok, np.ndarray) else bool(ok)

    def memory_dict(self) -> dict | None:
        """The memory check for JSON: required, usable, margin, fits, and what it counts."""
        fp = self.footprint
        if fp is None:
            return None
        s, c = self.memory_seqs, self.memory_context
        return {"fits": _plain(self.fits), "required_bytes": _plain(self.memory_required),
                "usable_bytes": self.usable_memory, "capacity_bytes": self.capacity,
                "usable_fraction": self.usable_fraction,
                "margin_bytes": _plain(self.memory_margin), "weights_bytes": fp.weights,
                "kv_bytes": _plain(s * fp.kv_bytes(c)),
                "state_bytes": _plain(s * fp.state_per_seq),
                "conv_state_bytes": _plain(s * fp.conv_state_per_seq),
                "conv_windows_counted": fp.count_conv,
                "sequences": _whole(s), "tokens_per_sequence": _whole(c),
                "per_device": True}

    def _sum(self, field):
        return sum(getattr(r, field) for r in self.rows)

    @property
    def time(self):
        return self._sum("time")

    @property
    def flops(self):
        return self._sum("flops")

    @property
    def bytes(self):
        return self._sum("bytes")

    @property
    def memory_time(self):
        """Σ bytes / bandwidth over nodes, s."""
        return self._sum("t_memory")

    @property
    def compute_time(self):
        """Σ FLOPs / peak over nodes, s."""
        return self._sum("t_compute")

    @property
    def link_time(self):
        """Σ collective link time over nodes (0 without tensor parallelism), s."""
        return self._sum("t_link")

    @property
    def kernels(self) -> int:
        """Node instances of one step (each one kernel launch), collectives included."""
        return int(sum(r.count for r in self.rows))

    @property
    def bound(self):
        """The term that dominates the step: 'memory', 'compute', 'interconnect' or
        'overhead'."""
        return bound_of(self.memory_time, self.compute_time, self.time, self.link_time)

    @property
    def tokens_per_second(self):
        """Tokens produced (decode: ``batch``) or processed (prefill: ``tokens``) per s."""
        n = self.batch if self.mode == "decode" else self.tokens
        return np.asarray(n, dtype=float) / self.time if isinstance(
            self.time, np.ndarray) else float(n) / self.time

    def by(self, key: str = "node") -> list[NodeCost]:
        """Rows grouped by ``node``, ``op`` or ``section``, sorted by time, longest first."""
        if key not in ("node", "op", "section"):
            from ..errors import ArgumentError, shown

            raise ArgumentError(f"group by node, op or section, not {shown(key, 80)}")
        if key == "node":
            rows = list(self.rows)
        else:
            groups: dict[str, list[NodeCost]] = {}
            for r in self.rows:
                groups.setdefault(getattr(r, key), []).append(r)
            rows = []
            for name, rs in groups.items():
                s = {f: sum(getattr(r, f) for r in rs) for f in
                     ("flops", "bytes", "time", "weight_bytes", "act_bytes", "kv_bytes",
                      "state_bytes", "t_memory", "t_compute", "t_link", "link_bytes")}
                rows.append(NodeCost(
                    node=name, op=rs[0].op if key == "op" else "*",
                    section=rs[0].section if key == "section" else
                    ",".join(dict.fromkeys(r.section for r in rs)),
                    count=sum(r.count for r in rs),
                    slot=",".join(dict.fromkeys(r.slot for r in rs)), **s))
        return sorted(rows, key=lambda r: -float(np.max(r.time)))

    def interval(self, level: float = 0.8):
        """The prediction interval of ``time`` (s) at ``level``, from the out-of-sample
        residuals of its stratum (:mod:`roofkit.intervals`); None for a batch of several
        sizes or where no residuals apply."""
        from ..intervals import estimate_interval, table

        if np.ndim(self.time) != 0:
            return None
        return estimate_interval(float(self.time), table(), metric=self.mode,
                                 engine=str(self.settings.get("engine") or ""),
                                 device_class=self.device_class, inside=self.inside,
                                 beyond=self.outside_profile_range, level=level)

    def to_dict(self, by: str = "node", level: float = 0.8) -> dict:
        iv = self.interval(level)
        return {
            "intervals": {"time_s": iv.to_dict()} if iv is not None else {},
            "mode": self.mode, "workload": self.workload, "device": self.device,
            "tp": self.tp, "per_device": True,
            "cost_model": self.cost_model, "batch": _plain(self.batch),
            "context": _plain(self.context), "tokens": _plain(self.tokens),
            "settings": _plain(dict(self.settings)),
            "rows": [r.to_dict() for r in self.by(by)],
            "totals": {"time_s": _plain(self.time), "flops": _plain(self.flops),
                       "bytes": _plain(self.bytes), "memory_time_s": _plain(self.memory_time),
                       "compute_time_s": _plain(self.compute_time),
                       "link_time_s": _plain(self.link_time),
                       "kernels": self.kernels,
                       "utilization": _plain(self.utilization),
                       "energy_j": _plain(self.energy),
                       "energy_measured_model_j": _plain(self.energy_measured_model),
                       "time_power_limited_s": _plain(self.time_power_limited),
                       "bound": _plain(self.bound),
                       "tokens_per_s": _plain(self.tokens_per_second)},
            "memory": self.memory_dict(),
            "basis": self.basis, "measured": self.measured, "notes": list(self.notes),
            "outside_profile_range": self.outside_profile_range,
            "plugins": list(self.plugins),
        }


#: Fit field -> its unit-suffixed key in ``to_dict()``
_FIT_KEYS = {"required": "required_bytes", "usable": "usable_bytes",
             "capacity": "capacity_bytes", "margin": "margin_bytes"}


@attrs.frozen(repr=False)
class Footprint(Result):
    """What a workload holds in device memory.

    ``weights`` counts every section's weights once (a tied head or a draft's shared
    embedding adds nothing); ``kv_per_token`` the KV bytes one token of one sequence adds
    over every attention node; ``state_per_seq`` the recurrent state of one sequence, as the
    reference: GatedDeltaNet ``lin_v_heads * lin_k_dim * lin_v_dim`` at ``ssm_h_dtype`` (f32
    4 B; f16, f16-pool, bf16 2 B) and Mamba/Mamba2 ``heads * head_dim * ssm_state * 4``.
    ``conv_state_per_seq`` is the conv1d windows of those layers, reported apart and counted
    only when ``count_conv`` (``conv_windows=True``; the reference leaves them out).

        bytes(seqs, context) = weights + seqs * per_seq(context)
        per_seq(context)     = kv(context) + state_per_seq (+ conv_state_per_seq)

    where kv(context) = Σ_attention kv_per_token * min(context, window).

    ``weight_floor`` is the reference's weight floor: the weight bytes one decode row reads
    in the main section (every layer; routed experts at top_k), and ``weight_floor_time``
    that over the device bandwidth. ``weight_floor_all_sections`` (and its ``_time``) adds
    what a decode step also reads outside the layers: one embedding row, the final norm and
    the LM head. With ``tp > 1`` every figure is one device's shard (KV heads replicated
    when there are fewer than devices).
    """

    workload: str
    weights: float
    kv_per_token: float
    state_per_seq: float
    weight_floor: float
    kv_cache_dtype: str
    ssm_h_dtype: str
    weights_by_role: Mapping[str, float] = attrs.field(factory=dict)
    weights_by_section: Mapping[str, float] = attrs.field(factory=dict)
    device: str | None = None
    weight_floor_time: float | None = None
    basis: str = ""
    kv_terms: tuple = ()  # (kv_per_token * count, f(context) -> tokens kept) per attention node
    tp: int = 1
    conv_state_per_seq: float = 0.0
    count_conv: bool = False
    weight_floor_all_sections: float = 0.0
    weight_floor_all_sections_time: float | None = None
    state_by_op: Mapping[str, float] = attrs.field(factory=dict)  # recurrent state per op kind
    plugins: tuple = ()  # the registry's plugin set

    HEADLINE = (
        Headline("weights", "B", "weights", key_name="weights_bytes"),
        Headline("kv_per_token", "B", "kv_per_token", key_name="kv_bytes_per_token"),
        Headline("state_per_seq", "B", "state_per_seq", key_name="state_bytes_per_seq"),
        Headline("weight_floor", "B", "weight_floor", key_name="weight_floor_bytes"),
        Headline("weight_floor_time", "s", "weight_floor_time",
                 key_name="weight_floor_time_s"),
    )
    KIND = "footprint"

    def title(self) -> str:
        tp = f"{self.tp} x " if self.tp > 1 else ""
        where = f" on {tp}{self.device}" if self.device else ""
        return f"{self.workload}{where}, KV {self.kv_cache_dtype}"

    def identity(self) -> dict:
        return {"workload": self.workload, "device": self.device, "tp": self.tp,
                "kv_cache_dtype": self.kv_cache_dtype}

    def kv_bytes(self, context):
        """KV bytes of one sequence at ``context`` tokens (windows cap what is kept)."""
        vec = isinstance(context, np.ndarray)
        return sum(b * (fv if vec else fs)(context)[0] for b, fs, fv in self.kv_terms)

    def per_seq(self, context):
        """Bytes one sequence of ``context`` tokens holds: KV, recurrent state, and the conv
        windows when ``count_conv``."""
        state = self.state_per_seq + (self.conv_state_per_seq if self.count_conv else 0.0)
        return self.kv_bytes(context) + state

    def bytes(self, seqs, context):
        """Bytes for ``seqs`` sequences of ``context`` tokens, weights included."""
        return self.weights + seqs * self.per_seq(context)

    def to_dict(self) -> dict:
        """Plain values under unit-suffixed keys."""
        return {_FOOTPRINT_KEYS.get(k, k): _plain(v)
                for k, v in attrs.asdict(self, recurse=False).items() if k != "kv_terms"}


#: Footprint field -> its unit-suffixed key in ``to_dict()``
_FOOTPRINT_KEYS = {
    "weights": "weights_bytes", "kv_per_token": "kv_bytes_per_token",
    "state_per_seq": "state_bytes_per_seq", "weight_floor": "weight_floor_bytes",
    "weight_floor_time": "weight_floor_time_s", "conv_state_per_seq": "conv_state_bytes_per_seq",
    "weight_floor_all_sections": "weight_floor_all_sections_bytes",
    "weight_floor_all_sections_time": "weight_floor_all_sections_time_s",
    "weights_by_role": "weights_by_role_bytes", "weights_by_section": "weights_by_section_bytes",
    "state_by_op": "state_by_op_bytes"}


def _short_count(v) -> str:
    if isinstance(v, np.ndarray):
        return f"{int(v.min())}..{int(v.max())}" if v.size > 1 else str(int(v.reshape(-1)[0]))
    return str(int(v)) if float(v).is_integer() else str(v)


@attrs.frozen(repr=False)
class Fit(Result):
    """Whether ``seqs`` sequences of ``context`` tokens fit in the device's usable memory.

    usable = capacity * usable_fraction (the device spec gives the fraction's reason);
    ``margin`` = usable - required (negative: short by that much); ``max_seqs`` the most
    sequences of that context that fit beside the weights. Given arrays of ``seqs`` or
    ``context``, ``fits``, ``required``, ``margin`` and ``max_seqs`` are arrays too.
    ``not_counted`` says what ``required`` leaves out (the conv windows unless
    ``conv_windows=True``).
    """

    workload: str
    device: str
    seqs: int
    context: int
    fits: bool
    required: float
    usable: float
    capacity: float
    usable_fraction: float
    usable_reason: str
    margin: float
    max_seqs: int
    footprint: Footprint
    tp: int = 1
    plugins: tuple[str, ...] = ()  # the registry's plugin set that produced this check

    HEADLINE = (
        Headline("required", "B", "required", key_name="required_bytes"),
        Headline("usable", "B", "usable", key_name="usable_bytes"),
        Headline("margin", "B", "margin", key_name="margin_bytes"),
        Headline("weights", "B", "weights", key_name="weights_bytes"),
        Headline("kv", "B", "kv_bytes", key_name="kv_bytes"),
        Headline("state", "B", "state_bytes", key_name="state_bytes"),
        Headline("max_seqs", "", "max_seqs"),
    )
    KIND = "fit"
    PLOT = "memory"

    def title(self) -> str:
        tp = f"{self.tp} x " if self.tp > 1 else ""
        verdict = _plain(self.fits)
        verdict = ("fits" if verdict else "does not fit") if isinstance(verdict, bool) else \
            "fits (per point)"
        return (f"{self.workload} on {tp}{self.device}: {_short_count(self.seqs)} seqs x "
                f"{_short_count(self.context)} tokens, {verdict}")

    def identity(self) -> dict:
        return {"workload": self.workload, "device": self.device, "tp": self.tp,
                "seqs": _plain(self.seqs), "context": _plain(self.context),
                "fits": _plain(self.fits)}

    @property
    def basis(self) -> str:
        """The device's capacity and usable fraction (from its spec); no roofline."""
        return (f"device spec capacity {self.capacity:.6g} B x usable_fraction "
                f"{self.usable_fraction:g} ({self.usable_reason})")

    @property
    def weights(self) -> float:
        return self.footprint.weights

    @property
    def kv_bytes(self):
        return self.seqs * self.footprint.kv_bytes(self.context)

    @property
    def state_bytes(self):
        return self.seqs * self.footprint.state_per_seq

    @property
    def conv_state_bytes(self):
        """The conv windows of ``seqs`` sequences, counted in ``required`` only when
        :attr:`conv_counted`."""
        return self.seqs * self.footprint.conv_state_per_seq

    @property
    def conv_counted(self) -> bool:
        return self.footprint.count_conv

    @property
    def not_counted(self) -> str:
        """What the required bytes leave out, in words."""
        out = "activations and workspaces, the CUDA context beyond the usable fraction, " \
              "allocator fragmentation"
        if self.footprint.conv_state_per_seq and not self.conv_counted:
            out += (", conv windows of the recurrent layers (as the reference; "
                    "conv_windows=True or --conv-windows counts them)")
        return out

    def to_dict(self) -> dict:
        """Plain values under unit-suffixed keys (the JSON of ``roofkit fit``)."""
        d = {_FIT_KEYS.get(k, k): _plain(v) for k, v in attrs.asdict(self, recurse=False).items()
             if k != "footprint"}
        d["plugins"] = list(self.plugins)
        d["basis"] = self.basis
        d["weights_bytes"] = self.weights
        d["kv_bytes"] = _plain(self.kv_bytes)
        d["state_bytes"] = _plain(self.state_bytes)
        d["conv_state_bytes"] = _plain(self.conv_state_bytes)
        d["conv_windows_counted"] = self.conv_counted
        d["not_counted"] = self.not_counted
        d["footprint"] = self.footprint.to_dict()
        return d
