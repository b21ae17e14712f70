"""Energy validation: published J/token and average-power measurements (``specs/energy_cases``)
predicted by the per-op model (:mod:`roofkit.energy`) and by the Engine reference's TDP model.

``error = predicted / measured - 1``; ``j_per_token = E / (batch * output_len)``,
``power_w = E / (e2e * tp)``, where ``E`` is the serving estimate's energy on its ``engine``.

A case that gives ``max_num_seqs`` was served with continuous batching, every one of its
``num_requests`` requests queued at once, and measured over its steady state (ML.ENERGY: from
the moment ``max_num_seqs`` requests have their first token until ``num_requests -
max_num_seqs - 1`` have finished). It is costed like a load case: :func:`roofkit.simulate`
on the engine profile (``engine``, default ``vllm-v1``) with the run's token budget and its
published output-length histogram, and over the steps of that window

    j_per_token = sum_i tp * (P_static * t_i' + E_dyn,i) / tokens,   power_w = E / (tp * sum t_i')

with each step at its power-limited time ``t_i' = max(t_i, E_dyn,i / (TDP - P_static))``
(exact here: with every request queued, which requests run in a step does not depend on
time). The TDP model takes the same steps at their own times.
A case says what its meter saw (``scope``: ``gpu`` boards only, or ``node`` at the wall) and
may give the run's measured median ITL and per-device average power beside its metric; the
report then splits the miss into its time part and its power part (``itl_error``,
``power_error``, per-op model), and gives the per-op power had the steps taken the measured
ITL (``power_at_measured_itl_error``: the same dynamic energy a step, spread over the
measured step), which says whether the power model holds once the time is right. A case
may carry a one-line ``cause``: the mechanism of its miss with its numbers (every case whose
per-op ``|error|`` is above 35 % carries one).
"""

from __future__ import annotations

import itertools
import statistics
import tomllib
from pathlib import Path

import attrs
import numpy as np

from . import energy
from .errors import SpecError
from .files import read_spec_bytes
from .paths import builtin_specs_dir

__all__ = ["EnergyCase", "load_cases", "predict", "run"]

METRICS = ("j_per_token", "power_w")
SCOPES = ("gpu", "node")
_OPTIONAL = ("engine", "tp", "scope", "measured_itl_ms", "measured_power_w", "max_num_seqs",
             "max_num_batched_tokens", "num_requests", "output_len_bins", "output_len_counts",
             "cause")
_CONTINUOUS = ("max_num_seqs", "max_num_batched_tokens", "num_requests")
_KEYS = ("name", "workload", "device", "batch", "input_len", "output_len", "metric",
         "measured", "url", "quote")


@attrs.frozen
class EnergyCase:
    name: str
    workload: str
    device: str
    batch: int
    input_len: int
    output_len: int
    metric: str
    measured: float
    url: str
    quote: str
    engine: str | None = None
    tp: int = 1
    scope: str = "gpu"  # what the meter saw: the GPU boards only, or the node at the wall
    measured_itl_ms: float | None = None  # the run's median inter-token latency
    measured_power_w: float | None = None  # the run's average power per device
    # continuous batching with every request queued (see the module docstring)
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    num_requests: int | None = None
    output_len_bins: tuple | None = None  # histogram edges of the run's output lengths
    output_len_counts: tuple | None = None  # requests per bin
    cause: str = ""  # one line on why the per-op prediction misses, where known


def load_cases(folder: Path | None = None) -> list[EnergyCase]:
    """Every ``*.toml`` case of ``folder`` (default: the builtin ``specs/energy_cases``)."""
    folder = builtin_specs_dir() / "energy_cases" if folder is None else Path(folder)
    cases = []
    for path in sorted(folder.glob("*.toml")):
        try:
            data = tomllib.loads(read_spec_bytes(path).decode("utf-8"))
        except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise SpecError(f"{path}: not readable TOML ({exc})") from None
        missing = [k for k in _KEYS if k not in data]
        if missing:
            raise SpecError(f"{path}: missing {', '.join(missing)}; an energy case names "
                            "its config, its measured value, the url and the quoted place")
        if data["metric"] not in METRICS:
            raise SpecError(f"{path}: metric {data['metric']!r} is not one of {METRICS}")
        if not 0.0 < float(data["measured"]) < 1e12:  # NaN and inf fail too
            raise SpecError(f"{path}: measured must be a finite number > 0")
        unknown = set(data) - set(_KEYS) - set(_OPTIONAL)
        if unknown:
            raise SpecError(f"{path}: unknown keys {sorted(unknown)}; known: "
                            f"{sorted(_KEYS + _OPTIONAL)}")
        if data.get("scope", "gpu") not in SCOPES:
            raise SpecError(f"{path}: scope {data['scope']!r} is not one of {SCOPES}")
        if data.get("scope") == "node":
            raise SpecError(f"{path}: scope 'node' (metered at the wall) is not scored yet: "
                            "the serving path predicts GPU boards only; give a GPU-metered "
                            "figure (scope = \"gpu\")")
        if data["metric"] == "power_w" and "measured_power_w" in data:
            raise SpecError(f"{path}: measured_power_w repeats a power_w metric; drop it")
        if not isinstance(data.get("cause", ""), str):
            raise SpecError(f"{path}: cause must be one line of text naming the mechanism "
                            "of the miss, with its numbers")
        for key in ("measured_itl_ms", "measured_power_w"):
            if key in data and not 0.0 < float(data[key]) < 1e12:
                raise SpecError(f"{path}: {key} must be a finite number > 0")
        _check_continuous(path, data)
        cases.append(EnergyCase(**data))
    return cases


