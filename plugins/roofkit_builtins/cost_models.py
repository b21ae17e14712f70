"""Builtin cost models: how a node's FLOPs and bytes become seconds on a device.

``roofline``: t = max(bytes / bandwidth, flops / peak), the peak of the compute slot the
node's operand formats select. ``roofline_launch``: the same plus one kernel launch,
t = max(bytes / bandwidth, flops / peak) + launch (the device's ``overheads.launch``).
Both work on floats and numpy arrays.
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


COST_MODELS = (
    CostModel("roofline", roofline_time,
              "max(bytes / bandwidth, flops / peak) per node; peak by operand formats"),
    CostModel("roofline_launch", roofline_launch_time,
              "roofline plus one kernel launch (device overheads.launch) per node instance"),
)


@hookimpl
def roofkit_register_cost_models():
    return COST_MODELS
