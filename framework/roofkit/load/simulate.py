"""``roofkit.simulate``: serving under load, step by step, on the circuit's step costs.

A request stream (:mod:`.requests`) runs through ``dp`` engine replicas (requests dealt
round-robin), each on ``tp`` devices, with the scheduler of an engine profile
(``specs/engines``; :mod:`.scheduler`). Disaggregated serving runs a prefill pool and a
decode pool: a request's prompt is prefilled on a prefill worker, its KV cache moves to a
decode worker over the link, ``t_kv = latency + I * kv_bytes_per_token / link_bandwidth``
(counted in TTFT), and the decode worker generates the rest. The first token, sampled by
the prefill worker, reaches the client through the decode worker when that takes the
request in, at the first step boundary after its KV landed (SGLang's decode server polls
the transfers between steps and streams a transferred token when it forms the prebuilt
batch), so TTFT also holds the rest of the decode worker's running step.

Speculative decoding verifies ``k`` drafted tokens per step at ``k + 1`` rows a sequence
and yields, per step,

    E = 1 + sum_{i=1..k} prod_{j<=i} a_j        (a_j: acceptance of draft position j)

tokens per sequence; the draft model's ``k`` decode steps are added to the step.
"""

from __future__ import annotations

import math
import re

import attrs
import numpy as np

from ..circuit import api as _circuit
from ..errors import RoofkitError, SpecError
from ..registry import resolve
from ..results import Headline, Result
from . import frontend as _frontend
from . import requests as _requests
from .fabric import fabric_of
from .host import host_table
from .scheduler import EngineConfig, run
from .steps import StepCosts

#: scheduler defaults when no engine profile is named: chunked, mixed steps, no CUDA graphs,
#: the host cost roofkit serve charges (so one request costs what serve says at batch 1)
BARE = dict(max_num_seqs=256, max_num_batched_tokens=8192, chunked_prefill=True,
            mixed_batches=True, policy="decode-first", block_size=16, admission="grow")


#: the most drafted tokens a speculative step verifies (published drafts: k <= 8; the
#: verify rows k + 1 per sequence must fit a step's token budget)
MAX_DRAFT = 64


@attrs.frozen
class SpecDecode:
    """Speculative decoding: ``k`` drafted tokens a step, ``acceptance`` one rate for every
    position or one per position, ``draft`` a workload that proposes them, ``"mtp"`` for
    the workload's own multi-token-prediction modules (its circuit's draft section), or None
    (a draft that costs nothing, e.g. n-gram lookup)."""

    k: int
    acceptance: float | tuple = 0.0
    draft: str | None = None

    @property
    def rates(self) -> tuple[float, ...]:
        a = self.acceptance
        rates = tuple(a) if isinstance(a, tuple | list) else (float(a),) * self.k
        if len(rates) != self.k or any(not 0.0 <= x <= 1.0 for x in rates):
            raise SpecError(f"speculative decoding: {self.k} acceptance rates in [0, 1] "
                            f"expected, got {a!r}")
        return rates

    @property
    def tokens_per_step(self) -> float:
        """E = 1 + sum_i prod_{j<=i} a_j."""
        e, run_ = 1.0, 1.0
        for a in self.rates:
            run_ *= a
            e += run_
        return e


@attrs.frozen
class Disagg:
    """Disaggregated prefill/decode: worker counts, each pool's TP, the KV link."""

    prefill_workers: int = 1
    decode_workers: int = 1
    prefill_tp: int | None = None
    decode_tp: int | None = None
    link_bandwidth: float | None = None  # B/s; default: the device's interconnect
    link_latency: float | None = None  # s; default: the interconnect's latency