def _check_continuous(path, data) -> None:
    """The continuous-batching keys: all of ``_CONTINUOUS`` or none, whole numbers, at least
    ``max_num_seqs + 2`` requests (a steady state to measure), a histogram of edges and
    counts; the lists become tuples."""
    given = [k for k in _CONTINUOUS if k in data]
    hist = [k for k in ("output_len_bins", "output_len_counts") if k in data]
    if given and len(given) != len(_CONTINUOUS):
        raise SpecError(f"{path}: a continuous-batching case gives all of {_CONTINUOUS}; "
                        f"missing {sorted(set(_CONTINUOUS) - set(given))}")
    if hist and (len(hist) != 2 or not given):
        raise SpecError(f"{path}: output_len_bins and output_len_counts go together, in a case "
                        f"that gives {_CONTINUOUS}")
    for k in given:
        v = data[k]
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise SpecError(f"{path}: {k} must be a whole number >= 1, got {v!r}")
    if given and data["num_requests"] < data["max_num_seqs"] + 2:
        raise SpecError(f"{path}: num_requests must be at least max_num_seqs + 2 (the steady "
                        "state runs from the max_num_seqs-th first token to the "
                        "(num_requests - max_num_seqs - 1)-th finish)")
    if hist:
        bins, counts = data["output_len_bins"], data["output_len_counts"]
        ok = (isinstance(bins, list) and isinstance(counts, list)
              and len(bins) == len(counts) + 1 >= 2
              and all(isinstance(x, int | float) and not isinstance(x, bool) for x in bins)
              and all(isinstance(x, int) and not isinstance(x, bool) and x >= 0
                      for x in counts)
              and bins[0] >= 1 and all(a < b for a, b in itertools.pairwise(bins))
              and sum(counts) > 0)
        if not ok:
            raise SpecError(f"{path}: output_len_bins must be increasing edges >= 1, one more "
                            "than output_len_counts (whole numbers >= 0, not all 0)")
        data["output_len_bins"], data["output_len_counts"] = tuple(bins), tuple(counts)


def _output_lengths(case: EnergyCase):
    """The run's output lengths: its histogram (each bin at its rounded midpoint), else the
    mean ``output_len``."""
    if case.output_len_counts is None:
        return case.output_len
    from .load.requests import Lengths

    b = case.output_len_bins
    pairs = [(max(round((lo + hi) / 2), 1), n)
             for lo, hi, n in zip(b[:-1], b[1:], case.output_len_counts, strict=True) if n > 0]
    return Lengths("histogram", values=tuple(v for v, _ in pairs),
                   weights=tuple(float(n) for _, n in pairs))


def predict_continuous(case: EnergyCase, registry=None) -> dict:
    """A continuous-batching case costed like a load case (see the module docstring); the
    result is kept in the registry's memo (a case is simulated once per registry)."""
    from .registry import resolve

    reg = resolve(registry)
    key = ("energy-case-continuous", case)
    hit = reg._memo.get(key)
    if hit is not None:
        return dict(hit)
    out = _continuous(case, reg)
    reg._memo[key] = dict(out)
    return out


