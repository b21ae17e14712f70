"""``roofkit.plan``: the serving configurations that meet an SLO, best first.

The search crosses devices or clusters x precisions x tensor parallelism (within the
scale-up domain) x pipeline parallelism (``pp`` stages run as ``pp`` virtual engines, as
``simulate --pp`` does; stage boundaries that leave a domain cross the scale-out network)
(or, for a MoE, expert parallelism with attention data parallelism over 2, 4, 8... ranks,
across nodes on a cluster) x concurrency (the batch cap of one engine, virtual engine or
rank) x aggregated or disaggregated serving (prefill TP, decode TP and P:D worker counts
within ``min(max_devices, the cluster's devices)``, the KV moving over the link the pools
share). A device alone is one node, or the ad hoc cluster ``NxDEVICE`` when
``max_devices`` exceeds its node. Every configuration is screened with the
steady state of continuous batching on the circuit's step costs, as numpy arrays over the
concurrencies of a layout. With ``C`` sequences decoding at the mean context ``I + O/2``:

    t_dec(C)   = rows(C) + head(C) + attn(C, I + O/2) + K a + host(C)   a decode step
    x(C)       = rows(C + I) - rows(C) + attn_prefill(I, I/2) + head(C + 1) - head(C)
                 (+ the eager launches a mixed step pays over a graph replay, - K a)

(``K a``: the device startup of the step's ``K`` kernels, the calibration's
``launch.graph_node`` each, paid by a decode step replayed from a CUDA graph and by every
step of an overlapped host; a serial host's eager launches, charged one by one, cover it)
    pp stages:  rows(n) += hop_fixed + n * hidden * 2 B * hop_per_byte  (the fabric's sums
                over the stage boundaries), a device holds weights / pp
    aggregated: every O steps C prompts join, so TPOT = t_dec + C x / O,
                TTFT = t_dec + x, output tokens/s = C / TPOT
    disaggregated: TPOT = t_dec(C) on the decode pool, TTFT = t_pre(I) + t_kv(I) + t_dec(C)
                (the decode worker streams the first token at its next step boundary),
                request rate = min(P r_pre, D C / (O t_dec)), tokens/s = rate * O,
                r_pre = k / t_step(k prompts), k = max(1, token budget // I)

(``prefill-first`` engines without mixed steps pay a whole prefill step ``t_pre`` in place
of ``x``). An engine with an API server (``[frontend]``: ``a`` a request, ``b`` a prompt
token, ``c`` a streamed token; one serial process per engine, as the simulator has it, not
with pp) streams a step's ``C`` tokens in ``C c`` beside the engine, so aggregated
TPOT = max(TPOT, C c) and TTFT += a + I b + C c.

A configuration is refused, with its reason counted, when the weights or the KV of ``C``
sequences do not fit (``C (I + O/2)`` tokens held as the cache grows, ``C (I + O)`` when the
engine reserves or admits at the peak; the cache is the engine's memory share less the
weights, and less its profiling pass's peak where it sizes the cache after one, as the
simulator has it), when it needs more devices than allowed, or when
it misses the SLO. The survivors are ranked by output tokens/s per device, their Pareto
front of tokens/s per device against tokens/s per user is marked, and the best few are
re-run through the step simulator (``roofkit.simulate``) in their steady state (arrivals
evenly spaced at the screened request rate, percentiles without the warm-up and the drain,
one request lifetime each), so the table shows simulated percentiles beside the screening
estimate and a configuration the simulation says misses the SLO is ranked after the others.
"""

from __future__ import annotations

import math

import attrs
import numpy as np

from ..circuit import api as _circuit
from ..errors import OOMError, RoofkitError, SpecError
from .fabric import fabric_of
from .host import host_table
from .simulate import layout_problems, profile_peak
from .steps import CONTEXT_ROLES, startup

CONCURRENCIES = (1, 2, 4, 8, 16, 32, 48, 64, 96, 128, 192, 256, 384, 512)
TPS = (1, 2, 4, 8)


