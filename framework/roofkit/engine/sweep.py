"""``Engine.sweep``: the Cartesian product of devices, batch sizes and precisions.

    rows = [solve(model, h, b, p) for h in hardware_list for b in batch_sizes
            for p in precisions if the footprint fits]

Rows keep input order. Configurations that do not fit are never lost silently: they are in
``result.omitted`` with their reason, and inline (with a ``reason`` key) when
``include_infeasible=True``. :func:`inference_arrays` is the same equation over a numpy array
of batch sizes, bit-identical to the scalar path, for bulk exploration.
"""

from __future__ import annotations

import numpy as np

from .. import bounds, units
from ..errors import ArgumentError, shown
from . import calibration as cal
from . import validation
from .facts import cache_for
from .solve import _roofline


class SweepResult(list):
    """The feasible rows (dicts: hardware, batch_size, precision, profile); ``omitted`` holds
    the configurations that did not fit, each with its ``reason``."""

    omitted: list[dict]

    def __init__(self, rows=(), omitted=()):
        super().__init__(rows)
        self.omitted = list(omitted)

    # Additive views in the result convention (docs/results.md); the list itself is the
    # reference's return value and is left as it is.
    def to_dict(self) -> list[dict]:
        """One plain row per feasible configuration: hardware, batch_size, precision and the
        profile's unit-suffixed figures (:meth:`InferenceProfile.to_dict`)."""
        return [{"hardware": r["hardware"], "batch_size": r["batch_size"],
                 "precision": r["precision"], **r["profile"].to_dict()} for r in self]

    def to_pandas(self):
        """A ``pandas.DataFrame`` of :meth:`to_dict`; needs the ``pandas`` extra."""
        try:
            import pandas as pd
        except ImportError:
            raise ImportError("to_pandas() needs pandas: pip install 'roofkit[pandas]'") \
                from None
        frame = pd.DataFrame(self.to_dict())
        frame.attrs.update({"kind": "engine-sweep", "omitted": len(self.omitted)})
        return frame

    def _repr_html_(self, limit: int = 20) -> str:
        """A small table for notebooks: the first ``limit`` rows' headline figures."""
        import html

        cols = ("hardware", "batch_size", "precision", "latency_ms", "throughput_per_s",
                "bottleneck", "memory_footprint_bytes")
        rows = self.to_dict()
        head = "".join(f"<th>{c}</th>" for c in cols)
        body = "".join("<tr>" + "".join(
            f"<td>{html.escape(f'{r[c]:.4g}' if isinstance(r[c], float) else str(r[c]))}</td>"
            for c in cols) + "</tr>" for r in rows[:limit])
        more = f"<caption>{len(rows)} feasible, {len(self.omitted)} omitted" + (
            f", first {limit} shown" if len(rows) > limit else "") + "</caption>"
        return f"<table>{more}<tr>{head}</tr>{body}</table>"


def _reason(profile) -> str:
    return profile._df.misfit_reason(f"needs {units.fmt(profile._footprint, 'bytes')}",
                                     f"{profile._prec.name} weights", False, profile._weights)


def sweep(model, hardware_list, batch_sizes=None, precisions=None, efficiency=0.5,
          include_infeasible=False, *, registry=None) -> SweepResult:
    """Inference profiles of ``model`` over ``hardware_list`` x ``batch_sizes`` x ``precisions``.

    None or empty lists default to ``[1]`` and ``['fp16']``; an empty ``hardware_list`` gives
    no rows. Invalid arguments raise; only capacity failures are filtered (into ``omitted``).
    """
    eff = validation.efficiency(efficiency)
    batches = validation.int_list("batch_sizes", batch_sizes, [1])
    names = validation.name_list("precisions", precisions, ["fp16"])
    include = validation.flag("include_infeasible", include_infeasible)
    if isinstance(hardware_list, str):
        hardware_list = [hardware_list]
    cache = cache_for(registry)
    plugins = cache.plugins
    wf = cache.workload(model)
    precs = [(name, cache.precision(name)) for name in names]
    devices = [cache.device(h) for h in hardware_list]
    rows, omitted = [], []
    append = rows.append
    for df in devices:
        hw = df.name
        for b in batches:
            for name, prec in precs:
                profile = _roofline(wf, df, prec, b, eff, False, False, 2048, 0, 1, False, False,
                                    plugins)
                if profile.feasible:
                    append({"hardware": hw, "batch_size": b, "precision": name,
                            "profile": profile})
                else:
                    row = {"hardware": hw, "batch_size": b, "precision": name,
                           "profile": profile, "reason": _reason(profile)}
                    omitted.append(row)
                    if include:
                        append(row)
    return SweepResult(rows, omitted)


def inference_arrays(model, hardware, batch_sizes, precision="fp16", efficiency=0.5, *,
                     registry=None) -> dict:
    """The inference equation of ``Engine.solve`` over an array of batch sizes at once.

    Returns numpy arrays (seconds, 1/s, J) ``latency``, ``latency_compute``,
    ``latency_memory``, ``throughput``, ``energy``, ``mfu``, ``hfu``, ``memory_bound`` and
    scalars ``latency_overhead``, ``memory_footprint``, ``feasible``, ``bandwidth_path``.
    Element for element equal to ``Engine.solve`` (same operations in the same order).
    """
    eff = validation.efficiency(efficiency)
    b = np.asarray(batch_sizes)
    if b.ndim != 1 or not np.issubdtype(b.dtype, np.integer) or (b < 1).any():
        raise ArgumentError(f"batch_sizes must be a 1-d sequence of integers >= 1, got "
                            f"{shown(batch_sizes)}")
    bounds.check_array("batch_sizes", b)
    cache = cache_for(registry)
    wf, df, prec = cache.workload(model), cache.device(hardware), cache.precision(precision)
    peak, slot, fell_back = df.peak(prec)
    weights = wf.params * prec.bytes_per_element
    feasible = df.fits(weights)
    bw, tier = df.resident_path(weights) if feasible else df.misfit_path(weights, False)
    bf = b.astype(np.float64)
    ops = wf.flops * bf
    t_compute = ops / (peak * eff)
    traffic = weights * (1.0 + cal.ACTIVATION_TRAFFIC_PER_SAMPLE * bf)
    with np.errstate(divide="ignore"):  # no path (no host link): bandwidth 0, inf latency
        t_memory = traffic / bw
    t_overhead = df.dispatch + wf.layers * df.layer * cal.INFERENCE_LAUNCH_MULTIPLIER
    memory_bound = t_memory > t_compute
    latency = np.where(memory_bound, t_memory, t_compute) + t_overhead
    util = np.minimum(ops / latency / peak, 1.0)
    energy = (df.tdp * (cal.ENERGY_IDLE_FRACTION + cal.ENERGY_DYNAMIC_FRACTION * util) * latency
              if df.tdp > 0.0 else np.zeros_like(latency))
    return {"latency": latency, "latency_compute": t_compute, "latency_memory": t_memory,
            "latency_overhead": t_overhead, "throughput": bf / latency, "energy": energy,
            "mfu": util, "hfu": util.copy(), "memory_bound": memory_bound,
            "memory_footprint": weights, "feasible": feasible, "bandwidth_path": tier,
            "peak": peak, "peak_slot": slot, "peak_fell_back": fell_back}
