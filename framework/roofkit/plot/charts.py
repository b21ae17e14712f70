"""The other pictures: a sweep with its Pareto front, a stacked breakdown of a step, the
inter-token latency of a serving estimate over its output steps, a memory fit, and a
validation report's predicted-against-measured scatter."""

from __future__ import annotations

import numpy as np

from .. import units
from ..errors import RoofkitError
from . import figure, gid, log_axis


def _label(table, name: str) -> str:
    desc = table.describe().get(name, "")
    return f"{name} ({desc})" if desc and len(desc) < 50 else name


def sweep(table, x: str = "throughput_per_s", y: str = "latency_ms", *, pareto: bool = True,
          color: str = "device"):
    """``y`` against ``x`` per ``color`` group (default the device), log axes where a
    column spans more than 100x, and the Pareto front of the two (best ``x`` first)."""
    if not len(table):
        raise RoofkitError("the sweep has no rows to plot (did --where or the fit check drop "
                           "them all?)")
    x, y = table._select([x, y])
    fig = figure()
    ax = fig.add_subplot()
    xs, ys = table[x].astype(float), table[y].astype(float)
    groups = table[color] if color in table else np.array(["all"] * len(table), dtype=object)
    for name in dict.fromkeys(groups.tolist()):
        m = groups == name
        points = ax.scatter(xs[m], ys[m], s=14, alpha=0.75, label=str(name))
        points.set_gid(gid("group", name))
    if pareto:
        front = table.pareto(x, y)
        fx, fy = front[x].astype(float), front[y].astype(float)
        order = np.argsort(fx)
        (line,) = ax.plot(fx[order], fy[order], "-", color="black", lw=1.2, marker="D", ms=4,
                          label=f"Pareto front ({len(front)})")
        line.set_gid("pareto")
    for axis, values in (("x", xs), ("y", ys)):
        finite = values[np.isfinite(values) & (values > 0)]
        if len(finite) and finite.max() > 100 * finite.min():
            log_axis(ax, axis)
    ax.set_xlabel(_label(table, x))
    ax.set_ylabel(_label(table, y))
    ax.set_title(f"{table.title()}; basis: {table.basis}", fontsize=9)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    return fig


def _segments(rows, top: int):
    """[(name, seconds)] of the ``top`` longest rows, the rest summed as 'other'."""
    rows = sorted(rows, key=lambda r: -r[1])
    head, rest = rows[:top], rows[top:]
    if rest:
        head.append((f"other ({len(rest)})", sum(r[1] for r in rest)))
    return head


def _stacked(ax, bars, unit_scale=1e3):
    """Horizontal stacked bars: bars = [(label, [(segment, seconds)])]."""
    names = list(dict.fromkeys(s for _, segs in bars for s, _ in segs))
    colors = {n: f"C{i % 10}" for i, n in enumerate(names)}
    seen: set[str] = set()
    for i, (_, segs) in enumerate(bars):
        left = 0.0
        for name, t in segs:
            rect = ax.barh(i, t * unit_scale, left=left, color=colors[name],
                           label=None if name in seen else name)
            seen.add(name)
            rect.patches[0].set_gid(gid("node", name) if i == 0 else gid(f"bar{i}", name))
            left += t * unit_scale
        ax.text(left, i, f" {left:.4g} ms", va="center", fontsize=7)
    ax.set_yticks(range(len(bars)), [b[0] for b in bars])
    ax.set_xlabel("time (ms)")
    ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.0, 1.0))


def breakdown(result, by: str = "node", top: int = 12):
    """A stacked bar of where the time goes: per node (or op, section) of a decode or
    prefill estimate; for a serving estimate its mean decode step (nodes and host) and its
    time to first token (device and host)."""
    from ..serving.estimate import ServingEstimate

    fig = figure(8.5, 3.2)
    ax = fig.add_subplot()
    if isinstance(result, ServingEstimate):
        if by != "node":
            raise RoofkitError("a serving estimate breaks down by node only (its decode step)")
        rows = [(r["node"], r["time_s"]) for r in result.decode_breakdown]
        step = [*_segments(rows, top), ("host (decode step)", result.decode_host.host_time)]
        first = [("prefill (device)", result.prefill_device),
                 ("host (prefill step)", result.prefill_host.host_time)]
        _stacked(ax, [("decode step (mean)", step), ("time to first token", first)])
    else:
        if np.ndim(result.time) > 0:
            raise RoofkitError("a breakdown shows one step: give one batch and one context")
        rows = [(r.node, float(r.time)) for r in result.by(by)]
        _stacked(ax, [(f"{result.mode} step", _segments(rows, top))])
    ax.set_title(f"{result.title()} (by {by})", fontsize=9)
    return fig


def serve(result):
    """Inter-token latency of each output step (the KV read grows), its mean, and TTFT."""
    itl = np.asarray(result.itl_steps, dtype=float) * 1e3
    if not len(itl):
        raise RoofkitError("one output token has no inter-token steps to plot; give "
                           "--output-len 2 or more")
    fig = figure()
    ax = fig.add_subplot()
    steps = np.arange(2, len(itl) + 2)
    (line,) = ax.plot(steps, itl, "-", lw=1.5, label="inter-token latency")
    line.set_gid("itl")
    (mean,) = ax.plot([steps[0], steps[-1]], [itl.mean(), itl.mean()], "--", color="0.4",
                      label=f"mean {itl.mean():.4g} ms")
    mean.set_gid("itl-mean")
    ax.set_xlabel("output token")
    ax.set_ylabel("inter-token latency (ms)")
    ax.set_ylim(0, itl.max() * 1.15)
    ax.set_title(f"{result.title()}\nTTFT {result.ttft_ms:.4g} ms, e2e {result.e2e_ms:.4g} ms, "
                 f"{result.output_tokens_per_s:.4g} output tokens/s", fontsize=9)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    return fig