@attrs.frozen(eq=False)
class PlanResult:
    """Ranked configurations meeting the SLO, the Pareto front, and the refusals."""

    workload: str
    slo: dict
    input_len: int
    output_len: int
    rows: list  # one dict per configuration that meets the SLO, best first
    refused: dict  # reason -> count
    evaluated: int
    verified: list  # the best configurations re-run through the simulator
    notes: tuple

    @property
    def best(self) -> dict | None:
        return self.rows[0] if self.rows else None

    @property
    def pareto(self) -> list:
        return [r for r in self.rows if r["pareto"]]

    def to_dict(self) -> dict:
        return {"workload": self.workload, "slo_ms": {k: v * 1e3 for k, v in self.slo.items()},
                "input_len": self.input_len, "output_len": self.output_len,
                "evaluated": self.evaluated, "meeting_slo": len(self.rows),
                "refused": dict(self.refused), "configurations": self.rows[:50],
                "pareto": self.pareto, "verified": self.verified, "notes": list(self.notes)}

    def plot(self, kind: str | None = None, **kwargs):
        """A matplotlib Figure: tokens/s per device against tokens/s per user with the
        Pareto front marked (:func:`roofkit.plot.charts.plan`; the ``plot`` extra)."""
        from .. import plot

        return plot.plot_result(self, kind or "plan", **kwargs)

    def to_pandas(self):
        import pandas as pd

        return pd.DataFrame(self.rows)

    def _repr_html_(self) -> str:
        cols = ("device", "precision", "layout", "concurrency", "ttft_ms", "tpot_ms",
                "output_tokens_per_s_per_device", "output_tokens_per_s_per_user", "pareto")
        body = "".join("<tr>" + "".join(
            f"<td>{r[c]:.1f}</td>" if isinstance(r[c], float) else f"<td>{r[c]}</td>"
            for c in cols) + "</tr>" for r in self.rows[:10])
        return (f"<p><b>{self.workload}</b>: {self.evaluated} evaluated, {len(self.rows)} meet "
                f"the SLO</p><table><tr>" + "".join(f"<th>{c}</th>" for c in cols)
                + f"</tr>{body}</table>")

    def __repr__(self) -> str:
        b = self.best
        head = "none meets the SLO" if b is None else (
            f"best {b['device']} {b['precision']} {b['layout']} C={b['concurrency']}: "
            f"{b['output_tokens_per_s_per_device']:.0f} tok/s/device")
        return f"PlanResult({self.workload}: {self.evaluated} evaluated, {head})"


def _split(plan):
    kinds = plan.model.kinds
    return [kinds[p.node.op.lower()].role in CONTEXT_ROLES for p in plan.nodes]


def _parts(out, ctx_mask):
    """(row part, head part, context part) of a plan run's node times."""
    rows = head = ctx = 0.0
    for o, is_ctx in zip(out, ctx_mask, strict=True):
        if o[0].node.section == "head":
            head = head + o[3]
        elif is_ctx:
            ctx = ctx + o[3]
        else:
            rows = rows + o[3]
    return rows, head, ctx


@attrs.frozen
class Layout:
    """The step costs of one (device, precision, tp) as arrays over the concurrencies."""

    t_dec: np.ndarray
    x: np.ndarray
    t_pre: float
    pre_rate: float  # prompts per second of one prefill worker, batched to its token budget
    kv_ok: np.ndarray
    weights_fit: bool
    kv_token: float
    state: float


def _row_part(dplan, dmask, n, seqs, ep, a2a, dims):
    """The row-dependent node times at ``n`` token rows; with ``ep`` ranks the routed experts
    run for the tokens of every rank split over the ranks, plus two all-to-alls a MoE layer
    (as :meth:`roofkit.load.steps.StepCosts._experts`, ``a2a`` the fabric's (seconds,
    seconds per byte))."""
    rows = 0.0
    for o, is_ctx in zip(dplan.run(n, 1.0, seqs), dmask, strict=True):
        node = o[0].node
        if node.section != "head" and not is_ctx and not (ep > 1 and node.role == "experts"):
            rows = rows + o[3]
    if ep > 1:
        for o in dplan.run(n * ep, 1.0, seqs * ep):
            if o[0].node.role == "experts" and o[0].node.section != "head":
                rows = rows + o[3] / ep
        layers = sum(p.count for p in dplan.nodes if p.node.op == "expert_gate_up")
        fixed, per_byte = a2a
        per_row = dims.get("top_k", 1) * dims["hidden"] * 2.0 * (ep - 1) / ep * per_byte
        rows = rows + layers * 2 * (fixed + n * per_row)
    return rows