def parse_slo(text) -> dict[str, float]:
    """``ttft_p90=2s,tpot_p90=50ms`` -> {"ttft_p90": 2.0, "tpot_p90": 0.05} (seconds)."""
    if not text or isinstance(text, dict):
        return dict(text or {})
    out = {}
    for part in str(text).split(","):
        m = re.fullmatch(r"\s*(ttft|tpot|itl|e2e)_(mean|p50|p90|p95|p99)\s*=\s*"
                         r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*(ms|s)\s*", part)
        if not m:
            raise SpecError(f"SLO {part.strip()!r}: write METRIC_STAT=VALUE with a unit, e.g. "
                            "ttft_p90=2s,tpot_p90=50ms (metrics ttft, tpot, itl, e2e; stats "
                            "mean, p50, p90, p95, p99)")
        v = float(m.group(3)) * (1e-3 if m.group(4) == "ms" else 1.0)
        key = f"{m.group(1)}_{m.group(2)}"
        if v <= 0:
            raise SpecError(f"SLO {part.strip()!r}: a bound must be above 0 (no request meets "
                            f"{key} <= 0)")
        if key in out:
            raise SpecError(f"SLO {str(text)!r}: {key} is given twice; give each bound once")
        out[key] = v
    return out


def parse_disagg(text) -> Disagg | None:
    """``P:D`` or ``P:D,ptp=2,dtp=4,link=50GB/s``."""
    if text is None or isinstance(text, Disagg):
        return text
    parts = str(text).split(",")
    m = re.fullmatch(r"\s*(\d+)\s*:\s*(\d+)\s*", parts[0])
    if not m:
        raise SpecError(f"--disagg {text!r}: write P:D (prefill and decode workers), then "
                        "optional ,ptp=N,dtp=N,link=BANDWIDTH")
    kw = {"prefill_workers": int(m.group(1)), "decode_workers": int(m.group(2))}
    for p in parts[1:]:
        k, _, v = p.partition("=")
        k = k.strip()
        if k in ("ptp", "dtp"):
            if not re.fullmatch(r"\s*\d+\s*", v) or int(v) < 1:
                raise SpecError(f"--disagg {k}={v.strip()!r}: a whole number of devices >= 1")
            kw["prefill_tp" if k == "ptp" else "decode_tp"] = int(v)
        elif k == "link":
            from ..units import parse as parse_quantity

            bw = parse_quantity(v.strip(), "bandwidth")
            if not (math.isfinite(bw) and bw > 0):
                raise SpecError(f"--disagg link={v.strip()!r}: a bandwidth > 0, e.g. 50GB/s")
            kw["link_bandwidth"] = bw
        else:
            raise SpecError(f"--disagg option {k!r}: one of ptp, dtp, link")
    if kw["prefill_workers"] < 1 or kw["decode_workers"] < 1:
        raise SpecError("--disagg needs at least one prefill and one decode worker")
    return Disagg(**kw)


def parse_spec_decode(text) -> SpecDecode | None:
    """``k=3,acceptance=0.7[,draft=WORKLOAD]`` or per position ``acceptance=0.8/0.6/0.4``."""
    if text is None or isinstance(text, SpecDecode):
        return text
    kw = {}
    for part in str(text).split(","):
        k, _, v = part.partition("=")
        k = k.strip()
        if k == "k":
            if not re.fullmatch(r"\s*\d+\s*", v) or not 1 <= int(v) <= MAX_DRAFT:
                raise SpecError(f"--spec-decode k={v.strip()!r}: a whole number of drafted "
                                f"tokens per step, 1 to {MAX_DRAFT}")
            kw["k"] = int(v)
        elif k == "acceptance":
            try:
                vals = tuple(float(x) for x in v.split("/"))
            except ValueError:
                raise SpecError(f"--spec-decode acceptance={v.strip()!r}: rates in [0, 1], "
                                "one or one per position (0.8/0.6/0.4)") from None
            kw["acceptance"] = vals if len(vals) > 1 else vals[0]
        elif k == "draft":
            kw["draft"] = v.strip()
        else:
            raise SpecError(f"--spec-decode option {k!r}: write k=N,acceptance=A[,draft=W]")
    if "k" not in kw or kw["k"] < 1:
        raise SpecError("--spec-decode needs k=N (drafted tokens per step, >= 1)")
    return SpecDecode(**kw)


STATS = ("mean", "p50", "p90", "p99")


def _stats(x: np.ndarray, w: np.ndarray | None = None) -> dict[str, float]:
    """mean and percentiles (weighted when ``w``), seconds; NaN when empty."""
    x = np.asarray(x, dtype=float)
    ok = np.isfinite(x)
    if w is not None:
        w = np.asarray(w, dtype=float)[ok]
    x = x[ok]
    if not len(x):
        return {k: math.nan for k in (*STATS, "p95")}
    if w is None:
        q = np.percentile(x, [50, 90, 95, 99])
        return {"mean": float(x.mean()), "p50": float(q[0]), "p90": float(q[1]),
                "p95": float(q[2]), "p99": float(q[3])}
    order = np.argsort(x, kind="stable")
    xs, ws = x[order], w[order]
    cw = np.cumsum(ws)
    tot = cw[-1]

    def pct(p):
        return float(xs[min(np.searchsorted(cw, p / 100.0 * tot), len(xs) - 1)])

    return {"mean": float(np.dot(xs, ws) / tot), "p50": pct(50), "p90": pct(90),
            "p95": pct(95), "p99": pct(99)}


@attrs.frozen(eq=False)
class LoadEstimate(Result):
    """Serving under load: latency distributions, throughput, goodput, batch and KV use."""

    workload: str
    device: str
    engine: str
    layout: dict
    pattern: str
    basis: str
    ttft: dict
    tpot: dict
    itl: dict
    e2e: dict
    requests: int
    duration: float
    input_tokens: int
    output_tokens: int
    devices: int
    preemptions: int
    mean_batch: float
    max_batch: int
    kv_peak_fraction: float
    kv_mean_fraction: float
    goodput: float | None
    slo: dict
    slo_met: bool | None
    notes: tuple[str, ...]
    timeline: dict  # time, batch (sequences), kv fraction per step (first replica)
    per_request: dict  # arrival, ttft, tpot, e2e arrays (s)
    pd_ratio: float | None = None
    plugins: tuple[str, ...] = ()
    device_class: str = ""  # vendor and category, the stratum of its intervals
    inside: bool = False  # its device's bandwidth is measured (the intervals' range)
    # (pools of (replica, traces, devices per trace), device spec, memo): energy, on access
    energy_parts: tuple = attrs.field(default=(), repr=False)
    #: a step ran outside the batch range the engine's host time (or a kernel profile) was
    #: measured at: its intervals take the "outside the calibrated range" stratum
    outside_profile_range: bool = False
    #: what the engine's API server did (:func:`_frontend_summary`), None when none is charged
    frontend: dict | None = None

    #: the figures that carry an interval: the latencies' mean (``ttft_ms``) and percentiles
    #: (``ttft_ms_p90``), the throughputs
    LATENCIES = ("ttft", "tpot", "itl", "e2e")

    def intervals(self, level: float = 0.8) -> dict:
        """Per headline figure (each latency's mean and p50/p90/p99, the throughputs) its
        prediction interval from the load cases' out-of-sample residuals
        (:mod:`roofkit.intervals`). The load cases publish means, so a percentile takes the
        relative interval of its mean's stratum (the stratum names the mean's metric), and
        ITL takes TPOT's (its mean per output token)."""
        from ..intervals import engine_family, estimate_interval, table

        rows, out = table(), {}
        inside = self.inside and self.basis.startswith("measured")
        figures = [(f"{m}_ms" + ("" if q == "mean" else f"_{q}"),
                    f"load_{'tpot' if m == 'itl' else m}_ms", getattr(self, m)[q] * 1e3)
                   for m in self.LATENCIES for q in ("mean", "p50", "p90", "p99")]
        figures += [(k, f"load_{k}", getattr(self, k))
                    for k in ("output_tokens_per_s", "requests_per_s")]
        for key, metric, v in figures:
            if not math.isfinite(v) or v <= 0:
                continue
            iv = estimate_interval(v, rows, metric=metric, engine=engine_family(self.engine),
                                   device_class=self.device_class, inside=inside,
                                   beyond=self.outside_profile_range, level=level)
            if iv is not None:
                out[key] = iv
        return out

    HEADLINE = (
        *(Headline(f"{m}_{q}", "ms", (lambda r, m=m, q=q: getattr(r, m)[q] * 1e3))
          for m in ("ttft", "tpot") for q in ("p50", "p90")),
        Headline("output_tokens_per_s", "token/s", "output_tokens_per_s"),
        Headline("requests_per_s", "1/s", "requests_per_s"),
        Headline("goodput", "1/s", "goodput", key_name="goodput"),
        Headline("kv_peak_fraction", "", "kv_peak_fraction"),
    )
    KIND = "load estimate"

    def title(self) -> str:
        return f"{self.workload} on {self.device}, {self.engine}: {self.requests} requests"

    @property
    def output_tokens_per_s(self) -> float:
        return self.output_tokens / self.duration if self.duration > 0 else math.nan

    @property
    def energy(self) -> float:
        """J of all devices over the run (:mod:`roofkit.load.energy`: the per-op model over
        every step, idle time at idle power; the TDP model where the device has no per-op
        constants)."""
        if not self.energy_parts:
            return math.nan
        from .energy import run_energy

        pools, device, memo = self.energy_parts
        if "j" not in memo:  # computed once, on first access
            memo["j"] = run_energy(pools, self.duration, device)
        return memo["j"]

    @property
    def energy_model(self) -> str:
        from ..energy import model_name

        return model_name(self.device)

    @property
    def energy_per_output_token(self) -> float:
        """J per generated token, all devices: energy / output tokens."""
        return self.energy / self.output_tokens if self.output_tokens else math.nan

    @property
    def energy_per_request(self) -> float:
        return self.energy / self.requests if self.requests else math.nan

    @property
    def average_power_per_device(self) -> float:
        """W: energy / (duration * devices)."""
        return self.energy / (self.duration * self.devices) if self.duration > 0 else math.nan

    @property
    def input_tokens_per_s(self) -> float:
        return self.input_tokens / self.duration if self.duration > 0 else math.nan

    @property
    def requests_per_s(self) -> float:
        return self.requests / self.duration if self.duration > 0 else math.nan

    @property
    def output_tokens_per_s_per_device(self) -> float:
        return self.output_tokens_per_s / self.devices

    @property
    def output_tokens_per_s_per_user(self) -> float:
        """1 / mean TPOT: the decode speed one user sees."""
        return 1.0 / self.tpot["mean"] if self.tpot["mean"] > 0 else math.nan

    def quantity(self, metric: str, stat: str = "mean"):
        """``ttft``, ``tpot``, ``itl`` or ``e2e`` at ``stat`` as a pint Quantity in ms."""
        from ..units import Q

        return Q(getattr(self, metric)[stat] * 1e3, "ms")

    def to_dict(self, level: float = 0.8) -> dict:
        def ms(d):
            return {k: d[k] * 1e3 for k in STATS}

        out = {
            "intervals": {k: v.to_dict() for k, v in self.intervals(level).items()},
            "workload": self.workload, "device": self.device, "engine": self.engine,
            "layout": dict(self.layout), "pattern": self.pattern,
            "ttft_ms": ms(self.ttft), "tpot_ms": ms(self.tpot), "itl_ms": ms(self.itl),
            "e2e_ms": ms(self.e2e),
            "output_tokens_per_s": self.output_tokens_per_s,
            "input_tokens_per_s": self.input_tokens_per_s,
            "requests_per_s": self.requests_per_s,
            "output_tokens_per_s_per_device": self.output_tokens_per_s_per_device,
            "output_tokens_per_s_per_user": self.output_tokens_per_s_per_user,
            "requests": self.requests, "duration_s": self.duration,
            "devices": self.devices, "preemptions": self.preemptions,
            "mean_batch": self.mean_batch, "max_batch": self.max_batch,
            "kv_peak_fraction": self.kv_peak_fraction,
            "kv_mean_fraction": self.kv_mean_fraction,
            "energy_j": self.energy, "energy_model": self.energy_model,
            "energy_per_output_token_j": self.energy_per_output_token,
            "energy_per_request_j": self.energy_per_request,
            "average_power_per_device_w": self.average_power_per_device,
            "outside_profile_range": self.outside_profile_range,
            "basis": self.basis, "notes": list(self.notes), "plugins": list(self.plugins),
            **{k: v for k, v in self.headline().items() if k.endswith(("p50_ms", "p90_ms"))},
            "timeline": self.timeline_samples(),
        }
        if self.slo:
            out["slo"] = {k: v * 1e3 for k, v in self.slo.items()}
            out["slo_unit"] = "ms"
            out["goodput"] = self.goodput
            out["goodput_unit"] = "requests/s meeting every SLO threshold"
            out["slo_met"] = self.slo_met
        if self.pd_ratio is not None:
            out["pd_ratio"] = self.pd_ratio
        if self.frontend is not None:
            out["frontend"] = dict(self.frontend)
        return out

    def timeline_samples(self, points: int = 200) -> dict:
        """Batch (sequences in a step) and KV use over time, at most ``points`` steps evenly
        spaced (the first replica), as plain lists."""
        t = self.timeline["time_s"]
        idx = np.unique(np.linspace(0, len(t) - 1, min(points, len(t))).astype(int)) \
            if len(t) else np.zeros(0, dtype=int)
        return {"time_s": t[idx].tolist(), "batch": self.timeline["batch"][idx].tolist(),
                "kv_fraction": self.timeline["kv_fraction"][idx].tolist()}

    def to_pandas(self):
        import pandas as pd

        return pd.DataFrame({k: v for k, v in self.per_request.items()})

    def __repr__(self) -> str:
        return (f"LoadEstimate({self.workload} on {self.device}, {self.engine}: TTFT p50 "
                f"{self.ttft['p50'] * 1e3:.1f} ms, TPOT p50 {self.tpot['p50'] * 1e3:.2f} ms, "
                f"{self.output_tokens_per_s:.0f} output tok/s)")


@attrs.frozen(eq=False)
class Replica:
    """One engine instance's costs and scheduler, resolved once."""

    costs: StepCosts
    host: object
    cfg: EngineConfig
    notes: tuple
    frontend: object = None  # the engine's Frontend when it charges one


def _engine_spec(reg, engine):
    if engine is None or engine == "none":
        return None
    return reg.spec("engines", engine)


def build_replica(reg, w, d, *, engine, tp, precision, kv_cache_dtype, basis, stream,
                  max_num_seqs=None, max_batched_tokens=None, chunked_prefill=None,
                  policy=None, prefix_hit=0.0, spec=None, decode_only=False,
                  prefill_only=False, pp=1, ep=1, fabric=None) -> Replica:
    """Resolve an engine replica: its limits, step tables, host table and KV capacity."""
    spec_e = _engine_spec(reg, engine)
    notes = []
    if spec_e is None:
        sched = dict(BARE)
        graphs = ()
    else:
        s = spec_e.scheduler
        seqs, toks = spec_e.limits(d)
        sched = dict(max_num_seqs=seqs, max_num_batched_tokens=toks,
                     chunked_prefill=s.chunked_prefill, mixed_batches=s.mixed_batches,
                     policy=s.policy, block_size=s.block_size, admission=s.admission)
        graphs = tuple(spec_e.cuda_graphs.batch_sizes)
    for key, v in (("max_num_seqs", max_num_seqs), ("max_num_batched_tokens", max_batched_tokens),
                   ("chunked_prefill", chunked_prefill), ("policy", policy)):
        if v is not None:
            sched[key] = v
    if sched["policy"] not in ("prefill-first", "decode-first"):
        raise SpecError(f"policy {sched['policy']!r}: prefill-first or decode-first")
    longest_in = int(np.max(stream.input_len))
    longest = int(np.max(stream.input_len + stream.output_len))
    if not sched["chunked_prefill"] and longest_in > sched["max_num_batched_tokens"]:
        notes.append(f"prompts up to {longest_in} tokens without chunked prefill: the step "
                     f"token budget is raised from {sched['max_num_batched_tokens']} to "
                     f"{longest_in} (vLLM V0 sets max(max_model_len, 2048))")
        sched["max_num_batched_tokens"] = longest_in
    verify = 1 if spec is None else spec.k + 1
    fp = _circuit.footprint(w, d, precision=precision, kv_cache_dtype=kv_cache_dtype,
                            registry=reg, tp=tp, basis=basis)
    frac = spec_e.memory.fraction(tp) if spec_e is not None else None
    if frac is None:
        frac = d.memory.usable_fraction
    else:
        notes.append(f"{spec_e.name} takes {frac:.0%} of each device's memory for weights and "
                     f"KV cache at TP {tp} (its static memory fraction), not the device "
                     f"spec's {d.memory.usable_fraction:.0%}")
    usable = d.memory.capacity * frac
    # with pp stages a device holds 1/pp of the layers (weights and KV) for all pp virtual
    # engines: each engine's share, in whole-model KV bytes, is usable - weights / pp
    cap = usable - fp.weights / pp
    if spec_e is not None and spec_e.kv_sizing.profile_run:
        peak = profile_peak(w, sched["max_num_batched_tokens"], sched["max_num_seqs"],
                            spec_e.kv_sizing.sampler_logit_bytes)
        if peak is None:
            notes.append(f"{spec_e.name} sizes its KV cache after a profiling pass; "
                         f"{w.name} has no 'hidden' or 'vocab' dim, so its peak is not "
                         "subtracted")
        else:
            cap -= peak
            notes.append(f"KV cache sized after {spec_e.name}'s profiling pass of "
                         f"{sched['max_num_batched_tokens']} tokens: at least "
                         f"{peak / 1e9:.2f} GB a device of activations and sampler tensors "
                         "taken from the memory share (a lower bound)")
    if ep > 1:
        experts = fp.weights_by_role.get("experts", 0.0)
        if not experts:
            raise SpecError(f"{w.name} has no routed experts: ep needs a MoE workload")
        cap += experts * (1 - 1 / ep)
        notes.append(f"expert parallelism over {ep} ranks with attention data parallelism: "
                     f"each rank holds the dense weights and 1/{ep} of the experts "
                     f"({experts * (1 - 1 / ep) / 1e9:.1f} GB fewer), runs its own batch and "
                     "KV, and the routed experts of every rank's tokens; two all-to-alls a "
                     f"MoE layer on {fabric.name}'s links; ranks are taken as evenly loaded")
    pool = spec_e.scheduler.request_pool if spec_e is not None else None
    if pool is not None and max_num_seqs is None and fp.kv_per_token > 0 and cap > 0:
        context = float(w.dims.get("max_context") or longest)
        sched["max_num_seqs"] = pool.seqs(cap / fp.kv_per_token, context)
        notes.append(f"{spec_e.name} sizes its request pool from its {cap / fp.kv_per_token:,.0f}"
                     f"-token KV pool and the {context:,.0f}-token context: at most "
                     f"{sched['max_num_seqs']} sequences run at once")
    rows = sched["max_num_batched_tokens"] + sched["max_num_seqs"] * verify
    costs = step_costs(reg, w, d, tp=tp, precision=precision, kv_cache_dtype=kv_cache_dtype,
                       basis=basis, max_rows=rows, max_seqs=sched["max_num_seqs"],
                       max_context=longest + 2 * verify, verify=verify, ep=ep,
                       a2a=fabric.all_to_all(ep) if ep > 1 else None,
                       engine=spec_e.name if spec_e is not None else None)
    if pp > 1:
        hidden = w.dims.get("hidden")
        if not hidden:
            raise SpecError(f"{w.name} has no 'hidden' dim: pipeline stages need the width of "
                            "the activations they send")
        costs = costs.with_pipeline(float(hidden), 2.0, *fabric.pipeline(tp, pp))
        notes.append(f"pipeline parallelism: the {int(w.dims.get('layers', 0))} layers split "
                     f"evenly over {pp} stages, {pp} virtual engines (vLLM's scheme) each with "
                     f"1/{pp} of the KV; each step sends bf16 activations across {pp - 1} "
                     f"stage boundaries on {fabric.name}'s links")
    host = host_table(spec_e, costs.roofline, reg, costs.kernels, sched["max_num_seqs"] + 1)
    tps = 1.0 if spec is None else spec.tokens_per_step
    draft_time = None
    if spec is not None and spec.draft == "mtp":
        from .steps import SectionCosts

        mtp = SectionCosts(w, d, "draft", tp=tp, precision=precision,
                           kv_cache_dtype=kv_cache_dtype, basis=basis, registry=reg,
                           max_seqs=sched["max_num_seqs"], max_context=longest + 2 * verify)

        def draft_time(n, c, _m=mtp, _k=spec.k):
            return _k * _m(n, c)

        notes.append(f"MTP draft: {spec.k} passes a step through the workload's draft "
                     "section (its multi-token-prediction modules, chained for k > 1)")
    elif spec is not None and spec.draft:
        dcosts = step_costs(reg, reg.workload(spec.draft), d, tp=tp, precision=None,
                            kv_cache_dtype=kv_cache_dtype, basis=basis,
                            max_rows=sched["max_num_seqs"], max_seqs=sched["max_num_seqs"],
                            max_context=longest + 2 * verify, verify=1)
        k = spec.k
        dfp = _circuit.footprint(spec.draft, d, kv_cache_dtype=kv_cache_dtype, registry=reg,
                                 tp=tp, basis=basis)
        cap -= dfp.weights

        def draft_time(n, c, _d=dcosts.device_time, _k=k):
            return _k * _d(n, c)

        notes.append(f"draft {spec.draft}: {k} decode steps of the draft model per step; its "
                     "weights are taken from the KV memory, its own KV is not counted")
    cfg = EngineConfig(max_num_seqs=sched["max_num_seqs"],
                       max_num_batched_tokens=sched["max_num_batched_tokens"],
                       chunked_prefill=sched["chunked_prefill"],
                       mixed_batches=sched["mixed_batches"], policy=sched["policy"],
                       block_size=sched["block_size"], admission=sched["admission"],
                       graph_sizes=() if prefill_only else graphs, kv_capacity=cap,
                       kv_token=fp.kv_per_token, state_seq=fp.state_per_seq,
                       prefix_hit=prefix_hit, tokens_per_step=tps, draft_time=draft_time,
                       decode_only=decode_only)
    fe = spec_e.frontend if spec_e is not None and spec_e.frontend.active else None
    return Replica(costs, host, cfg, tuple(notes), fe)


def profile_peak(w, tokens: int, seqs: int, logit_bytes: float = 16.0) -> float | None:
    """A lower bound of the activation peak of vLLM V1's profiling pass on one device
    (bytes), which its KV cache is sized without (``[kv_sizing] profile_run``):

        forward  = 2 * N * hidden * 2 B
        sampler  = N * hidden * 2 B + R * vocab * L
        peak     = max(forward, sampler),   N = max_num_batched_tokens, R = min(N, max_num_seqs)

    The forward term is the two 16-bit ``[N, hidden]`` tensors every decoder layer holds
    (``hidden_states, residual = self.input_layernorm(hidden_states, residual)``), replicated
    on every tensor-parallel rank; the gate/up outputs and quantized copies that also live
    there are left out. The sampler term is the warm-up's: the pass's hidden states are still
    referenced while ``_dummy_sampler_run`` samples ``R`` requests with top-p 0.9 over the
    whole (all-gathered) vocabulary, whose ``apply_top_k_top_p`` holds the float32 logits,
    their sorted copy and its int64 indices at once (L = 4 + 4 + 8 = 16 B an entry; the
    16-bit logits, the top-p cumulative sum, its mask and the re-scattered logits also live
    and are left out). A sampler that does not sort (``[kv_sizing] sampler_logit_bytes = 2``:
    FlashInfer's on CUDA) is held to the 16-bit logits the model returns, L = 2 B. Non-torch
    memory (communication buffers) is not counted. None without the dims."""
    hidden, vocab = w.dims.get("hidden"), w.dims.get("vocab")
    if not hidden or not vocab:
        return None
    n, r = float(tokens), float(min(tokens, seqs))
    forward = 2.0 * n * hidden * 2.0
    sampler = n * hidden * 2.0 + r * vocab * float(logit_bytes)
    return max(forward, sampler)


def step_costs(reg, w, d, *, tp, precision, kv_cache_dtype, basis, max_rows, max_seqs,
               max_context, verify, ep=1, a2a=None, engine=None) -> StepCosts:
    """The step tables of a deployment, built once per registry (they hold plain floats)."""
    key = ("load-step-costs", w.name, d.name, tp, precision, kv_cache_dtype, basis,
           int(max_rows), int(max_seqs), int(max_context), int(verify), int(ep), a2a, engine)
    hit = reg._memo.get(key)
    if hit is not None and hit[0] is w and hit[1] is d:
        return hit[2]
    costs = StepCosts(w, d, tp=tp, precision=precision, kv_cache_dtype=kv_cache_dtype,
                      basis=basis, registry=reg, max_rows=max_rows, max_seqs=max_seqs,
                      max_context=max_context, verify=verify, ep=ep, a2a=a2a, engine=engine)
    reg._memo[key] = (w, d, costs)
    return costs


def _deal(stream, k: int):
    """Round-robin shares of a stream for ``k`` replicas (a closed loop splits its clients)."""
    out = []
    for i in range(k):
        idx = np.arange(i, len(stream), k)
        if not len(idx):
            continue
        s = stream.take(idx)
        if stream.concurrency is not None:
            c = stream.concurrency // k + (1 if i < stream.concurrency % k else 0)
            s = attrs.evolve(s, concurrency=max(c, 1))
        out.append(s)
    return out


def simulate(workload, device, *, concurrency=None, rate=None, trace=None, requests=None,
             input_len=128, output_len=128, tp: int = 1, dp: int = 1, pp: int = 1,
             ep: int = 1, attention_dp: int | None = None,
             precision: str | None = None, kv_cache_dtype: str = "bf16",
             engine: str | None = "vllm", max_num_seqs: int | None = None,
             max_batched_tokens: int | None = None, chunked_prefill: bool | None = None,
             policy: str | None = None, prefix_hit: float = 0.0, disagg=None,
             spec_decode=None, slo=None, seed: int = 0, basis: str = "auto",
             think_time=None, frontend: bool = True, registry=None) -> LoadEstimate:
    """Simulate serving a request stream under load; see the module docstring.

    :param concurrency: closed loop of this many clients; or ``rate`` (requests/s, Poisson)
        or ``trace`` (JSON lines). ``requests`` requests in all (default 8 x concurrency,
        at least 200; 1000 for a rate).
    :param input_len, output_len: a length or distribution (``"uniform:512:1536"``...).
    :param engine: an engine profile of ``specs/engines`` (``vllm``, ``vllm-v0``,
        ``sglang``, ``tensorrt-llm``) or None (the host cost of ``roofkit serve``, chunked
        mixed steps, no CUDA graphs).
    :param dp: engine replicas, each on ``tp`` devices; requests are dealt round-robin.
    :param pp: pipeline stages of a replica (one node): ``pp`` virtual engines share the
        stages, each step pays the activation sends between them.
    :param ep: expert parallelism with attention data parallelism over ``ep`` ranks of one
        node (DeepSeek-style; ``attention_dp`` equals it): each rank schedules its own
        requests, runs 1/ep of the experts for every rank's tokens, all-to-alls per MoE
        layer.
    :param disagg: a :class:`Disagg` or ``"P:D[,ptp=..,dtp=..,link=..]"``.
    :param spec_decode: a :class:`SpecDecode` or ``"k=3,acceptance=0.7[,draft=W]"``.
    :param think_time: closed loops: each client waits this long after a request's last token
        before sending its next (``0.5``, ``500ms``, ``exp:2s``, ``uniform:1:3``).
    :param slo: ``"ttft_p90=2s,tpot_p90=50ms"``: goodput counts requests meeting every
        threshold (percentile keys are compared per request), ``slo_met`` the percentiles.
    :param basis: ``calibrated``, ``datasheet`` or ``auto`` (the default: calibrated where
        the device has a calibration, else datasheet).
    :param frontend: charge the engine profile's API server (``[frontend]``, where it has
        one); False for a run that hands prompts to the engine in process (offline).
    """
    from ..circuit.roofline import resolve_basis

    reg = resolve(registry)
    w = reg.workload(workload)
    d, fab = fabric_of(reg, device)
    basis = resolve_basis(basis, d, reg)
    if attention_dp is not None and attention_dp != ep:
        raise SpecError(f"attention_dp {attention_dp} with ep {ep}: the DeepSeek-style layout "
                        "modelled runs attention data-parallel over the same ranks as the "
                        "experts (attention_dp = ep)")
    for name, v in (("tp", tp), ("dp", dp), ("pp", pp), ("ep", ep)):
        if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < 1:
            raise RoofkitError(f"{name} must be a whole number >= 1, got {v!r}")
    if not isinstance(frontend, bool | np.bool_):
        raise RoofkitError(f"frontend must be True or False, got {frontend!r}")
    if not 0.0 <= prefix_hit < 1.0:
        raise RoofkitError(f"prefix_hit must be in [0, 1), got {prefix_hit!r}")
    slo = parse_slo(slo)
    for name, v in (("max_num_seqs", max_num_seqs), ("max_batched_tokens", max_batched_tokens)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, int | np.integer)
                              or v < 1):
            raise SpecError(f"{name} must be a whole number >= 1, got {v!r}")
    dis = parse_disagg(disagg)
    spec = parse_spec_decode(spec_decode)
    st = _requests.stream(requests=requests, concurrency=concurrency, rate=rate, trace=trace,
                          input_len=input_len, output_len=output_len, seed=seed,
                          think_time=think_time)
    eng_name = "none" if engine is None else reg.spec("engines", engine).name
    common = dict(engine=engine, precision=precision, kv_cache_dtype=kv_cache_dtype,
                  basis=basis, max_num_seqs=max_num_seqs, max_batched_tokens=max_batched_tokens,
                  chunked_prefill=chunked_prefill, policy=policy, prefix_hit=prefix_hit)
    notes = []
    deliveries = ()
    front = None
    pd_ratio = None
    problems = layout_problems(w, pp=pp, ep=ep)
    if problems:
        raise SpecError(f"invalid serving layout for {w.name}: " + "; ".join(problems))
    if pp > 1:
        fab.pipeline(tp, pp)  # refuses a pipeline beyond one node without a cluster
        if dis is not None:
            raise SpecError("pp with --disagg is not modelled; give each pool its tp")
    if ep > 1:
        if tp != 1 or pp != 1 or dis is not None:
            raise SpecError("ep is modelled with attention data parallelism alone (tp 1, pp 1, "
                            "aggregated)")
        fab.all_to_all(ep)  # refuses EP beyond one node without a cluster
    common["fabric"] = fab
    if dis is None:
        fab.check(tp * pp * ep * dp, f"tp {tp} x pp {pp} x ep {ep} x dp {dp}")
        rep = build_replica(reg, w, d, tp=tp, stream=st, spec=spec, pp=pp, ep=ep, **common)
        dealt = _deal(st, dp * pp * ep)
        fe = rep.frontend if pp == 1 and frontend else None
        if fe is None:
            traces = [run(s, rep.cfg, rep.costs, rep.host) for s in dealt]
            arrival = np.concatenate([tr.arrival for tr in traces])
            first = np.concatenate([tr.first_token for tr in traces])
            finish = np.concatenate([tr.finish for tr in traces])
            if rep.frontend is not None and frontend:
                notes.append("frontend not charged with pp > 1 (one API server for the "
                             "pipeline's virtual engines is not modelled)")
        else:
            coupled = [_frontend.couple(fe, s, lambda x: run(x, rep.cfg, rep.costs, rep.host))
                       for s in dealt]
            traces = [c[0] for c in coupled]
            deliveries = [c[1] for c in coupled]
            arrival = np.concatenate([dl.send for dl in deliveries])
            first = np.concatenate([dl.first for dl in deliveries])
            finish = np.concatenate([dl.finish for dl in deliveries])
            front = _frontend_summary(fe, traces, deliveries, coupled)
            notes.append(_frontend_note(front))
        devices = tp * dp * pp * ep
        reps = [rep]
        pools = ((rep, traces, tp),)
        layout = {"tp": tp, "pp": pp, "dp": dp, "ep": ep}
        if fab.out is not None:
            layout["cluster"] = fab.name
    else:
        ptp, dtp = dis.prefill_tp or tp, dis.decode_tp or tp
        prep = build_replica(reg, w, d, tp=ptp, stream=st, spec=None, prefill_only=True,
                             **common)
        pin, pout = st.input_len, st.output_len
        used = ptp * dis.prefill_workers + dtp * dis.decode_workers
        fab.check(used, f"{dis.prefill_workers}xTP{ptp} prefill + {dis.decode_workers}xTP{dtp} "
                  "decode")
        t_kv = kv_transfer(reg, w, d, ptp, precision, kv_cache_dtype, basis, dis, pin,
                           fab.kv_link(used))
        dst0 = attrs.evolve(st, output_len=np.maximum(pout - 1, 1), arrival=np.zeros(len(st)))
        drep = build_replica(reg, w, d, tp=dtp, stream=dst0, spec=spec, decode_only=True,
                             **common)
        if st.arrival is not None:
            parrival = st.arrival
            first_out, ready, finish, ptr, dtr = _pools(st, parrival, prep, drep, dis, t_kv)
        else:
            # a closed loop: client k sends request i + C when request i finished; the two
            # pools are re-run on those arrivals until they no longer move (each pass fixes
            # at least one more round of every client's requests)
            c = st.concurrency
            parrival = np.zeros(len(st))
            for _ in range(len(st) // c + 2):
                first_out, ready, finish, ptr, dtr = _pools(st, parrival, prep, drep, dis, t_kv)
                nxt = np.concatenate([np.zeros(min(c, len(st))), finish[:-c] if len(st) > c
                                      else np.zeros(0)])
                if st.delay is not None:  # each client's think time before its request
                    nxt = nxt + st.delay
                if np.max(np.abs(nxt - parrival)) < 1e-9:
                    break
                parrival = nxt
            else:
                first_out, ready, finish, ptr, dtr = _pools(st, parrival, prep, drep, dis, t_kv)
        arrival = parrival
        first = first_out
        traces = dtr
        devices = ptp * dis.prefill_workers + dtp * dis.decode_workers
        reps = [prep, drep]
        pools = ((prep, ptr, ptp), (drep, dtr, dtp))
        layout = {"prefill_workers": dis.prefill_workers, "prefill_tp": ptp,
                  "decode_workers": dis.decode_workers, "decode_tp": dtp}
        if fab.out is not None:
            layout["cluster"] = fab.name
        notes.append(f"KV transfer {np.mean(t_kv) * 1e3:.3f} ms mean per request over the "
                     f"{_link_text(dis, fab.kv_link(used))}, counted in TTFT")
        notes.append(f"first token streamed by the decode worker at its next step boundary, "
                     f"{np.mean(first_out - ready) * 1e3:.3f} ms mean after the KV landed, "
                     "counted in TTFT")
        pd_ratio = balance_ratio(ptr, dtr, dis)
        notes.append(f"P:D balance: {pd_ratio:.2f} prefill workers per decode worker keep both "
                     "pools equally busy at this load")
    if dis is None:
        in_len = np.concatenate([tr.input_len for tr in traces])
        out_len = np.concatenate([tr.output_len for tr in traces])
        if st.arrival is None:
            # the clients' sends (with a frontend, on their last tokens as delivered)
            k = max(lock_step(a) for a in ([dl.send for dl in deliveries] if deliveries
                                           else [tr.arrival for tr in traces]))
            cold, later = rounds_ttft(traces, [s.concurrency for s in dealt])
            after = "" if math.isnan(later) else f", {later * 1e3:.0f} ms after it"
            if k <= 1 and st.delay is None and cold > STAGGERED * later:
                notes.append(f"closed loop: the first round's prompts (every client's at "
                             f"t = 0) wait {cold * 1e3:.0f} ms mean TTFT, queued behind each "
                             f"other's prefills; the later ones {later * 1e3:.0f} ms, their "
                             "clients spread apart by that queue; clients that keep the first "
                             "round's burst every round read TTFT near the first round's "
                             "(docs/load.md, accuracy)")
            if k > 1:
                notes.append(f"closed loop in lock step: up to {k} requests reach the scheduler "
                             "at one instant after the first round (prompts prefilled in one "
                             "step finish in one step and their clients resend together); "
                             f"TTFT mean {cold * 1e3:.0f} ms in the first round (every "
                             f"client's first prompt at t = 0){after}; real clients drift "
                             "apart, so the TTFT can read high (docs/load.md, accuracy)")
    else:
        in_len, out_len = st.input_len, st.output_len
    ttft = first - arrival
    e2e = finish - arrival
    with np.errstate(invalid="ignore", divide="ignore"):
        tpot = np.where(out_len > 1, (finish - first) / np.maximum(out_len - 1, 1), np.nan)
    if deliveries:
        parts = [_frontend.itl(dl, tr, reps[-1].cfg.tokens_per_step)
                 for dl, tr in zip(deliveries, traces, strict=True)]
        itl_x = np.concatenate([p[0] for p in parts])
        itl_w = np.concatenate([p[1] for p in parts])
    else:
        itl_x = np.concatenate([tr.itl for tr in traces])
        itl_w = np.concatenate([tr.itl_weight for tr in traces])
    duration = float(np.max(finish) - np.min(arrival))
    tr0 = traces[0]
    dt = tr0.step_time
    cap = reps[-1].cfg.kv_capacity
    kv_frac = tr0.step_kv / cap if cap > 0 else tr0.step_kv * 0
    span = float(dt.sum()) or 1.0
    goodput = met = None
    if slo:
        ok = np.ones(len(ttft), dtype=bool)
        per = {"ttft": ttft, "tpot": np.nan_to_num(tpot, nan=0.0), "e2e": e2e,
               "itl": np.nan_to_num(tpot, nan=0.0)}
        for key, v in slo.items():
            ok &= per[key.split("_")[0]] <= v
        goodput = float(ok.sum() / duration) if duration > 0 else math.nan
        stats = {"ttft": _stats(ttft), "tpot": _stats(tpot), "e2e": _stats(e2e),
                 "itl": _stats(itl_x, itl_w)}
        met = all(stats[k.split("_")[0]][k.split("_")[1]] <= v for k, v in slo.items())
    outside = False  # a step outside the engine profile's measured batch range
    for rep in reps:
        notes += list(rep.notes)
        h = rep.host
        if h.measured is not None:
            lo, hi = h.measured
            seen = [tr.host_batches for tr in traces]
            s_lo = min(x[0] for x in seen)
            s_hi = max(x[1] for x in seen)
            if s_lo < lo or s_hi > hi:
                outside = True
                notes.append(f"host time beyond its measured range: steps of {s_lo}..{s_hi} "
                             f"sequences, measured at {lo}..{hi} (extended linearly below "
                             f"{lo}; {h.above}); {h.source}")
    for rep in reps:  # engine kernels measured at other GEMM rows than the steps ran
        from ..circuit.kernels import outside as _kernels_outside

        ranges = {*rep.costs.decode_plan.kernel_ranges, *rep.costs.prefill_plan.kernel_ranges}
        rows = [int(x) for tr in traces for x in (tr.step_tokens.min(), tr.step_tokens.max())
                if len(tr.step_tokens)]
        beyond = _kernels_outside(sorted(ranges), np.array(rows)) if rows else []
        outside = outside or bool(beyond)
        notes += beyond
    notes.append(f"host per step: {reps[-1].host.source}")
    if prefix_hit:
        notes.append(f"prefix cache: {prefix_hit:.0%} of each new prompt's tokens (whole "
                     "blocks) skip prefill; their KV is counted per request")
    if spec is not None:
        notes.append(f"speculative decoding: k={spec.k}, {spec.tokens_per_step:.3f} tokens per "
                     "sequence per step (expected), verify at k+1 rows; ITL is the step "
                     "time over the tokens it yields")
    notes += list(reps[-1].costs.notes)
    from ..circuit.roofline import device_roofline

    return LoadEstimate(
        device_class=f"{(d.vendor or 'other').lower()} {d.category}",
        inside=device_roofline(d, "calibrated", reg).bandwidth_measured,
        outside_profile_range=outside, workload=w.name, device=d.name, engine=eng_name,
        layout=layout,
        pattern=st.describe, basis=reps[-1].costs.basis, ttft=_stats(ttft), tpot=_stats(tpot),
        itl=_stats(itl_x, itl_w), e2e=_stats(e2e), requests=len(st), duration=duration,
        input_tokens=int(np.sum(in_len)), output_tokens=int(np.sum(out_len)),
        devices=devices, preemptions=sum(tr.preemptions for tr in traces),
        mean_batch=float(np.dot(tr0.step_seqs, dt) / span),
        max_batch=int(tr0.step_seqs.max()) if len(dt) else 0,
        kv_peak_fraction=float(kv_frac.max()) if len(dt) else 0.0,
        kv_mean_fraction=float(np.dot(kv_frac, dt) / span) if len(dt) else 0.0,
        goodput=goodput, slo=slo, slo_met=met, notes=tuple(dict.fromkeys(notes)),
        timeline={"time_s": tr0.step_end, "step_s": tr0.step_time, "batch": tr0.step_seqs,
                  "kv_fraction": kv_frac, "tokens": tr0.step_tokens},
        per_request={"arrival_s": arrival, "ttft_s": ttft, "tpot_s": tpot, "e2e_s": e2e},
        pd_ratio=pd_ratio, plugins=reg.plugin_set, energy_parts=(pools, d, {}),
        frontend=front)


def _frontend_summary(fe, traces, deliveries, coupled) -> dict:
    """What the API server did: the ``frontend`` object of :meth:`LoadEstimate.to_dict`."""
    span = max(float(np.max(dl.step)) if len(dl.step) else 0.0 for dl in deliveries) or 1.0
    lag = np.concatenate([dl.first - tr.first_token
                          for dl, tr in zip(deliveries, traces, strict=True)])
    wait = np.concatenate([dl.visible - dl.send for dl in deliveries])
    return {"busy_fraction": min(max(dl.busy for dl in deliveries) / span, 1.0),
            "admission_wait_ms": float(np.mean(wait)) * 1e3,
            "first_token_lag_ms": float(np.mean(lag)) * 1e3,
            "per_token_us": fe.per_token * 1e6, "per_prompt_token_us": fe.per_prompt_token * 1e6,
            "per_request_ms": fe.per_request * 1e3,
            "engine_runs": max(c[2] for c in coupled), "settled": all(c[3] for c in coupled),
            "source": fe.source}


def _frontend_note(f: dict) -> str:
    text = (f"frontend (one API-server process a replica, {f['per_token_us']:.1f} us a streamed "
            f"token, {f['per_prompt_token_us']:.2f} us a prompt token): busy "
            f"{f['busy_fraction']:.0%} of the run; a request waits {f['admission_wait_ms']:.2f} "
            f"ms mean before the engine sees it, its first token {f['first_token_lag_ms']:.2f} "
            f"ms mean after the engine emitted it; {f['source']}")
    if f["busy_fraction"] > 0.9:
        text += ("; the frontend, not the engine, sets the pace (vLLM: --api-server-count or "
                 "--stream-interval relieve it; not modelled)")
    if not f["settled"]:
        text += f"; admissions still moving after {f['engine_runs']} engine runs"
    return text


def layout_problems(w, *, pp: int = 1, ep: int = 1) -> list[str]:
    """What the workload's dims refuse of a serving layout: stages hold whole layers, an EP
    rank holds whole experts (as ``serve`` and ``train`` refuse them); the circuit refuses a
    tp that does not divide the heads."""
    out = []
    layers = int(w.dims.get("layers", 0) or 0)
    experts = int(w.dims.get("experts", 0) or 0)
    if pp > 1 and layers and layers % pp:
        out.append(f"pp {pp} does not divide the {layers} layers")
    if ep > 1 and experts and experts % ep:
        out.append(f"ep {ep} does not divide the {experts} experts")
    return out


def lock_step(arrival: np.ndarray) -> int:
    """The most requests of a closed loop that arrive at one instant after the first round
    (the clients' first requests all leave at t = 0)."""
    later = arrival[arrival > 0]
    if not len(later):
        return 0
    return int(np.unique(later, return_counts=True)[1].max())


#: a closed loop's first-round queue is reported when its first round's mean TTFT exceeds the
#: later requests' by this factor (a threshold for the note, not a model constant)
STAGGERED = 1.5


def rounds_ttft(traces, concurrency) -> tuple[float, float]:
    """A closed loop's mean TTFT (s) over its first round (the first ``c`` requests of each
    trace, sent together at the start) and over the requests after it (NaN: none), for the
    traces of its replicas and their client counts ``concurrency``."""
    first, rest = [], []
    for tr, c in zip(traces, concurrency, strict=True):
        t = tr.first_token - tr.arrival
        first.append(t[:c])
        rest.append(t[c:])
    a, b = np.concatenate(first), np.concatenate(rest)
    return float(a.mean()), float(b.mean()) if len(b) else math.nan


def _pools(st, arrival, prep, drep, dis, t_kv):
    """Run the prefill pool on ``arrival`` (request order), move each KV cache, run the
    decode pool: (first token at the client, KV landed, finish, prefill traces, decode
    traces), in request order."""
    n = len(st)
    order = np.argsort(arrival, kind="stable")
    pst = _requests.Stream(st.input_len[order], np.ones(n, dtype=np.int64), arrival[order])
    P, D = dis.prefill_workers, dis.decode_workers
    first = np.empty(n)
    ptr = []
    for i in range(min(P, n)):
        tr = run(pst.take(np.arange(i, n, P)), prep.cfg, prep.costs, prep.host)
        first[order[i::P]] = tr.first_token
        ptr.append(tr)
    ready = first + t_kv
    dorder = np.argsort(ready, kind="stable")
    dst = _requests.Stream(st.input_len[dorder], np.maximum(st.output_len[dorder] - 1, 1),
                           ready[dorder])
    finish = np.empty(n)
    streamed = np.empty(n)
    dtr = []
    for j in range(min(D, n)):
        tr = run(dst.take(np.arange(j, n, D)), drep.cfg, drep.costs, drep.host)
        finish[dorder[j::D]] = tr.finish
        streamed[dorder[j::D]] = tr.first_token
        dtr.append(tr)
    finish = np.where(st.output_len > 1, finish, ready)
    # the client's first token: the decode server streams it when it takes the request in
    first_out = np.where(st.output_len > 1, streamed, ready)
    return first_out, ready, finish, ptr, dtr


def _link(dis, tier):
    """(bandwidth, latency) of the KV link: the one given, else the fabric's tier."""
    bw = dis.link_bandwidth or tier.bandwidth
    if not math.isfinite(bw):
        raise SpecError("the device has no [interconnect]: give the KV link's bandwidth "
                        "(--disagg P:D,link=50GB/s)")
    lat = dis.link_latency if dis.link_latency is not None else tier.latency
    return bw, lat


def _link_text(dis, tier) -> str:
    bw, lat = _link(dis, tier)
    src = "given link" if dis.link_bandwidth else tier.name
    return f"{src} ({bw / 1e9:.0f} GB/s, {lat * 1e6:.1f} us)"


def kv_transfer(reg, w, d, tp, precision, kv_cache_dtype, basis, dis, input_len, tier):
    """Seconds to move each request's KV to its decode worker:
    ``latency + (I * kv_per_token + state) / link_bandwidth`` with one device's shard (the
    ``tp`` shards move in parallel, each over its own link)."""
    fp = _circuit.footprint(w, d, precision=precision, kv_cache_dtype=kv_cache_dtype,
                            registry=reg, tp=tp, basis=basis)
    bw, lat = _link(dis, tier)
    return lat + (np.asarray(input_len, dtype=float) * fp.kv_per_token + fp.state_per_seq) / bw


def balance_ratio(ptr, dtr, dis) -> float:
    """Prefill workers per decode worker that keep both pools equally busy:
    ``(prefill busy time / P) / (decode busy time / D)`` scaled to P:D, i.e. the ratio
    ``busy_P / busy_D`` per unit of work."""
    busy_p = sum(float(tr.step_time.sum()) for tr in ptr)
    busy_d = sum(float(tr.step_time.sum()) for tr in dtr)
    if busy_d <= 0:
        return math.inf
    return busy_p / busy_d
