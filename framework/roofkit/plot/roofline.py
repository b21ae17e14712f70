"""The roofline picture: a device's ceilings and a step's nodes by arithmetic intensity.

Ceilings: one horizontal line per compute slot at its peak (slots with equal peaks share a
line and a label), one slanted line ``P = BW * I`` per bandwidth tier the device declares
(primary memory on the result's basis, then SRAM, flash and the host link from its spec).
Points: each node of a decode or prefill at ``I = FLOPs / bytes`` and
``P = FLOPs / time`` (nodes without FLOPs or bytes, such as collectives, have no place on a
roofline and are listed in the caption), and the whole step as a star.
"""

from __future__ import annotations

import numpy as np

from .. import units
from ..errors import RoofkitError
from . import figure, gid, log_axis

_BOUND_COLORS = {"memory": "tab:blue", "compute": "tab:red", "interconnect": "tab:purple",
                 "overhead": "tab:gray"}


def _peak_text(slot: str, value: float) -> str:
    text = units.fmt(value, "throughput")
    return text.replace("FLOP/s", "OP/s") if slot.startswith("int") else text


def ceilings(device, basis: str = "datasheet", registry=None):
    """(compute ceilings [(label, slots, FLOP/s)], bandwidth tiers [(name, B/s)]) of a device
    spec on ``basis``."""
    from ..circuit.roofline import device_roofline

    roof = device_roofline(device, basis, registry)
    by_value: dict[float, list[str]] = {}
    for slot, peak in roof.peaks.items():
        if peak and peak > 0:
            by_value.setdefault(float(peak), []).append(slot)
    compute = [("/".join(slots), tuple(slots), value)
               for value, slots in sorted(by_value.items(), reverse=True)]
    tiers = [(f"memory ({basis})", float(roof.bandwidth))]
    for name, tier in (("SRAM", device.sram), ("flash", device.flash)):
        if tier is not None and tier.bandwidth:
            tiers.append((name, float(tier.bandwidth)))
    if device.host_link is not None:
        tiers.append(("host link", float(device.host_link.bandwidth)))
    return compute, tiers


def _points(est):
    """[(name, intensity, performance, bound)] of the nodes, and the names left out."""
    if np.ndim(est.time) > 0:
        raise RoofkitError("a roofline shows one step: give one batch and one context, not "
                           "arrays of them")
    points, left = [], []
    for r in est.by("node"):
        f, b, t = float(r.flops), float(r.bytes), float(r.time)
        if f > 0 and b > 0 and t > 0:
            points.append((r.node, f / b, f / t, str(r.bound)))
        else:
            left.append(r.node)
    return points, left


def draw(ax, compute, tiers, points, step, title: str) -> None:
    """Ceilings, node points and the step point on ``ax`` (log-log)."""
    intensities = [p[1] for p in points] + ([step[0]] if step else [])
    peak_max = compute[0][2] if compute else max(p[2] for p in points)
    bw_main = tiers[0][1]
    ridge = peak_max / bw_main
    lo = min([*intensities, ridge]) / 8
    hi = max([*intensities, ridge]) * 8
    xs = np.geomspace(lo, hi, 200)
    for name, bw in tiers:
        ys = np.minimum(bw * xs, peak_max)
        (line,) = ax.plot(xs, ys, "-", lw=1.5, color="black" if bw == bw_main else "0.55")
        line.set_gid(gid("bandwidth", name))
        x_at = min(peak_max / bw, hi) / 3
        ax.annotate(f"{name} {units.fmt(bw, 'bandwidth')}", (x_at, bw * x_at), fontsize=7,
                    rotation=0, ha="right", va="bottom", color="0.25")
    for i, (label, slots, peak) in enumerate(compute):
        start = peak / bw_main
        (line,) = ax.plot([start, hi], [peak, peak], "--", lw=1, color="tab:green")
        line.set_gid(gid("ceiling", label))
        ax.annotate(f"{label} {_peak_text(slots[0], peak)}", (hi, peak), fontsize=7,
                    ha="right", va="bottom" if i % 2 == 0 else "top", color="tab:green")
    clusters: dict[tuple[int, int], list] = {}  # nodes within ~0.17 decade share a label
    for name, x, y, bound in points:
        (mark,) = ax.plot([x], [y], "o", ms=6, color=_BOUND_COLORS.get(bound, "k"),
                          alpha=0.85)
        mark.set_gid(gid("node", name))
        key = (round(np.log10(x) * 6), round(np.log10(y) * 6))
        clusters.setdefault(key, [x, y, []])[2].append(name)
    for x, y, names in clusters.values():
        ax.annotate(", ".join(names), (x, y), fontsize=6, xytext=(5, -8),
                    textcoords="offset points")
    if step:
        (mark,) = ax.plot([step[0]], [step[1]], "*", ms=14, color="gold", mec="black")
        mark.set_gid("step")
        ax.annotate("whole step", step, fontsize=7, xytext=(-10, 8), textcoords="offset points",
                    weight="bold", ha="right")
    log_axes(ax, y="throughput")
    ax.set_xlabel("arithmetic intensity (FLOP/B)")
    ax.set_ylabel("performance (FLOP/s)")
    ax.set_title(title, fontsize=9)
    ax.grid(True, which="major", alpha=0.3)
    for bound, color in _BOUND_COLORS.items():
        if any(p[3] == bound for p in points):
            ax.plot([], [], "o", color=color, label=f"{bound}-bound node")
    if points:
        ax.legend(fontsize=7, loc="lower right")


def log_axes(ax, x: str | None = None, y: str | None = None) -> None:
    """Both axes logarithmic, with plain tick labels (:func:`roofkit.plot.log_axis`)."""
    log_axis(ax, "x", x)
    log_axis(ax, "y", y)


def roofline(result, device=None, registry=None):
    """The roofline Figure of a decode/prefill ``Estimate`` or an Engine profile.

    ``device``: the device spec or the name/path to look up (default: the result's device in
    the registry)."""
    from ..engine.profile import PerformanceProfile
    from ..registry import resolve

    reg = resolve(registry)
    if isinstance(result, PerformanceProfile):
        return _profile_roofline(result, reg)
    dev = reg.device(device if device is not None else result.device)
    basis = result.settings.get("basis", "datasheet")
    compute, tiers = ceilings(dev, basis, reg)
    points, left = _points(result)
    f, b, t = float(result.flops), float(result.bytes), float(result.time)
    step = (f / b, f / t) if f > 0 and b > 0 else None
    fig = figure()
    ax = fig.add_subplot()
    draw(ax, compute, tiers, points, step, result.title())
    if left:
        fig.text(0.01, 0.005, "not placed (no FLOPs or no bytes): " + ", ".join(left)[:150],
                 fontsize=6, color="0.4")
    return fig


def _profile_roofline(profile, reg):
    """The Engine's roofline: the device's datasheet ceilings, the derated ceiling the
    equation used (efficiency x peak) and the batch as one point."""
    df = profile._df
    dev = df.spec
    compute, tiers = ceilings(dev, "datasheet", reg)
    eff = profile._inputs[2]
    slot = profile.compute_slot
    derated = profile._peak * eff
    compute = [*compute, (f"{slot} x efficiency {eff:g}", (slot,), derated)]
    compute.sort(key=lambda c: -c[2])
    ops, traffic = profile._ops_hw, profile._traffic
    step = (ops / traffic, ops / profile.latency_s) if ops > 0 and traffic > 0 else None
    fig = figure()
    ax = fig.add_subplot()
    draw(ax, compute, tiers, [], step, profile.title())
    return fig