def step_parts(reg, w, d, precision, tp, n_in, n_out, C, engine, kv_cache_dtype, basis,
               ep=1, fab=None) -> dict:
    """The plan runs one (device, precision, tp, ep) needs over concurrencies ``C``, before
    any pipeline split (which only adds a linear term in the rows and moves the weights):
    row parts ``r_*``, head parts ``h_*``, attention parts ``a_*``, the host times, the
    footprint. Built once and shared by every ``pp`` of that layout."""
    if fab is None:
        fab = fabric_of(reg, d.name)[1]
    kw = dict(precision=precision, kv_cache_dtype=kv_cache_dtype, basis=basis, tp=tp,
              registry=reg)
    fp = _circuit.footprint(w, d, precision=precision, kv_cache_dtype=kv_cache_dtype,
                            registry=reg, tp=tp, basis=basis)
    a2a = fab.all_to_all(ep)
    dplan = _circuit.plan(w, d, "decode", **kw)
    pplan = _circuit.plan(w, d, "prefill", **kw)
    dmask, pmask = _split(dplan), _split(pplan)
    Cf = np.asarray(C, dtype=float)
    dims = w.dims

    def rows(n, seqs):
        return _row_part(dplan, dmask, n, seqs, ep, a2a, dims)

    _, h_c, a_c = _parts(dplan.run(Cf, float(n_in + n_out // 2), Cf), dmask)
    spec_e = None if engine is None else reg.spec("engines", engine)
    kernels = sum(p.count for p in dplan.nodes)
    host = host_table(spec_e, dplan.roofline, reg, kernels, int(max(C)) + 1)
    sizes = () if spec_e is None else tuple(spec_e.cuda_graphs.batch_sizes)
    ci = np.asarray(C, dtype=int)
    eager = np.asarray(host.eager)[ci]
    # a prefill worker batches as many whole prompts as its token budget holds
    budget = 8192 if spec_e is None else spec_e.limits(d)[1]
    k = max(1, budget // n_in)
    start, start_eager = startup(kernels * dplan.roofline.graph_node, host.overlap)
    return {
        "Cf": Cf, "fp": fp, "host": host, "spec_e": spec_e, "k": k,
        "r_c": rows(Cf, Cf), "h_c": h_c, "a_c": a_c, "r_ci": rows(Cf + n_in, Cf + 1),
        "h_c1": _parts(dplan.run(Cf + 1, 1.0, Cf + 1), dmask)[1],
        "r_i": rows(float(n_in), 1.0), "h_1": _parts(dplan.run(1.0, 1.0, 1.0), dmask)[1],
        "a_p": _parts(pplan.run(float(n_in), float(max(n_in // 2, 1)), 1.0), pmask)[2],
        "r_k": rows(float(k * n_in), float(k)),
        "h_k": _parts(dplan.run(float(k), 1.0, float(k)), dmask)[1],
        "eager": eager,
        "graph": np.where(ci <= (sizes[-1] if sizes else 0), np.asarray(host.graph)[ci],
                          eager),
        # the device startup of a step's kernels (launch.graph_node each), as the simulator
        # charges it: every step of an overlapped host, and a decode step replayed from a graph
        "start_eager": start_eager,
        "start_dec": np.where(ci <= (sizes[-1] if sizes else 0), start, start_eager),
    }


def layout_costs(reg, w, d, precision, tp, n_in, n_out, C, engine, kv_cache_dtype, basis,
                 ep=1, pp=1, fab=None, parts=None):
    """Screening costs of one layout over concurrencies ``C`` (see the module docstring);
    ``ep`` ranks of expert parallelism with attention data parallelism (``C`` a rank);
    ``pp`` pipeline stages run as ``pp`` virtual engines (``C`` an engine), each step paying
    the activation sends across the stage boundaries, each device holding ``1 / pp`` of the
    weights; ``fab`` the links (:func:`roofkit.load.fabric.fabric_of`; default the device's
    own node); ``parts`` the layout's :func:`step_parts` when already built."""
    if fab is None:
        fab = fabric_of(reg, d.name)[1]
    if parts is None:
        parts = step_parts(reg, w, d, precision, tp, n_in, n_out, C, engine, kv_cache_dtype,
                           basis, ep=ep, fab=fab)
    fp, host, spec_e, k, Cf = (parts[x] for x in ("fp", "host", "spec_e", "k", "Cf"))
    frac = spec_e.memory.fraction(tp) if spec_e is not None else None
    usable = d.memory.capacity * (d.memory.usable_fraction if frac is None else frac)
    cap = usable - fp.weights / pp
    if spec_e is not None and spec_e.kv_sizing.profile_run:
        # vLLM V1 sizes its cache after a profiling pass: the simulator's lower bound of
        # its peak, at the engine's own limits on the device
        seqs, toks = spec_e.limits(d)
        cap -= profile_peak(w, toks, seqs, spec_e.kv_sizing.sampler_logit_bytes) or 0.0
    if ep > 1:
        cap += fp.weights_by_role.get("experts", 0.0) * (1 - 1 / ep)
    if cap <= 0:
        return None
    h0 = h1 = 0.0  # pipeline sends a step: h0 + rows * h1
    if pp > 1:
        fixed, per_byte = fab.pipeline(tp, pp)
        h0, h1 = fixed, float(w.dims["hidden"]) * 2.0 * per_byte
    r_c = parts["r_c"] + h0 + Cf * h1
    r_ci = parts["r_ci"] + h0 + (Cf + n_in) * h1
    r_i = parts["r_i"] + h0 + n_in * h1
    r_k = parts["r_k"] + h0 + k * n_in * h1
    h_c, a_c, h_c1, h_1, a_p, h_k = (parts[x] for x in ("h_c", "a_c", "h_c1", "h_1", "a_p",
                                                         "h_k"))
    eager, graph = parts["eager"], parts["graph"]
    start_dec, start_eager = parts["start_dec"], parts["start_eager"]
    dev_dec = r_c + h_c + a_c + start_dec
    t_dec = np.maximum(dev_dec, graph) if host.overlap else dev_dec + graph
    # a mixed step runs eagerly: its launches and startup in place of the decode step's
    x = (r_ci - r_c) + a_p + (h_c1 - h_c) + (eager - graph) + (start_eager - start_dec)
    pre_dev = float(r_i + h_1 + a_p) + start_eager
    t_pre = max(pre_dev, host.eager[1]) if host.overlap else pre_dev + host.eager[1]
    dev_k = float(r_k + h_k + k * a_p) + start_eager
    host_k = host.eager[min(k, len(host.eager) - 1)]
    pre_rate = k / (max(dev_k, host_k) if host.overlap else dev_k + host_k)
    # peak admission (SGLang) keeps every admitted request whole at the peak, as reserve does
    reserve = spec_e is not None and spec_e.scheduler.admission in ("reserve", "peak")
    held = n_in + (n_out if reserve else n_out / 2)
    kv_ok = Cf * (fp.kv_per_token * held + fp.state_per_seq) <= cap
    mixed = spec_e is None or spec_e.scheduler.mixed_batches
    if not mixed:
        x = np.full_like(Cf, t_pre)
    return Layout(t_dec=np.broadcast_to(t_dec, Cf.shape), x=np.broadcast_to(x, Cf.shape),
                  t_pre=t_pre, pre_rate=pre_rate, kv_ok=kv_ok, weights_fit=True,
                  kv_token=fp.kv_per_token,
                  state=fp.state_per_seq)


#: the most devices one plan spans, and the most configurations it re-simulates. Each
#: doubling of max_devices about quadruples the configurations screened (measured, Llama-3.1-8B
#: on h100, one core: 16 -> 10,836 in 3.6 s, 64 -> 193,088 in 7 s, 128 -> 788,704 in 41 s,
#: 256 -> 3,189,424 in 131 s); each verification is one load simulation (about a second).
#: These keep one plan call within minutes.
MAX_PLAN_DEVICES = 256
MAX_VERIFY = 100


def _pow2_upto(top: int) -> list[int]:
    out, v = [], 1
    while v <= top:
        out.append(v)
        v *= 2
    return out


def _target(reg, ref, max_devices: int) -> str:
    """What a ``devices`` entry is planned on: a cluster (key, alias, TOML or ``NxDEVICE``)
    as given; a device alone on one node, or, when ``max_devices`` exceeds the devices its
    interconnect joins, on the ad hoc cluster ``NxDEVICE`` of whole nodes
    (:func:`roofkit.fleet.cluster.ad_hoc`: its scale-up domain and the default network)."""
    if isinstance(ref, str) and ref in reg.devices:
        d = reg.device(ref)
    else:
        d, fab = fabric_of(reg, ref)
        if fab.out is not None:
            return fab.name
    ic = d.interconnect
    if ic is None or max_devices <= ic.max_devices:
        return d.name
    per = ic.max_devices
    return f"{-(-max_devices // per) * per}x{d.name}"


def plan_group(item) -> dict:
    """Screen every configuration of one (device or cluster, precision) (a picklable work
    item): tensor x pipeline parallelism (``pp`` virtual engines) within the scale-up
    domain and the cluster, expert parallelism with attention data parallelism, and
    disaggregated pools of the TP layouts, each within ``min(max_devices, the cluster's
    devices)``."""
    from ..registry import resolve
    from ..sweep.distribute import local_registry

    (workload, target, precision, n_in, n_out, slo, max_devices, engine, kv_dtype, basis, conc,
     disagg, settings) = item
    reg = resolve(local_registry(settings))
    w = reg.workload(workload)
    d, fab = fabric_of(reg, target)
    device = d.name
    cluster = fab.name if fab.out is not None else None
    budget = min(max_devices, fab.devices)
    C = np.asarray(conc, dtype=float)
    refused: dict[str, int] = {}
    rows = []
    evaluated = 0

    def refuse(why, n=1):
        refused[why] = refused.get(why, 0) + int(n)

    built = {}

    def costed(tp, ep=1, pp=1):
        try:
            if (tp, ep) not in built:
                built[tp, ep] = step_parts(reg, w, d, precision, tp, n_in, n_out, conc,
                                           engine, kv_dtype, basis, ep=ep, fab=fab)
            lay = layout_costs(reg, w, d, precision, tp, n_in, n_out, conc, engine, kv_dtype,
                               basis, ep=ep, pp=pp, fab=fab, parts=built[tp, ep])
        except (SpecError, OOMError, ValueError) as exc:
            refuse(f"not costed: {exc}".split("\n")[0][:120], len(C))
            return None
        if lay is None:
            refuse("weights do not fit", len(C))
        return lay

    spec_e = None if engine is None else reg.spec("engines", engine)
    fe = spec_e.frontend if spec_e is not None and spec_e.frontend.active else None

    def served(lay):
        """(TTFT, TPOT) of an aggregated engine of ``C`` sequences behind its API server."""
        tpot = lay.t_dec + C * lay.x / n_out
        ttft = lay.t_dec + lay.x
        if fe is None:
            return ttft, tpot
        stream = C * fe.per_token
        return (ttft + fe.per_request + n_in * fe.per_prompt_token + stream,
                np.maximum(tpot, stream))

    def add(mode, label, tp, c, ttft, tpot, tok_dev, devices, **extra):
        rows.append(_row(device, precision, mode, label, tp, int(c), ttft, tpot, tok_dev,
                         1.0 / tpot, devices, **extra))
        if cluster is not None:
            rows[-1]["cluster"] = cluster

    lays = {}
    tps = sorted(set(TPS) | {t for t in _pow2_upto(fab.size) if t > TPS[-1]})
    pps = [p for p in _pow2_upto(budget) if p > 1]
    for tp in tps:
        for pp in [1, *pps]:
            evaluated += len(C)
            if tp * pp > max_devices:
                refuse(f"tp x pp above max devices {max_devices}", len(C))
                continue
            if tp > fab.size:
                refuse(f"tp beyond the {fab.size}-device scale-up domain of {fab.name}",
                       len(C))
                continue
            if tp * pp > fab.devices:
                refuse(f"tp x pp beyond the {fab.devices} devices of {fab.name}", len(C))
                continue
            if layout_problems(w, pp=pp):
                refuse("pp does not divide the layers", len(C))
                continue
            lay = costed(tp, pp=pp)
            if lay is None:
                continue
            if pp == 1:
                lays[tp] = lay
            # aggregated: pp virtual engines of C sequences each on tp * pp devices (the
            # API server charged without pp, as the simulator does)
            if pp == 1:
                ttft, tpot = served(lay)
            else:
                tpot = lay.t_dec + C * lay.x / n_out
                ttft = lay.t_dec + lay.x
            tok = C / tpot
            label = f"TP{tp}" if pp == 1 else f"TP{tp} PP{pp}"
            for i, c in enumerate(conc):
                why = _miss(lay.kv_ok[i], ttft[i], tpot[i], slo)
                if why:
                    refuse(why)
                    continue
                add("aggregated", label, tp, c, ttft[i], tpot[i], tok[i] / tp, tp * pp)
                if pp > 1:
                    rows[-1]["pp"] = pp
    experts = w.template and _circuit.footprint(w, d, precision=precision, registry=reg,
                                                  basis=basis).weights_by_role.get("experts")
    for ep in [e for e in _pow2_upto(max(budget, max_devices)) if e > 1] if experts else ():
        evaluated += len(C)
        if ep > budget:
            refuse(f"ep beyond the {budget} devices of {fab.name} and max devices", len(C))
            continue
        if layout_problems(w, ep=ep):
            refuse("ep does not divide the experts", len(C))
            continue
        lay = costed(1, ep=ep)
        if lay is None:
            continue
        ttft, tpot = served(lay)  # each attention-DP rank behind its own API server
        for i, c in enumerate(conc):
            why = _miss(lay.kv_ok[i], ttft[i], tpot[i], slo)
            if why:
                refuse(why)
                continue
            add("aggregated", f"EP{ep} attention-DP{ep}", 1, c, ttft[i], tpot[i],
                c / tpot[i], ep)
            rows[-1]["ep"] = ep
    if disagg and lays:
        for ptp, pl in lays.items():
            for dtp, dl in lays.items():
                for p in range(1, budget // ptp + 1):
                    for q in range(1, (budget - p * ptp) // dtp + 1):
                        devices = p * ptp + q * dtp
                        link = fab.kv_link(devices)
                        t_kv = link.latency + (n_in * pl.kv_token + pl.state) / link.bandwidth
                        # the decode worker streams the first token at its next step
                        # boundary: one decode step at most, as t_dec in the aggregated TTFT
                        ttft = pl.t_pre + t_kv + dl.t_dec
                        tpot = dl.t_dec
                        rate = np.minimum(p * pl.pre_rate, q * C / (n_out * dl.t_dec))
                        tok_dev = rate * n_out / devices
                        evaluated += len(C)
                        for i, c in enumerate(conc):
                            why = _miss(dl.kv_ok[i], ttft[i], tpot[i], slo)
                            if why:
                                refuse(why)
                                continue
                            add("disaggregated",
                                f"{p}xTP{ptp} prefill : {q}xTP{dtp} decode", dtp, c, ttft[i],
                                tpot[i], tok_dev[i], devices, pd=(p, q, ptp, dtp),
                                ratio=c / (pl.pre_rate * n_out * dl.t_dec[i]))
    return {"rows": rows, "refused": refused, "evaluated": evaluated}


def _miss(kv_ok, ttft, tpot, slo) -> str:
    if not kv_ok:
        return "KV cache too small for the concurrency"
    for key, v in slo.items():
        metric = key.split("_")[0]
        got = {"ttft": ttft, "tpot": tpot, "itl": tpot, "e2e": None}.get(metric)
        if got is not None and got > v:
            return f"{metric} above the SLO"
    return ""


def _row(device, precision, mode, layout, tp, c, ttft, tpot, tok_dev, tok_user, devices,
         pd=None, ratio=None):
    r = {"device": device, "precision": precision, "mode": mode, "layout": layout, "tp": tp,
         "concurrency": c, "ttft_ms": float(ttft) * 1e3, "tpot_ms": float(tpot) * 1e3,
         "output_tokens_per_s_per_device": float(tok_dev),
         "output_tokens_per_s_per_user": float(tok_user), "devices": int(devices)}
    if pd is not None:
        r.update(prefill_workers=pd[0], decode_workers=pd[1], prefill_tp=pd[2],
                 decode_tp=pd[3], balanced_pd_ratio=float(ratio))
    return r


def _pareto(rows):
    """Mark the rows no other row beats on both tokens/s/device and tokens/s/user (among
    those the simulation did not find missing the SLO)."""
    kept = [i for i in range(len(rows)) if rows[i].get("verified") != "missed"]
    order = sorted(kept, key=lambda i: (-rows[i]["output_tokens_per_s_per_device"],
                                        -rows[i]["output_tokens_per_s_per_user"]))
    best_user = -math.inf
    for r in rows:
        r["pareto"] = False
    for i in order:
        u = rows[i]["output_tokens_per_s_per_user"]
        rows[i]["pareto"] = u > best_user
        if u > best_user:
            best_user = u


def plan(workload, devices, *, input_len: int | None = None, output_len: int | None = None,
         slo, max_devices: int = 8, precisions=None, concurrencies=CONCURRENCIES,
         engine: str | None = "vllm", disagg: bool = True, kv_cache_dtype: str = "bf16",
         basis: str = "auto", verify: int = 3, trace=None, executor=None,
         registry=None) -> PlanResult:
    """Search configurations for ``slo`` (``"ttft_p90=2s,tpot_p90=50ms"``); see the module
    docstring. ``devices``: device names (one node each, or the ad hoc cluster
    ``NxDEVICE`` of whole nodes when ``max_devices`` exceeds a node) or clusters
    (``specs/clusters``, ``NxDEVICE``), whose layouts may span nodes. ``precisions``
    defaults to the workload's format and fp8 where the device has an fp8 slot.
    ``trace``: a JSON-lines request trace (as ``simulate``) whose mean lengths are screened
    (``input_len``/``output_len`` default to them) and whose length pairs, in order, feed
    the verification. ``executor``: any ``concurrent.futures.Executor`` (one work item per
    device and precision; pass ``registry`` as ``roofkit.sweep.RegistrySettings`` for
    process pools). ``verify``: how many of the best to re-run through the simulator.
    ``basis="auto"`` (the default): each device on calibrated where it has a calibration,
    else datasheet."""
    from ..circuit.roofline import resolve_basis
    from ..registry import resolve
    from ..sweep.distribute import local_registry, portable_registry, shares_memory
    from .simulate import parse_slo

    slo = parse_slo(slo)
    if not slo:
        raise RoofkitError("plan needs an SLO, e.g. slo='ttft_p90=2s,tpot_p90=50ms'")
    lengths = None
    if trace is not None:
        from .requests import read_trace

        st = read_trace(trace)
        lengths = (st.input_len, st.output_len)
        input_len = round(float(np.mean(st.input_len))) if input_len is None else input_len
        output_len = round(float(np.mean(st.output_len))) if output_len is None else output_len
    elif input_len is None or output_len is None:
        raise RoofkitError("plan needs input_len and output_len (or a trace whose mean "
                           "lengths are planned for)")
    from .. import bounds

    for name, v, least in (("input_len", input_len, 1), ("output_len", output_len, 1),
                           ("max_devices", max_devices, 1), ("verify", verify, 0)):
        if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < least:
            raise RoofkitError(f"{name} must be a whole number >= {least}, got {v!r}")
    bounds.check_int("input_len", int(input_len))
    bounds.check_int("output_len", int(output_len))
    bounds.check_int("max_devices", int(max_devices), MAX_PLAN_DEVICES)
    bounds.check_int("verify", int(verify), MAX_VERIFY)
    reg = resolve(local_registry(registry))
    w = reg.workload(workload)
    refs = [devices] if isinstance(devices, str) else list(devices)
    targets = [_target(reg, x, int(max_devices)) for x in refs]
    items = []
    multi = []
    for target in targets:
        d, fab = fabric_of(reg, target)
        if fab.out is not None:
            multi.append(f"{target} ({fab.devices // fab.size} scale-up domains of "
                         f"{fab.size}, {fab.out.name})")
        precs = precisions or [w.formats.get("default", "bf16")] + (
            ["fp8"] if "fp8" in d.compute and w.formats.get("default", "bf16") != "fp8" else [])
        for p in precs:
            settings = registry if executor is None or shares_memory(executor) else \
                portable_registry(registry)
            items.append((w.name, target, p, int(input_len), int(output_len), slo,
                          int(max_devices), engine, kv_cache_dtype,
                          resolve_basis(basis, d, reg),
                          tuple(int(c) for c in concurrencies), bool(disagg),
                          settings if executor is not None else reg))
    results = list(executor.map(plan_group, items)) if executor is not None else \
        [plan_group(i) for i in items]
    rows, refused, evaluated = [], {}, 0
    for res in results:
        rows += res["rows"]
        evaluated += res["evaluated"]
        for k, v in res["refused"].items():
            refused[k] = refused.get(k, 0) + v
    rows.sort(key=lambda r: -r["output_tokens_per_s_per_device"])
    verified = []
    # walk the ranking until ``verify`` configurations pass the simulation (or twice as many
    # were tried): a configuration the simulation says misses the SLO is demoted
    for r in rows:
        passed = sum(v["simulated"]["slo_met"] for v in verified)
        if passed >= verify or len(verified) >= 2 * verify:
            break
        v = _verify(reg, w, r, input_len, output_len, slo, engine, kv_cache_dtype, basis,
                    lengths)
        verified.append(v)
        r["verified"] = "met" if v["simulated"]["slo_met"] else "missed"
    rows.sort(key=lambda r: (r.get("verified") == "missed",
                             -r["output_tokens_per_s_per_device"]))
    _pareto(rows)
    demoted = sum(r.get("verified") == "missed" for r in rows)
    notes = ("screening: steady-state continuous batching on the circuit's step costs "
             "(module roofkit.load.plan), arrivals spread evenly over a request's life",
             "verification: the step simulator fed arrivals evenly spaced at the screened "
             "request rate (an open loop in steady state), percentiles over the requests "
             "after a warm-up and before a drain of one request lifetime each (the first "
             "and last C requests); "
             f"{demoted} configuration(s) the simulation says miss the SLO ranked last",
             f"engine profile: {engine or 'none'}")
    if lengths is not None:
        notes += (f"trace {trace}: {len(lengths[0])} requests, screened at their mean "
                  f"lengths ({input_len} in, {output_len} out); verified with the trace's "
                  "length pairs in order, arriving evenly at the screened rate",)
    if multi:
        notes += ("across nodes on " + "; ".join(multi) + ": pipeline boundaries, expert "
                  "all-to-alls and KV transfers that leave a scale-up domain cross the "
                  "scale-out network (roofkit.load.fabric)",)
    return PlanResult(workload=w.name, slo=slo, input_len=int(input_len),
                      output_len=int(output_len), rows=rows, refused=refused,
                      evaluated=evaluated, verified=verified, notes=notes)


def _verify(reg, w, r, n_in, n_out, slo, engine, kv_dtype, basis, lengths=None) -> dict:
    """Simulate row ``r`` in its steady state: ``N = max(5 C, 64)`` requests arriving every
    ``1 / rate`` s, ``rate = tokens/s/device x devices / O`` (the screened request rate), and
    the percentiles of the requests but the first and the last ``C`` (one request lifetime
    ``C / rate`` = ``O x TPOT`` each: the warm-up of an empty engine, the drain after the last
    arrival); tokens/s over the span in which those finish,
    ``(n_kept - 1) O / (last finish - first finish)``. ``lengths``: (input, output) arrays
    of a trace, taken in order (cycled) in place of ``n_in`` and ``n_out`` (``O`` then
    their mean)."""
    import json
    import tempfile
    from pathlib import Path

    from .simulate import Disagg, _stats, simulate

    c = r["concurrency"]
    kw = dict(precision=r["precision"], kv_cache_dtype=kv_dtype, engine=engine, slo=slo,
              basis=basis, registry=reg)
    if r.get("ep"):
        total = c * r["ep"]
        kw["ep"] = r["ep"]
    elif r["mode"] == "aggregated":
        total = c * r.get("pp", 1)
        kw["tp"] = r["tp"]
        kw["pp"] = r.get("pp", 1)
    else:
        total = c * r["decode_workers"]
        kw["disagg"] = Disagg(r["prefill_workers"], r["decode_workers"], r["prefill_tp"],
                              r["decode_tp"])
    rate = r["output_tokens_per_s_per_device"] * r["devices"] / n_out
    n = max(5 * total, 64)
    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / "steady.jsonl"
        if lengths is None:
            pairs = [(n_in, n_out)] * n
        else:
            k = len(lengths[0])
            pairs = [(int(lengths[0][i % k]), int(lengths[1][i % k])) for i in range(n)]
            n_out = float(np.mean([o for _, o in pairs]))
        trace.write_text("".join(json.dumps({"arrival": i / rate, "input_len": a,
                                             "output_len": b}) + "\n"
                                 for i, (a, b) in enumerate(pairs)), encoding="utf-8")
        sim = simulate(w, r.get("cluster") or r["device"], trace=trace, **kw)
    per = sim.per_request
    # drop one lifetime at each end: the warm-up of an empty engine and the drain after the
    # last arrival (a shrinking batch), so every kept request ran in the steady state
    cut = min(total, (n - 1) // 3)
    keep = np.argsort(per["arrival_s"], kind="stable")[cut:n - cut]
    got = {m: _stats(per[f"{m}_s"][keep]) for m in ("ttft", "tpot", "e2e")}
    got["itl"] = got["tpot"]  # as the screening compares it
    met = all(got[k.split("_")[0]][k.split("_")[1]] <= v for k, v in slo.items())
    done = np.sort(per["arrival_s"][keep] + per["e2e_s"][keep])
    span = float(done[-1] - done[0])
    # output tokens/s of the kept requests: finishes after the first, over their span
    steady = (len(done) - 1) * n_out / span / r["devices"] if span > 0 else math.nan
    return {**{k: r[k] for k in ("device", "precision", "mode", "layout", "concurrency")},
            **({"cluster": r["cluster"]} if "cluster" in r else {}),
            "simulated": {"ttft_ms": {k: x * 1e3 for k, x in got["ttft"].items()},
                          "tpot_ms": {k: x * 1e3 for k, x in got["tpot"].items()},
                          "e2e_ms": {k: x * 1e3 for k, x in got["e2e"].items()},
                          "output_tokens_per_s_per_device": steady,
                          "slo_met": bool(met), "requests_rate_per_s": rate,
                          "warmup_requests": int(cut), "kept_requests": len(keep),
                          "arrivals": "evenly spaced at the screened rate"}}
