"""Builtin collective algorithms: the hierarchical two-tier one and a flat ring
(equations in :mod:`roofkit.fleet.collectives`)."""

from roofkit import CollectiveAlgorithm, hookimpl
from roofkit.fleet.collectives import COLLECTIVES, hierarchical_time, ring_time

ALGORITHMS = (
    CollectiveAlgorithm("hierarchical", COLLECTIVES, hierarchical_time,
                        "inside each scale-up domain, then across domains on the NICs, "
                        "pipelined: the slower tier sets the time"),
    CollectiveAlgorithm("ring", ("all_reduce", "reduce_scatter", "all_gather"), ring_time,
                        "one flat ring over the group, at its slowest hop's bandwidth"),
)


@hookimpl
def roofkit_register_collectives():
    return ALGORITHMS