def _continuous(case: EnergyCase, registry) -> dict:
    from .errors import RoofkitError
    from .load import simulate
    from .load.energy import StepEnergy
    from .load.simulate import _stats

    n, b = case.num_requests, case.max_num_seqs
    est = simulate(case.workload, case.device, concurrency=n, requests=n, tp=case.tp,
                   max_num_seqs=b, max_batched_tokens=case.max_num_batched_tokens,
                   input_len=case.input_len, output_len=_output_lengths(case),
                   engine=case.engine or "vllm-v1", registry=registry)
    pools, device, _ = est.energy_parts
    rep, traces, tp = pools[0]
    tr = traces[0]
    t0 = float(np.sort(tr.first_token)[b - 1])
    t1 = float(np.sort(tr.finish)[n - b - 2])
    step = (tr.step_end > t0) & (tr.step_end <= t1)
    if t1 <= t0 or not step.any():
        raise RoofkitError(f"energy case {case.name}: the simulated run has no steady state "
                           f"(max_num_seqs {b}, {n} requests)")
    t = np.asarray(tr.step_time, dtype=float)[step]
    rows, seqs = np.asarray(tr.step_tokens)[step], np.asarray(tr.step_seqs)[step]
    kv_token = float(rep.cfg.kv_token)
    ctx = np.where((seqs > 0) & (kv_token > 0.0),
                   np.asarray(tr.step_kv, dtype=float)[step] / np.maximum(seqs * kv_token, 1e-30),
                   1.0)
    ctx = np.maximum(ctx, 1.0)
    seqs_in = np.minimum(seqs, rows)
    se = StepEnergy(rep.costs, device, rows=rows, seqs=seqs_in)
    e_tdp = tp * float(np.sum(StepEnergy(rep.costs, device, {}, rows=rows,
                                         seqs=seqs_in).steps(t, rows, seqs, ctx)))
    dyn = se.dynamic(rows, seqs, ctx)
    if dyn is None:  # no per-op constants: the TDP model answers for both
        t_lim, e_op = t, e_tdp
    else:
        t_lim = energy.limited_time(t, dyn, se.c, se.tdp)
        e_op = tp * float(np.sum(se.c.p_busy * t_lim + dyn))
    # output tokens inside the window, each request's spread evenly over its decode
    first, fin = np.asarray(tr.first_token), np.asarray(tr.finish)
    per_s = (np.asarray(tr.output_len) - 1) / np.maximum(fin - first, 1e-12)
    tokens = float(np.sum(np.clip(np.minimum(fin, t1) - np.maximum(first, t0), 0.0, None)
                          * per_s))
    span = float(np.sum(t_lim))
    per = tokens if case.metric == "j_per_token" else span * tp
    per_tdp = tokens if case.metric == "j_per_token" else float(np.sum(t)) * tp
    return {"per_op": e_op / per, "tdp": e_tdp / per_tdp,
            "model": energy.model_name(case.device),
            "itl_ms": _stats(t_lim, seqs)["p50"] * 1e3, "power_w": e_op / (span * tp),
            "run": "load"}


def predict(case: EnergyCase, registry=None) -> dict:
    """The case's metric on both models: ``{"per_op": ..., "tdp": ..., "model": ...}``; a
    case that gives ``max_num_seqs`` through :func:`predict_continuous`."""
    from .serving import serve

    if case.max_num_seqs is not None:
        return predict_continuous(case, registry)

    est = serve(case.workload, case.device, batch=case.batch, input_len=case.input_len,
                output_len=case.output_len, tp=case.tp, engine=case.engine, registry=registry)
    e = energy.serving_energy(est)
    e2e, itl = energy.serving_times(est)  # device steps under the power limit
    tokens = case.batch * case.output_len
    j_tdp = est.energy / (tokens if case.metric == "j_per_token" else est.e2e * case.tp)
    per = tokens if case.metric == "j_per_token" else e2e * case.tp
    return {"per_op": e / per, "tdp": j_tdp, "model": energy.model_name(case.device),
            "itl_ms": itl * 1e3, "power_w": e / (e2e * case.tp), "run": "serve"}


def _power_at_itl(case: EnergyCase, p: dict) -> float:
    """The per-op power had the run's steps taken its measured ITL: the same dynamic energy
    a step (``P - P_static`` over the predicted ITL) spread over the measured one, at static
    power besides, ``P_static + (P - P_static) * itl_pred / itl_measured``; the predicted
    power where the device has no per-op constants."""
    c = energy.constants(case.device)
    if c is None:
        return p["power_w"]
    return c.p_busy + (p["power_w"] - c.p_busy) * p["itl_ms"] / case.measured_itl_ms


def run(cases=None, registry=None) -> dict:
    """Rows per case and the median absolute error of each model (``per_op``, ``tdp``), and of
    the per-op miss's time and power parts (``itl``, ``power``) where cases measured them."""
    rows = []
    for case in load_cases() if cases is None else cases:
        p = predict(case, registry)
        row = {"case": case.name, "device": case.device, "scope": case.scope, "run": p["run"],
               "metric": case.metric, "measured": case.measured,
               "per_op": p["per_op"], "tdp": p["tdp"], "model": p["model"],
               "per_op_error": p["per_op"] / case.measured - 1.0,
               "tdp_error": p["tdp"] / case.measured - 1.0,
               "itl_error": None, "power_error": None, "power_at_measured_itl_error": None,
               "cause": case.cause}
        if case.measured_itl_ms is not None:
            row["itl_error"] = p["itl_ms"] / case.measured_itl_ms - 1.0
        if case.measured_power_w is not None:
            row["power_error"] = p["power_w"] / case.measured_power_w - 1.0
            row["power_at_measured_itl_error"] = _power_at_itl(case, p) / \
                case.measured_power_w - 1.0 if case.measured_itl_ms is not None else None
        rows.append(row)
    med = {m: statistics.median(abs(r[f"{m}_error"]) for r in rows) for m in ("per_op", "tdp")}
    # the per-op miss split, over the cases that measured it
    for part in ("itl", "power", "power_at_measured_itl"):
        vals = [abs(r[f"{part}_error"]) for r in rows if r[f"{part}_error"] is not None]
        med[part] = statistics.median(vals) if vals else None
    return {"rows": rows, "median_abs_error": med}
