"""Step costs of an engine step from the circuit's plans, tabulated once.

A step of continuous batching runs ``n`` decode rows (each sequence at its own context) and
prefill chunks (``T_i`` prompt tokens of a sequence whose first ``p_i`` tokens are cached).
Its device time is composed from the circuit's own node costs (no second cost model):

    device = rows(N) + head(H) + attn_decode(n, c_mean) + sum_i attn_prefill(T_i, p_i + T_i // 2)

with ``N = n + sum_i T_i`` the step's token rows; a decode step replayed from a CUDA graph
adds ``K * a`` (``graph_step``: the plan's ``K`` kernels, each costing the device the
startup ``a`` of the calibration's ``launch.graph_node`` beyond its traffic). ``rows`` is
every node of the embed and main sections whose work depends on the token rows only (GEMMs,
norms, activations, routers, experts, all-reduces) from the decode plan at rows = N;
``head`` the head section (final norm, LM head) at one row per sequence that samples a
token; the attention and recurrent state nodes are the decode plan's at n rows and the mean
context (their FLOPs and KV bytes are linear in the context) and the prefill plan's at the
chunk's rows and its causal half context, as ``roofkit.prefill`` costs a prompt. A single
request therefore costs exactly what ``roofkit.serve`` charges at batch 1.

Each term is a table over whole rows (exact) or a grid of contexts (every token to 256,
then 3 % apart; linear interpolation between points), built with vectorized plan runs so
the simulator's loop is float arithmetic only.
"""

from __future__ import annotations

import bisect
import math

import numpy as np

from ..circuit import api as _circuit

#: op-kind roles whose cost depends on the context (the others depend on the rows only)
CONTEXT_ROLES = ("attention", "state")


def grid(top: int, dense: int = 256, ratio: float = 1.03) -> list[int]:
    """Whole numbers 0..dense, then about ``ratio`` apart up to at least ``top``."""
    out = list(range(0, dense + 1))
    x = float(dense)
    while out[-1] < top:
        x *= ratio
        out.append(max(out[-1] + 1, math.ceil(x)))
    return out


class Interp2:
    """Bilinear interpolation of a table over (whole rows, context grid)."""

    def __init__(self, rows: list[int], ctx: list[int], table: np.ndarray):
        self.rows = rows
        self.ctx = ctx
        self.t = table.tolist()
        self.rmax = rows[-1]
        self.cmax = ctx[-1]
        self.last = len(ctx) - 1
        # rows are whole numbers up to `dense`: a row index is its own count
        self.dense = max(i for i, r in enumerate(rows) if r == i)

    @staticmethod
    def _locate(axis, x):
        i = bisect.bisect_right(axis, x) - 1
        if i >= len(axis) - 1:
            i = len(axis) - 2
        if i < 0:
            i = 0
        x0, x1 = axis[i], axis[i + 1]
        return i, (x - x0) / (x1 - x0)

    def __call__(self, r: float, c: float) -> float:
        i, fr = self._locate(self.rows, r)
        j, fc = self._locate(self.ctx, c)
        t = self.t
        a = t[i][j] + (t[i][j + 1] - t[i][j]) * fc
        b = t[i + 1][j] + (t[i + 1][j + 1] - t[i + 1][j]) * fc
        return a + (b - a) * fr


def startup(graph_step: float, overlap: bool) -> tuple[float, float]:
    """The kernels' device startup a step pays, ``(replayed from a graph, eager)``: a graph
    replay pays ``graph_step`` (``K * a``); an eager step pays it only when the host overlaps
    the device, since a serial host's launches, charged one by one, already cover it."""
    return graph_step, (graph_step if overlap else 0.0)


