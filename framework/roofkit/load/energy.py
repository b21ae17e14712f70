"""Energy of a simulated run: the per-op model (:mod:`roofkit.energy`) over the engine steps.

Per step ``i`` of a trace (one replica, ``tp`` devices; every figure is one device's):

    E_i = min(P_static * t_i + dyn(rows_i, seqs_i, context_i), TDP * t_i)
    dyn  = sum_nodes(e_flop[slot] * flops + e_byte * bytes + e_link * link_bytes)

``t_i`` is the step's time (device and host: the clocks stay up between steps), ``rows_i``
its token rows, ``seqs_i`` its sequences at the mean context the KV it holds gives
(``kv / (kv_token * seqs)``). The time the replica has no step to run (waiting for
arrivals) is charged at ``P_idle``. A prompt chunk's attention is charged as one decode row
per sequence (its GEMM rows are charged in full). A device without per-op constants takes
the Engine reference's ``TDP * (0.3 * t + 0.7 * F / peak)`` per step and its idle floor
``0.3 * TDP``. ``E = sum_traces tp * (sum_i E_i + P_idle * idle)``.
"""

from __future__ import annotations

import numpy as np

from .. import energy as _energy
from ..engine.calibration import ENERGY_DYNAMIC_FRACTION, ENERGY_IDLE_FRACTION

__all__ = ["StepEnergy", "run_energy"]


class StepEnergy:
    """Dynamic joules (and FLOP-seconds at peak) of engine steps on one device, tabulated
    by the same plan runs as :class:`~roofkit.load.steps.StepCosts`."""

    def __init__(self, costs, device, table=None, rows=None, seqs=None):
        self.c = _energy.constants(device.name, table)
        self.tdp = float(device.power.tdp or 0.0)
        peaks = device.compute
        dplan = costs.decode_plan
        from .steps import CONTEXT_ROLES

        kinds = dplan.model.kinds
        ctx_nodes = {id(p) for p in dplan.nodes
                     if kinds[p.node.op.lower()].role in CONTEXT_ROLES}
        # the token-row counts to tabulate (default all up to the table's most)
        self.rows = np.unique(np.asarray(rows, dtype=int)) if rows is not None else \
            np.arange(0, int(costs.max_rows) + 1)
        r = np.maximum(self.rows.astype(float), 1.0)
        rows_e = np.zeros_like(r)
        rows_f = np.zeros_like(r)
        for o in dplan.run(r, 1.0, r):
            e, f = self._node(o, peaks)
            if id(o[0]) not in ctx_nodes:
                rows_e = rows_e + e
                rows_f = rows_f + f
        rows_e[self.rows == 0] = 0.0
        rows_f[self.rows == 0] = 0.0
        self.rows_e, self.rows_f = rows_e, rows_f
        # the decode sequence counts to tabulate (default all up to the table's most)
        self.seqs = np.unique(np.asarray(seqs, dtype=int)) if seqs is not None else \
            np.arange(0, int(costs.max_seqs) + 1)
        ctx = np.asarray(costs.ctx_grid, dtype=float)
        s1 = np.maximum(self.seqs.astype(float), 1.0)[:, None]
        att_e = np.zeros((len(self.seqs), len(ctx)))
        att_f = np.zeros_like(att_e)
        for o in dplan.run(s1 * costs.verify, ctx[None, :], s1):
            if id(o[0]) in ctx_nodes and o[0].node.section != "head":
                e, f = self._node(o, peaks)
                att_e = att_e + np.broadcast_to(e, att_e.shape)
                att_f = att_f + np.broadcast_to(f, att_f.shape)
        att_e[self.seqs == 0, :] = 0.0
        att_f[self.seqs == 0, :] = 0.0
        self.ctx = ctx
        self.att_e, self.att_f = att_e, att_f

    def _node(self, o, peaks):
        p, flops, terms, link = o[0], o[1], o[2], o[7]
        peak = float(peaks.get(p.slot, 0.0))
        nbytes = sum(terms)
        f = flops / peak if peak > 0.0 else 0.0 * flops
        if self.c is None:
            return 0.0 * flops, f
        return (self.c.e_flop(self.tdp, peak, p.slot) * flops + self.c.e_byte * nbytes
                + self.c.e_link * link), f

    def _attention(self, tab, seqs, context):
        j = np.clip(np.searchsorted(self.ctx, context, side="right") - 1, 0, len(self.ctx) - 2)
        x0, x1 = self.ctx[j], self.ctx[j + 1]
        fr = np.clip((context - x0) / (x1 - x0), 0.0, 1.0)
        s = np.clip(np.searchsorted(self.seqs, seqs), 0, len(self.seqs) - 1)
        return tab[s, j] + (tab[s, j + 1] - tab[s, j]) * fr

    def dynamic(self, rows, seqs, context):
        """Per-op joules of each step beyond static power (``e_flop F + e_byte B + e_link
        L``); None where the device has no per-op constants."""
        if self.c is None:
            return None
        rows = np.asarray(rows, dtype=int)
        k = np.clip(np.searchsorted(self.rows, rows), 0, len(self.rows) - 1)
        dec = np.minimum(np.asarray(seqs, dtype=int), rows)
        return self.rows_e[k] + self._attention(self.att_e, dec, context)

    def steps(self, time, rows, seqs, context):
        """Joules of each step (arrays over the steps), per-op model or the TDP model."""
        t = np.asarray(time, dtype=float)
        if self.c is None:
            rows = np.asarray(rows, dtype=int)
            k = np.clip(np.searchsorted(self.rows, rows), 0, len(self.rows) - 1)
            dec = np.minimum(np.asarray(seqs, dtype=int), rows)
            f = self.rows_f[k] + self._attention(self.att_f, dec, context)
            return self.tdp * (ENERGY_IDLE_FRACTION * t
                               + ENERGY_DYNAMIC_FRACTION * np.minimum(f, t))
        e = self.c.p_busy * t + self.dynamic(rows, seqs, context)
        return np.minimum(e, self.tdp * t) if self.tdp > 0.0 else e

    def idle_power(self) -> float:
        return ENERGY_IDLE_FRACTION * self.tdp if self.c is None else self.c.p_idle


def run_energy(pools, duration: float, device, table=None) -> float:
    """Joules of all devices over a run: ``pools`` of (replica, traces, devices per trace)."""
    total = 0.0
    for rep, traces, tp in pools:
        if not traces:
            continue
        se = StepEnergy(rep.costs, device, table,
                        rows=np.concatenate([np.asarray(tr.step_tokens, dtype=int)
                                             for tr in traces]),
                        seqs=np.concatenate([np.minimum(tr.step_seqs, tr.step_tokens)
                                             for tr in traces]))
        kv_token = float(rep.cfg.kv_token)
        for tr in traces:
            seqs = np.asarray(tr.step_seqs, dtype=float)
            ctx = np.where((seqs > 0) & (kv_token > 0.0),
                           np.asarray(tr.step_kv, dtype=float)
                           / np.maximum(seqs * kv_token, 1e-30), 1.0)
            e = float(np.sum(se.steps(tr.step_time, tr.step_tokens, tr.step_seqs,
                                      np.maximum(ctx, 1.0))))
            idle = max(duration - float(np.sum(tr.step_time)), 0.0)
            total += tp * (e + se.idle_power() * idle)
    return total
