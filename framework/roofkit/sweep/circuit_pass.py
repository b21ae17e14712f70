"""The circuit's decode and prefill estimates over arrays: one call per (device, precision,
tp) group with the batch sizes and contexts of all its rows as numpy arrays.

``roofkit.circuit.api.decode`` and ``prefill`` compile every node's op-cost expressions once
per (workload, device, settings, tp) and evaluate them on floats or arrays alike, so a group
is one pass over its nodes (not one per row), with the same expressions as the scalar call:

    decode:  rows = seqs = B, context C;   step time = sum over nodes of count * t_node
    prefill: rows = B * T at context max(T // 2, 1) over the layers; T = ``context``
             (``head=True``: plus the embedding gather and the LM head at B rows)
    t_node  = the cost model's time of the node (+ the link time of a collective)

With ``tp = N`` every figure is one of N devices' (the circuit's shard, with two all-reduces
per transformer layer); the devices run in lockstep, so the step time is one device's.
Throughput is tokens per second of the replica: B / time (decode), B * T / time (prefill).
Capacity is the estimate's own memory check per device (``est.fits``),
``weights / N + B * (kv(C) + state) / N <= capacity * usable_fraction`` (KV heads replicated
when fewer than devices). A tp the device's interconnect cannot join, or that does not
divide the model's heads, makes its rows infeasible with the reason (outputs NaN).

Every row also says what its numbers rest on: ``basis`` (datasheet or calibrated),
``compute_slot`` (the slots the matrix nodes ran at) and ``fell_back`` (a format the device
has no peak for ran at a slot of its fallback chain, e.g. fp8 on an A100 at the fp16 peak).
"""

from __future__ import annotations

import numpy as np

from .. import units
from ..circuit.results import BOUND_WORDS, bound_codes
from ..errors import SpecError
from .grid import int_axis, name_axis

INPUTS = ("workload", "device", "precision", "tp", "context", "batch_size")
OUTPUTS = ("latency_ms", "step_ms", "throughput_per_s", "latency_compute_ms",
           "latency_memory_ms", "flops", "bytes_moved", "energy_j", "bottleneck",
           "memory_footprint_bytes", "weights_bytes", "kv_bytes", "capacity_bytes",
           "feasible", "reason", "basis", "compute_slot", "fell_back")
#: text and flag outputs
TEXT = ("bottleneck", "reason", "basis", "compute_slot")
FLAGS = ("feasible", "fell_back")
#: the circuit settings a sweep passes through (``roofkit.circuit.api`` keyword arguments)
CIRCUIT_SETTINGS = ("kv_cache_dtype", "cost_model", "basis", "formats", "ssm_h_dtype", "head")


def circuit_settings(mode, *, precisions, contexts, tp, training, efficiency, options):
    """Validate the decode/prefill arguments: (settings, precisions, contexts, tps)."""
    if training:
        raise SpecError(f"training=True belongs to mode='engine'; mode={mode!r} is inference")
    if efficiency != 0.5:
        raise SpecError(f"efficiency is the Engine equation's compute derating; mode={mode!r} "
                        "costs nodes on the device roofline (basis='datasheet' or "
                        "'calibrated')")
    tps = int_axis("tp", tp, [1])
    if mode == "decode":
        ctx = int_axis("contexts", contexts, [2048], minimum=0)
    else:
        ctx = int_axis("contexts", contexts, [2048])
    precs = name_axis("precisions", precisions, [None])
    head = options.get("head")
    if head is not None:
        if mode != "prefill":
            raise SpecError("head= is a prefill setting (the embedding gather and the LM head "
                            "of the first token); a decode step always costs them")
        if not isinstance(head, bool | np.bool_):
            raise SpecError(f"head must be True or False, got {head!r}")
    settings = {"basis": "datasheet", **{k: v for k, v in options.items() if v is not None}}
    if settings.get("cost_model") is None:
        from ..circuit.api import default_cost_model

        settings["cost_model"] = default_cost_model(settings["basis"])
    formats = settings.get("formats")
    if formats is not None:
        settings["formats"] = dict(formats)
    return settings, precs, ctx, tps