class StepCosts:
    """The device time of engine steps for one (workload, device, layout, formats, basis).

    ``max_rows``: the most token rows of a step; ``max_seqs``: the most sequences;
    ``max_context``: the longest context. ``verify`` rows per decode sequence (1; k + 1 when
    a speculative step verifies k drafted tokens).
    """

    def __init__(self, workload, device, *, tp=1, precision=None, kv_cache_dtype="bf16",
                 basis="calibrated", registry=None, max_rows=8192, max_seqs=256,
                 max_context=8192, verify=1, formats=None, ep=1, a2a=None, engine=None):
        kw = {"precision": precision, "kv_cache_dtype": kv_cache_dtype, "basis": basis,
              "tp": tp, "registry": registry}
        if formats:
            kw["formats"] = formats
        if engine:  # the engine's kernel profiles cost the nodes they cover
            kw["engine"] = engine
        self.kw = kw
        dplan = _circuit.plan(workload, device, "decode", **kw)
        pplan = _circuit.plan(workload, device, "prefill", **kw)
        self.decode_plan, self.prefill_plan = dplan, pplan
        model = dplan.model
        kinds = model.kinds

        def is_ctx(p):
            return kinds[p.node.op.lower()].role in CONTEXT_ROLES

        self.kernels = sum(p.count for p in dplan.nodes)
        # (seconds, seconds per byte) of one all-to-all of the ep ranks (:mod:`.fabric`)
        self.a2a = a2a or (0.0, 0.0)
        self.verify = int(verify)
        r = np.arange(0, max(int(max_rows), int(max_seqs) * self.verify) + 1, dtype=float)
        r[0] = 1.0
        out = dplan.run(r, 1.0, r)
        rows_t = np.zeros_like(r)
        head_t = np.zeros_like(r)
        for o in out:
            p = o[0]
            if p.node.section == "head":
                head_t = head_t + o[3]
            elif not is_ctx(p) and not (ep > 1 and p.node.role == "experts"):
                rows_t = rows_t + o[3]
        if ep > 1:
            rows_t = rows_t + self._experts(dplan, r, ep, model)
        rows_t[0] = head_t[0] = 0.0
        self.rows_t = np.broadcast_to(rows_t, r.shape).tolist()
        self.head_t = np.broadcast_to(head_t, r.shape).tolist()

        # decode attention and state: n sequences of `verify` rows each at context c
        seqs = grid(int(max_seqs), dense=min(256, int(max_seqs)))
        ctx = grid(int(max_context) + 1)
        s = np.asarray(seqs, dtype=float)[:, None]
        c = np.asarray(ctx, dtype=float)[None, :]
        s1 = np.maximum(s, 1.0)
        out = dplan.run(s1 * self.verify, c, s1)
        t = np.zeros((len(seqs), len(ctx)))
        for o in out:
            if is_ctx(o[0]) and o[0].node.section != "head":
                t = t + np.broadcast_to(o[3], t.shape)
        t[0, :] = 0.0
        self.attn_decode = Interp2(seqs, ctx, t)

        # prefill attention and state: a chunk of T rows at context p + T // 2
        toks = grid(int(max_rows))
        tt = np.asarray(toks, dtype=float)[:, None]
        t1 = np.maximum(tt, 1.0)
        out = pplan.run(t1, np.maximum(c, 1.0), 1.0)
        t = np.zeros((len(toks), len(ctx)))
        for o in out:
            if is_ctx(o[0]):
                t = t + np.broadcast_to(o[3], t.shape)
        t[0, :] = 0.0
        self.attn_prefill = Interp2(toks, ctx, t)
        # decode-only steps, the common case: rows and head at n (padded) sequences, and the
        # attention row of n sequences over the context grid
        nv = [x * self.verify for x in range((len(self.rows_t) - 1) // self.verify + 1)]
        self.decode_fixed = [self.rows_t[x] + self.head_t[x] for x in nv]
        self.ctx_grid = ctx
        self.max_rows = len(self.rows_t) - 1
        self.max_seqs = seqs[-1]
        self.max_context = ctx[-1]
        self.hop_fixed = 0.0  # pipeline parallelism: (stages - 1) activation sends a step
        self.hop_per_row = 0.0
        self.roofline = dplan.roofline
        # a decode step replayed from a CUDA graph: each kernel's start, ramp and drain on
        # the device (the host launches none of them), kernels * graph_node seconds
        self.graph_step = self.kernels * dplan.roofline.graph_node
        self.notes = tuple(dict.fromkeys((*dplan.notes, *pplan.notes)))
        self.basis = pplan.basis
        self.cost_model = dplan.cost_model.name

    def device_time(self, n_decode: int, mean_context: float, chunks=(), samples=None,
                    pad_to: int | None = None) -> float:
        """Seconds of one step: ``n_decode`` rows at ``mean_context`` and ``chunks`` of
        (tokens, cached tokens before them); ``samples`` sequences read logits (default
        ``n_decode`` plus the chunks that finish a prompt: pass it). ``pad_to``: the CUDA
        graph size the decode rows run padded to."""
        rows = n_decode * self.verify
        t = 0.0
        for tokens, done in chunks:
            rows += tokens
            t += self.attn_prefill(tokens, max(done + tokens // 2, 1))
        h = n_decode * self.verify if samples is None else samples
        if pad_to is not None and pad_to > n_decode:
            rows += (pad_to - n_decode) * self.verify
            h += (pad_to - n_decode) * self.verify
        if rows > self.max_rows:
            raise ValueError(f"step of {rows} rows beyond the table's {self.max_rows}")
        t += self.rows_t[rows] + self.head_t[h] + self.hop_fixed + self.hop_per_row * rows
        if n_decode:
            t += self.attn_decode(n_decode, mean_context)
        return t

    def with_pipeline(self, hidden: float, act_bytes: float, fixed: float,
                      per_byte: float) -> StepCosts:
        """A copy whose steps also send the activations between pipeline stages:
        ``fixed + rows * hidden * act_bytes * per_byte`` (the fabric's sums over the stage
        boundaries, :meth:`roofkit.load.fabric.Fabric.pipeline`)."""
        import copy

        out = copy.copy(self)
        out.hop_fixed = fixed
        out.hop_per_row = hidden * act_bytes * per_byte
        out.decode_fixed = [x + out.hop_fixed + out.hop_per_row * n * self.verify
                            for n, x in enumerate(self.decode_fixed)]
        return out

    def _experts(self, dplan, r, ep, model):
        """Expert parallelism with attention data parallelism over ``ep`` ranks, each with
        ``r`` token rows: a rank runs 1/ep of the routed experts for the tokens of every
        rank, ``t_experts(ep * r) / ep`` (FLOPs and touched-expert bytes both split), and
        each MoE layer dispatches and combines its tokens with two all-to-alls of
        ``r * top_k * hidden * 2 B * (ep - 1) / ep`` bytes a rank, timed by the fabric
        (one node: ``latency + bytes / bandwidth``)."""
        t = np.zeros_like(r)
        for o in dplan.run(r * ep, 1.0, r * ep):
            if o[0].node.role == "experts" and o[0].node.section != "head":
                t = t + o[3] / ep
        dims = model.workload.dims
        fixed, per_byte = self.a2a
        layers = sum(p.count for p in dplan.nodes if p.node.op == "expert_gate_up")
        per_row = dims.get("top_k", 1) * dims["hidden"] * 2.0 * (ep - 1) / ep * per_byte
        return t + layers * 2 * (fixed + r * per_row)

    def decode_time(self, n: int, c: float, pad: int) -> float:
        """Seconds of a decode-only step of ``n`` sequences at mean context ``c``, run padded
        to ``pad`` sequences (``n`` without a CUDA graph)."""
        a = self.attn_decode
        if n <= a.dense:
            row = a.t[n]
            ctx = self.ctx_grid
            j = bisect.bisect_right(ctx, c) - 1
            if j >= a.last:
                j = a.last - 1
            x0 = ctx[j]
            att = row[j] + (row[j + 1] - row[j]) * (c - x0) / (ctx[j + 1] - x0)
        else:
            att = a(n, c)
        return self.decode_fixed[pad] + att


class SectionCosts:
    """The device time of one pass through a circuit section (the MTP ``draft`` modules) for
    ``n`` sequences at context ``c``: every node of the section at rows = seqs = n, from
    the decode plan of that section alone, tabulated like the decode attention."""

    def __init__(self, workload, device, section, *, tp=1, precision=None,
                 kv_cache_dtype="bf16", basis="calibrated", registry=None, max_seqs=256,
                 max_context=8192):
        from ..registry import resolve

        reg = resolve(registry)
        settings = {"basis": basis}
        plan = _circuit._plan(reg, workload, device, "decode", precision, kv_cache_dtype,
                              None, settings, tp, sections=(section,))[0]
        if not plan.nodes:
            raise ValueError(f"{reg.workload(workload).name} has no {section!r} section")
        self.plan = plan
        seqs = grid(int(max_seqs), dense=min(256, int(max_seqs)))
        ctx = grid(int(max_context) + 1)
        sv = np.maximum(np.asarray(seqs, dtype=float)[:, None], 1.0)
        cv = np.asarray(ctx, dtype=float)[None, :]
        t = np.zeros((len(seqs), len(ctx)))
        for o in plan.run(sv, cv, sv):
            t = t + np.broadcast_to(o[3], t.shape)
        t[0, :] = 0.0
        self.table = Interp2(seqs, ctx, t)

    def __call__(self, n: int, c: float) -> float:
        return self.table(n, c)
