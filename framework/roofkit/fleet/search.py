"""The layout search: every (tp, pp, vpp, cp, ep, dp, micro-batch, recompute, ZeRO) over one
or several device counts, refused early with counts per reason, the rest costed in one numpy
pass of :func:`roofkit.fleet.step.training_step`; the fastest that fit come back as
:class:`~roofkit.fleet.training.TrainingEstimate` objects (recomputed by ``train``, the same
arithmetic), with the Pareto front of step time against devices.

Candidates: tp and cp powers of two up to the scale-up domain (cp up to 16), pp any divisor
of the layers, vpp 1, 2 or 4, ep the powers of two dividing the experts, micro-batches
1, 2, 4, 8, recompute none or full (selective equals none under FlashAttention), ZeRO 0-3.
"""

from __future__ import annotations

import attrs
import numpy as np

from ..errors import SpecError
from ..registry import resolve as resolve_registry
from .cluster import training_cluster, with_devices
from .model import arch_of
from .step import RECOMPUTE, training_step
from .training import DEFAULT_RESERVE, costing, train

REASONS = (
    "tp does not divide the attention heads (or the KV heads)",
    "pp * vpp does not divide the layers",
    "tp * pp * cp does not divide the devices",
    "ep does not divide the experts or dp",
    "global batch is not a multiple of micro-batch * dp",
    "interleaving needs micro-batches to be a multiple of pp",
    "sequence is not a multiple of 2 * cp",
    "does not fit in device memory",
)


def _pow2(limit: int) -> list[int]:
    out, v = [], 1
    while v <= limit:
        out.append(v)
        v *= 2
    return out


def candidates(arch, devices: int, domain: int, fixed: dict) -> dict[str, np.ndarray]:
    """Every combination of the layout axes (``fixed`` pins some), as flat arrays."""
    axes = {
        "tp": _pow2(min(domain, arch.heads, devices)),
        "pp": [p for p in range(1, arch.layers + 1) if arch.layers % p == 0 and p <= devices],
        "vpp": [1, 2, 4],
        "cp": _pow2(min(16, devices)),
        "ep": _pow2(arch.experts) if arch.experts else [1],
        "mb": [1, 2, 4, 8],
        "recompute": [RECOMPUTE["none"], RECOMPUTE["full"]],
        "zero": [0, 1, 2, 3],
    }
    rename = {"micro_batch": "mb"}
    for k, v in fixed.items():
        key = rename.get(k, k)
        if key == "recompute" and isinstance(v, str):
            v = RECOMPUTE[v]
        axes[key] = [v]
    grids = np.meshgrid(*[np.asarray(v) for v in axes.values()], indexing="ij")
    return {k: g.ravel() for k, g in zip(axes, grids, strict=True)}


@attrs.frozen
class SearchResult:
    """The ranked layouts that fit, the Pareto front and the refusals."""

    best: tuple  # TrainingEstimate, fastest first
    pareto: tuple  # (devices, step_time_s, layout dict), devices ascending
    refused: dict  # reason -> count
    evaluated: int
    fitting: int
    workload: str
    cluster: str

    def to_dict(self) -> dict:
        return {"workload": self.workload, "cluster": self.cluster,
                "layouts": [e.to_dict() for e in self.best],
                "pareto": [{"devices": d, "step_time_s": t, "layout": lo}
                           for d, t, lo in self.pareto],
                "refused": dict(self.refused), "evaluated": self.evaluated,
                "fitting": self.fitting}

    def to_pandas(self):
        """The ranked layouts, one row each (flattened :meth:`TrainingEstimate.to_dict`)."""
        from .report import flat, frame

        return frame([flat(e.to_dict()) for e in self.best])

    def _repr_html_(self) -> str:
        from .report import html_table

        rows = [(f"#{i} tp{e.layout.tp} pp{e.layout.pp} v{e.layout.vpp} dp{e.layout.dp} "
                 f"cp{e.layout.cp} ep{e.layout.ep} mb{e.layout.micro_batch} "
                 f"{e.layout.recompute} z{e.layout.zero}",
                 f"{e.step_time_s:.4g} s, MFU {e.mfu:.1%}")
                for i, e in enumerate(self.best, 1)]
        return html_table(f"{self.workload} on {self.cluster}: {self.evaluated:,} layouts, "
                          f"{self.fitting:,} fit", rows)

    def text(self) -> str:
        from ..cli import common

        rows = []
        for i, e in enumerate(self.best, 1):
            lo = e.layout
            rows.append([i, lo.devices, lo.tp, lo.pp, lo.vpp, lo.dp, lo.cp, lo.ep,
                         lo.micro_batch, lo.recompute, lo.zero, f"{e.step_time_s:.4g}",
                         f"{e.mfu:.1%}", f"{e.memory_per_device_bytes / 1e9:.1f}"])
        head = ["#", "devices", "tp", "pp", "vpp", "dp", "cp", "ep", "mb", "recompute",
                "zero", "step s", "MFU", "GB/dev"]
        lines = [f"{self.workload} on {self.cluster}: {self.evaluated:,} layouts, "
                 f"{self.fitting:,} fit", common.table(rows, head)]
        lines.append("refused: " + "; ".join(f"{k}: {v:,}" for k, v in self.refused.items()
                                             if v))
        if len(self.pareto) > 1:
            lines.append("Pareto front (devices: step s): " + ", ".join(
                f"{d}: {t:.4g}" for d, t, _ in self.pareto))
        return "\n".join(lines)


