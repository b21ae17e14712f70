"""Builtin cost models: how a node's FLOPs and bytes become seconds on a device.

``roofline``: t = max(bytes / bandwidth, flops / peak), the peak of the compute slot the
node's operand formats select. ``roofline_launch``: the same plus one kernel launch,
t = max(bytes / bandwidth, flops / peak) + launch (the device's ``overheads.launch``).

``roofline_calibrated``: the measured roofline's terms (:mod:`roofkit.circuit.calibrated`),
per node instance with ``m = bytes / bandwidth``:

    matrix op       c = flops / (P_slot * eta_slot(flops / gemms))   eta: GEMM-size efficiency
    attention       c = flops / P_att in prefill (the measured attention throughput, else
                    the slot's peak), flops / P_slot in decode
    vector op       c = flops / P_vector
    t = (c^p + m^p)^(1/p)                                             p: measured overlap

On the datasheet basis (no curves, ``p = inf``, no attention measurement) it is ``roofline``.
All work on floats and numpy arrays. Host launches are not in any node's time except
``roofline_launch``'s (a serving estimate charges them per step instead).
"""

from roofkit import CostModel, hookimpl


def roofline_time(flops, nbytes, peak, bandwidth, launch=0.0):
    """max(bytes / bandwidth, flops / peak), seconds."""
    t_mem = nbytes / bandwidth
    t_cmp = flops / peak
    if hasattr(t_mem, "shape") or hasattr(t_cmp, "shape"):  # numpy arrays
        import numpy as np

        return np.maximum(t_mem, t_cmp)
    return t_mem if t_mem >= t_cmp else t_cmp


def roofline_launch_time(flops, nbytes, peak, bandwidth, launch=0.0):
    """max(bytes / bandwidth, flops / peak) + launch, seconds."""
    return roofline_time(flops, nbytes, peak, bandwidth) + launch


def bind_calibrated(ctx):
    """The calibrated timer of one node: ``time(flops, bytes, gemms) -> (t, c)``."""
    from roofkit.circuit.calibrated import combine, efficiency  # numpy: not at registry build

    roof = ctx.roofline
    bw = roof.bandwidth
    p = roof.overlap
    rate = ctx.peak
    curve = None
    if ctx.compute == "matrix" and ctx.role == "attention":
        if ctx.mode == "prefill" and roof.attention_peak:
            rate = roof.attention_peak
    elif ctx.compute == "matrix":
        curve = roof.curves.get(ctx.slot)

    if curve is None:
        def time(flops, nbytes, gemms):
            c = flops / rate
            return combine(c, nbytes / bw, p), c
    else:
        def time(flops, nbytes, gemms):
            c = flops / (rate * efficiency(curve, flops / gemms))
            return combine(c, nbytes / bw, p), c
    return time


def roofline_calibrated_time(flops, nbytes, peak, bandwidth, launch=0.0):
    """Without a node context: max(bytes / bandwidth, flops / peak) (the plan binds)."""
    return roofline_time(flops, nbytes, peak, bandwidth)


COST_MODELS = (
    CostModel("roofline", roofline_time,
              "max(bytes / bandwidth, flops / peak) per node; peak by operand formats"),
    CostModel("roofline_launch", roofline_launch_time,
              "roofline plus one kernel launch (device overheads.launch) per node instance"),
    CostModel("roofline_calibrated", roofline_calibrated_time,
              "(c^p + m^p)^(1/p) per node: GEMM-size efficiency, measured compute/memory "
              "overlap and prefill attention throughput of the calibrated basis",
              bind=bind_calibrated),
)


@hookimpl
def roofkit_register_cost_models():
    return COST_MODELS