class CircuitPass:
    """Resolves the circuit plans lazily (cached on the registry) and evaluates groups."""

    axis = "context"
    inputs = INPUTS

    def __init__(self, grid, registry):
        from ..registry import resolve

        self.mode = grid.mode
        #: decode: the step is the inter-token latency; prefill: the time to first token
        self.step = "itl_ms" if grid.mode == "decode" else "ttft_ms"
        self.outputs = tuple(self.step if c == "step_ms" else c for c in OUTPUTS)
        self.reg = resolve(registry)
        s = dict(grid.settings)
        self.kv = s.pop("kv_cache_dtype", None)
        self.head = bool(s.pop("head", False))  # prefill: add the embedding and the LM head
        self.cost_model = s.pop("cost_model", "roofline")
        self.settings = s  # basis, formats, ssm_h_dtype
        self.workload = grid.workload
        self.wname = self.reg.workload(grid.workload).name
        self.devices = list(grid.devices)
        self.dspecs = [self.reg.device(d) for d in grid.devices]
        self.precs = list(grid.precisions)
        self._labels: dict = {}
        self._computes: dict = {}
        self._tp_problems: dict = {}

    def output_kinds(self) -> dict[str, str]:
        return {c: "text" if c in TEXT else "bool" if c in FLAGS else "float"
                for c in self.outputs}

    def meta(self) -> dict:
        extra = {"head": self.head} if self.mode == "prefill" else {}
        return {"mode": self.mode, "workload": self.wname, "kv_cache_dtype": self.kv,
                "cost_model": self.cost_model, **self.settings, **extra,
                "sample": "token", "plugins": list(self.reg.plugin_set)}

    def _footprint(self, d: int, p: int, tp: int):
        from ..circuit import api

        fs = {k: v for k, v in self.settings.items() if k in ("formats", "ssm_h_dtype",
                                                                 "basis")}
        return api.footprint(self.workload, self.devices[d], precision=self.precs[p],
                             kv_cache_dtype=self.kv, registry=self.reg, tp=tp, **fs)

    def _tp_problem(self, d: int, p: int, tp: int) -> str | None:
        """Why ``tp`` devices cannot run this group (None: they can); cached."""
        key = (d, p, tp)
        if key not in self._tp_problems:
            problem = None
            if tp > 1:
                try:
                    self._footprint(d, p, tp)
                except SpecError as exc:
                    problem = str(exc)
            self._tp_problems[key] = problem
        return self._tp_problems[key]

    def _compute(self, d: int, p: int, tp: int) -> tuple[str, str, bool]:
        """(basis, compute slot(s), fell back?) of a group, from the plan the estimate runs.

        ``basis``: ``datasheet``, ``calibrated`` (measured constants), or ``datasheet (no
        calibration)`` when the calibrated basis has none for the device. ``compute_slot``:
        the slots the matrix nodes run at, in node order, joined by ``+`` (weights at fp8
        and attention against a bf16 KV cache: ``fp8+bf16``). ``fell_back``: some node's
        format has no peak on the device and runs at a slot of its fallback chain (fp8 on
        an A100 at the fp16 peak); the estimate's basis text names each substitution.
        """
        key = (d, p, tp)
        hit = self._computes.get(key)
        if hit is None:
            from ..circuit import api

            plan = api.plan(self.workload, self.devices[d], self.mode, self.precs[p],
                            self.kv, self.cost_model, self.reg, tp, **self.settings)
            roof = plan.roofline
            if roof.measured:
                basis = "calibrated"
            elif self.settings.get("basis", "datasheet") == "datasheet":
                basis = "datasheet"
            else:
                basis = "datasheet only (no calibration)"
            slots = "+".join(dict.fromkeys(n.slot for n in plan.nodes
                                           if n.compute == "matrix"))
            hit = self._computes[key] = (basis, slots, bool(plan.fallbacks))
        return hit

    def labels(self, d: int, p: int) -> dict:
        key = (d, p)
        hit = self._labels.get(key)
        if hit is None:
            from ..circuit.model import build_model

            prec = self.precs[p]
            if prec is None:  # the workload's own default format
                model = build_model(self.workload, self.reg, precision=None,
                                    formats=self.settings.get("formats"),
                                    kv_cache_dtype=self.kv,
                                    ssm_h_dtype=self.settings.get("ssm_h_dtype"))
                name = model.formats.fallback.name
            else:
                name = self.reg.precision(prec).name
            hit = self._labels[key] = {"workload": self.wname,
                                       "device": self.dspecs[d].name, "precision": name}
        return hit

    def _refused(self, b: np.ndarray, d: int, reason: str) -> dict:
        """Rows of a tp the device or model cannot take: NaN outputs, infeasible, why; the
        columns in the order of :meth:`run`'s (tables of each basis are joined by name)."""
        nan = np.full(b.shape, np.nan)
        mem = self.dspecs[d].memory
        return {**{c: nan for c in ("latency_ms", self.step, "throughput_per_s",
                                    "latency_compute_ms", "latency_memory_ms", "flops",
                                    "bytes_moved", "energy_j")},
                "bottleneck": "tp refused",
                **{c: nan for c in ("memory_footprint_bytes", "weights_bytes", "kv_bytes")},
                "capacity_bytes": mem.capacity * mem.usable_fraction,
                "feasible": np.zeros(b.shape, dtype=bool),
                "reason": (np.zeros(b.shape, dtype=bool), reason, reason),
                "basis": self.settings.get("basis", "datasheet"),
                "compute_slot": "",
                "fell_back": False}

    def run(self, d: int, p: int, tp: int, context: np.ndarray, batch: np.ndarray) -> dict:
        from ..circuit import api

        b = batch.astype(np.float64)
        c = context.astype(np.float64)
        problem = self._tp_problem(d, p, tp)
        if problem is not None:
            return self._refused(b, d, f"tp={tp} refused: {problem}")
        kw = dict(precision=self.precs[p], kv_cache_dtype=self.kv, cost_model=self.cost_model,
                  registry=self.reg, tp=tp, **self.settings)
        if self.mode == "decode":
            est = api.decode(self.workload, self.devices[d], batch=b, context=c, **kw)
            tokens = b
        else:
            est = api.prefill(self.workload, self.devices[d], tokens=c, seqs=b, head=self.head,
                              **kw)
            tokens = b * c
        basis, slots, fell_back = self._compute(d, p, tp)
        time = np.broadcast_to(np.asarray(est.time, dtype=np.float64), b.shape)
        codes = np.broadcast_to(bound_codes(est.memory_time, est.compute_time, est.time,
                                            est.link_time), b.shape)

        # the estimate's own memory check: weights + batch x (KV + state) per device
        fp = est.footprint
        mem = self.dspecs[d].memory
        usable = est.usable_memory
        required = est.memory_required
        per_batch = b * fp.per_seq(c)
        feasible = np.asarray(est.fits, dtype=bool)
        dev = self.dspecs[d].name if tp == 1 else f"each of {tp} {self.dspecs[d].name}"
        usable_text = units.fmt(usable, "bytes")
        where = (f"{dev}'s usable {usable_text} ({mem.usable_fraction:g} of "
                 f"{units.fmt(mem.capacity, 'bytes')})")
        if fp.weights > usable:
            no = f"weights alone ({units.fmt(fp.weights, 'bytes')}) exceed {where}"
        else:
            no = (f"weights ({units.fmt(fp.weights, 'bytes')}) fit but weights + KV/state of "
                  f"batch x context exceed {where}")
        yes = f"fits: weights + KV/state within {where}"
        return {
            "latency_ms": time * 1e3,
            self.step: time * 1e3,
            "throughput_per_s": tokens / time,
            "latency_compute_ms": np.broadcast_to(est.compute_time, b.shape) * 1e3,
            "latency_memory_ms": np.broadcast_to(est.memory_time, b.shape) * 1e3,
            "flops": np.broadcast_to(est.flops, b.shape),
            "bytes_moved": np.broadcast_to(est.bytes, b.shape),
            "energy_j": np.broadcast_to(est.energy * tp, b.shape),
            "bottleneck": (codes.reshape(-1), BOUND_WORDS),
            "memory_footprint_bytes": np.broadcast_to(required, b.shape),
            "weights_bytes": fp.weights,
            "kv_bytes": np.broadcast_to(per_batch, b.shape),
            "capacity_bytes": usable,
            "feasible": np.broadcast_to(feasible, b.shape),
            "reason": (np.broadcast_to(feasible, b.shape), yes, no),
            "basis": basis,
            "compute_slot": slots,
            "fell_back": fell_back,
        }