def _evaluate(arch, cl, basis, registry, cand, devices, global_batch, seq_len, lora, qlora,
              fp8, reserve):
    """(refusal masks in REASONS order, step results of the valid rows, valid index)."""
    tp, pp, vpp, cp, ep, mb = (cand[k] for k in ("tp", "pp", "vpp", "cp", "ep", "mb"))
    n = np.full(tp.shape, devices)
    model = tp * pp * cp
    dp = np.where(n % model == 0, n // np.maximum(model, 1), 1)
    bad = [
        (arch.heads % tp != 0) | ((arch.kv_heads % tp != 0) & (tp % arch.kv_heads != 0)),
        (arch.layers % (pp * vpp) != 0) | ((vpp > 1) & (pp == 1)),
        n % model != 0,
        ((arch.experts % ep != 0) if arch.experts else (ep > 1)) | (dp % ep != 0),
        global_batch % (mb * dp) != 0,
        (vpp > 1) & ((global_batch // np.maximum(mb * dp, 1)) % pp != 0),
        (cp > 1) & (seq_len % (2 * cp) != 0),
    ]
    refused = np.zeros(tp.shape, dtype=bool)
    first = []
    for mask in bad:
        first.append(mask & ~refused)
        refused |= mask
    ok = np.flatnonzero(~refused)
    c, _ = costing(cl, basis, registry)
    r = training_step(arch, c, tp=tp[ok], pp=pp[ok], vpp=vpp[ok], dp=dp[ok], cp=cp[ok],
                      ep=ep[ok], mb=mb[ok], gb=global_batch, seq=seq_len,
                      recompute=cand["recompute"][ok], zero=cand["zero"][ok], lora=lora,
                      qlora=qlora, fp8=fp8, reserve=reserve)
    return first, r, ok, dp


def search_count(item) -> dict:
    """Search one device count (a picklable work item, so any ``concurrent.futures``
    executor runs it: threads, a process pool, ``dask.distributed``'s ``get_executor()``):
    refused counts per reason, the evaluated and fitting counts and the ``top`` fastest
    fitting layouts as plain rows, reduced in the worker."""
    from ..sweep.distribute import local_registry

    (workload, cluster, n, basis, fixed, global_batch, seq_len, rank, qlora, fp8, reserve,
     top, settings) = item
    registry = resolve_registry(local_registry(settings))
    cl = training_cluster(cluster, registry, n)
    arch = arch_of(workload, registry)
    cln = with_devices(cl, n)
    cand = candidates(arch, n, cln.scale_up.size, fixed or {})
    first, r, ok, dp = _evaluate(arch, cln, basis, registry, cand, n, global_batch, seq_len,
                                 rank, qlora, fp8, reserve)
    refused = {reason: int(mask.sum()) for reason, mask in zip(REASONS, first, strict=False)}
    fit = r["memory"] <= _capacity(registry, cl)
    refused[REASONS[-1]] = int((~fit).sum())
    idx = ok[fit]
    steps = np.asarray(r["step"])[fit]
    mem = np.asarray(r["memory"])[fit]
    # fastest first; among equal step times (to 0.1 %) the one needing less memory
    order = np.lexsort((mem, np.round(steps / steps.min(), 3))) if steps.size else []
    rows = []
    for j in order[: max(top, 1)]:
        i = idx[j]
        rows.append((float(steps[j]), n, {
            "tp": int(cand["tp"][i]), "pp": int(cand["pp"][i]),
            "vpp": int(cand["vpp"][i]), "dp": int(dp[i]), "cp": int(cand["cp"][i]),
            "ep": int(cand["ep"][i]), "micro_batch": int(cand["mb"][i]),
            "recompute": _recompute_name(int(cand["recompute"][i])),
            "zero": int(cand["zero"][i])}))
    return {"devices": n, "evaluated": int(cand["tp"].size), "refused": refused,
            "fitting": int(fit.sum()), "rows": rows}


def search_layouts(workload, cluster, *, devices=None, global_batch: int, seq_len: int,
                   precision: str = "bf16", basis: str = "auto", lora=None, qlora=None,
                   top: int = 10, fixed: dict | None = None, device_counts=None,
                   reserve: float = DEFAULT_RESERVE, executor=None, registry=None):
    """Rank every valid layout of ``workload`` on ``cluster`` for one global batch of
    ``seq_len`` tokens per sample. ``devices`` (default: the cluster's) is the largest
    count; the Pareto front also tries every halving down to one node (or ``device_counts``).
    ``executor``: any ``concurrent.futures.Executor``, one work item per device count
    (:func:`search_count`), as ``roofkit.sweep`` takes them: threads share this process's
    registry; process pools and Dask need ``registry`` as ``roofkit.sweep.RegistrySettings``
    (or the default catalogue). ``basis="auto"`` (the default): calibrated where the
    cluster's device has a calibration, else datasheet."""
    from ..circuit.roofline import resolve_basis
    from ..sweep.distribute import local_registry, portable_registry, shares_memory

    given = registry
    registry = resolve_registry(local_registry(given))
    if global_batch is None:
        raise SpecError("the layout search needs --global-batch")
    cl = training_cluster(cluster, registry, devices)
    basis = resolve_basis(basis, cl.device, registry)
    arch = arch_of(workload, registry)
    devices = devices or cl.devices
    if device_counts is None:
        device_counts, d = [], devices
        while d >= min(cl.devices_per_node, devices) and d >= 1:
            device_counts.append(d)
            if d % 2:
                break
            d //= 2
    rank = int(lora or qlora or 0)
    fp8 = precision == "fp8"
    if executor is None or shares_memory(executor):
        settings, ref_w, ref_c = registry, workload, cl
    else:  # workers build their own registry; names and specs travel, a Registry does not
        settings = portable_registry(given)
        ref_w = workload if isinstance(workload, str) else registry.workload(workload)
        ref_c = cl
    items = [(ref_w, ref_c, int(n), basis, dict(fixed or {}), global_batch, seq_len, rank,
              bool(qlora), fp8, reserve, int(top), settings) for n in device_counts]
    if executor is None:
        results = [search_count(i) for i in items]
    else:
        results = list(executor.map(search_count, items))
    refused = dict.fromkeys(REASONS, 0)
    rows = []  # (step, devices, layout dict)
    evaluated = fits_total = 0
    for res in results:
        evaluated += res["evaluated"]
        fits_total += res["fitting"]
        for reason, count in res["refused"].items():
            refused[reason] += count
        rows += [(t, n, dict(lo)) for t, n, lo in res["rows"]]
    fastest = min((x[0] for x in rows), default=1.0)
    rows.sort(key=lambda x: round(x[0] / fastest, 3))  # stable: memory order within a tie
    at_max = [x for x in rows if x[1] == devices][:top]
    best = tuple(train(workload, cl, devices=n, global_batch=global_batch, seq_len=seq_len,
                       precision=precision, basis=basis, lora=lora, qlora=qlora,
                       reserve=reserve, registry=registry, **lo) for _, n, lo in at_max)
    pareto, best_t = [], float("inf")
    for n in sorted(device_counts):
        mine = [x for x in rows if x[1] == n]
        if mine and mine[0][0] < best_t:
            best_t = mine[0][0]
            pareto.append((n, mine[0][0], mine[0][2]))
    return SearchResult(best=best, pareto=tuple(pareto), refused=refused,
                        evaluated=evaluated, fitting=fits_total, workload=arch.name,
                        cluster=cl.name)


def _capacity(registry, cl) -> float:
    return registry.device(cl.device).memory.capacity


def _recompute_name(code: int) -> str:
    return next(k for k, v in RECOMPUTE.items() if v == code)


__all__ = ["REASONS", "SearchResult", "candidates", "search_count", "search_layouts"]