def memory(result):
    """What a fit holds (weights, KV, state) as one stacked bar against usable memory."""
    if np.ndim(result.required) > 0:
        raise RoofkitError("a memory picture shows one fit: give one seqs and one context")
    parts = [("weights", result.weights), ("KV cache", float(result.kv_bytes)),
             ("recurrent state", float(result.state_bytes))]
    if result.conv_counted:
        parts.append(("conv windows", float(result.conv_state_bytes)))
    fig = figure(7.5, 2.6)
    ax = fig.add_subplot()
    left = 0.0
    for i, (name, b) in enumerate(parts):
        rect = ax.barh(0, b / 1e9, left=left, color=f"C{i}", label=f"{name} "
                       f"{units.fmt(b, 'bytes')}")
        rect.patches[0].set_gid(gid("part", name))
        left += b / 1e9
    for value, name, style in ((result.usable, "usable", "-"), (result.capacity, "capacity",
                                                               ":")):
        line = ax.axvline(value / 1e9, ls=style, color="black")
        line.set_gid(name)
        ax.text(value / 1e9, 0.45, f" {name} {units.fmt(value, 'bytes')}", fontsize=7)
    ax.set_yticks([])
    ax.set_xlabel("memory per device (GB)")
    ax.set_title(result.title(), fontsize=9)
    ax.legend(fontsize=7, loc="lower right")
    return fig


def validation(report, basis: str | None = None):
    """Predicted against measured for every predicted case, per basis, with y = x."""
    from ..circuit.roofline import BASES

    fig = figure(6, 6)
    ax = fig.add_subplot()
    values = []
    for i, b in enumerate([basis] if basis else BASES):
        pts = [(c.measured, c.predicted.get(b), c.name) for c in report.scored()
               if c.predicted.get(b)]
        if not pts:
            continue
        m, p = np.array([x[0] for x in pts]), np.array([x[1] for x in pts])
        values += [*m, *p]
        dots = ax.scatter(m, p, s=16, alpha=0.75, color=f"C{i}", label=f"{b} "
                          f"(median |error| {100 * (report.median(b) or 0):.3g}%)")
        dots.set_gid(gid("basis", b))
    if not values:
        raise RoofkitError("no scored case was predicted")
    lo, hi = min(values) / 1.5, max(values) * 1.5
    (diag,) = ax.plot([lo, hi], [lo, hi], "-", color="0.5", lw=1)
    diag.set_gid("identity")
    log_axis(ax, "x")
    log_axis(ax, "y")
    ax.set_xlabel("measured (metric's unit)")
    ax.set_ylabel("predicted")
    ax.set_title(f"validation: {report.title()}", fontsize=9)
    ax.legend(fontsize=7)
    ax.grid(True, alpha=0.3)
    return fig


def plan(result):
    """A plan's configurations meeting the SLO: output tokens/s per device against tokens/s
    per user, a group per device and mode, the Pareto front joined point by point (``gid``
    ``pareto``) and the configurations the simulation says miss the SLO crossed out
    (``demoted``)."""
    rows = result.rows
    if not rows:
        raise RoofkitError(f"no configuration of {result.workload} meets the SLO: nothing to "
                           "plot (loosen --slo or raise --max-devices)")
    fig = figure()
    ax = fig.add_subplot()
    x = np.array([r["output_tokens_per_s_per_user"] for r in rows], dtype=float)
    y = np.array([r["output_tokens_per_s_per_device"] for r in rows], dtype=float)
    groups = np.array([f"{r['device']} {r['mode']}" for r in rows], dtype=object)
    for name in dict.fromkeys(groups.tolist()):
        m = groups == name
        points = ax.scatter(x[m], y[m], s=14, alpha=0.6, label=str(name))
        points.set_gid(gid("group", name))
    front = np.array([bool(r["pareto"]) for r in rows])
    order = np.argsort(x[front])
    (line,) = ax.plot(x[front][order], y[front][order], "-", color="black", lw=1.2,
                      marker="D", ms=4, label=f"Pareto front ({int(front.sum())})")
    line.set_gid("pareto")
    missed = np.array([r.get("verified") == "missed" for r in rows])
    if missed.any():
        cross = ax.scatter(x[missed], y[missed], s=60, marker="x", color="red",
                           label=f"simulation misses the SLO ({int(missed.sum())})")
        cross.set_gid("demoted")
    for axis, values in (("x", x), ("y", y)):
        finite = values[np.isfinite(values) & (values > 0)]
        if len(finite) and finite.max() > 100 * finite.min():
            log_axis(ax, axis)
    ax.set_xlabel("output tokens/s per user")
    ax.set_ylabel("output tokens/s per device")
    slo = ", ".join(f"{k} <= {v * 1e3:g} ms" for k, v in result.slo.items())
    ax.set_title(f"{result.workload}: input {result.input_len}, output {result.output_len}; "
                 f"SLO {slo}", fontsize=9)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    return fig
