"""Builtin collective algorithms: the hierarchical two-tier one and a flat ring
(equations in :mod:`roofkit.fleet.collectives`, imported on first use so that building the
registry does not load numpy)."""

from roofkit import CollectiveAlgorithm, hookimpl

# the collectives of roofkit.fleet.collectives.COLLECTIVES (a test keeps the two equal)
COLLECTIVES = ("all_reduce", "reduce_scatter", "all_gather", "all_to_all", "p2p")


def hierarchical_time(collective, message, group, topo):
    from roofkit.fleet.collectives import hierarchical_time as time

    return time(collective, message, group, topo)


def ring_time(collective, message, group, topo):
    from roofkit.fleet.collectives import ring_time as time

    return time(collective, message, group, topo)


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
