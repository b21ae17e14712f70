"""Every hook roofkit calls, in one place. Plugins implement them with ``@roofkit.hookimpl``.

All hooks are registration hooks: each is called once, when a registry is built (never in a
solver loop), and returns an iterable of self-describing objects. The host flattens the
results of every plugin, rejects a name two plugins both register (naming both), and freezes
them into the :class:`roofkit.registry.Registry`.
"""

from __future__ import annotations

import pluggy

hookspec = pluggy.HookspecMarker("roofkit")
hookimpl = pluggy.HookimplMarker("roofkit")


@hookspec
def roofkit_register_precisions():
    """Register numeric formats.

    :return: an iterable of :class:`roofkit.types.Precision` (name, bits, block scale, compute
        slot, fallback chain). Names and aliases are matched case-insensitively.

    Called once per registry build; every plugin's results are collected.
    """


@hookspec
def roofkit_register_op_kinds():
    """Register operator kinds that circuit nodes may use.

    :return: an iterable of :class:`roofkit.types.OpKind` (name, role, params). A circuit
        template or an op-cost rule naming an unregistered kind fails at load.

    Called once per registry build; every plugin's results are collected.
    """


@hookspec
def roofkit_register_cost_models():
    """Register cost models, chosen by name (``cost_model="roofline"``).

    :return: an iterable of :class:`roofkit.types.CostModel`, whose ``node_time`` turns a
        node's FLOPs and bytes into seconds on a device (floats or numpy arrays); a model
        that needs the node or the calibrated roofline's terms also gives ``bind``, called
        once per node when a plan compiles (never in the solver loop).

    Called once per registry build; every plugin's results are collected.
    """


@hookspec
def roofkit_register_scenario_kinds():
    """Register scenario kinds (``kind = "host_dispatch"`` in a scenario spec).

    :return: an iterable of :class:`roofkit.types.ScenarioKind` (name, attrs input class,
        derived attribute names).

    Called once per registry build; every plugin's results are collected.
    """


@hookspec
def roofkit_register_collectives():
    """Register collective algorithms (a hierarchical ring, a flat ring, a plugin's own).

    :return: an iterable of :class:`roofkit.types.CollectiveAlgorithm` (name, the collectives
        it implements, ``time(collective, message, group, topology)`` in seconds on floats
        or numpy arrays). A layout may name one (``collective_algorithm="..."``); otherwise
        the fastest registered algorithm is taken for each collective.

    Called once per registry build; every plugin's results are collected.
    """


@hookspec
def roofkit_register_spec_dirs():
    """Register folders of TOML specs a plugin ships.

    :return: an iterable of paths (``str`` or ``pathlib.Path``), each a folder holding any of
        ``devices/ workloads/ circuits/ ops/ scenarios/ calibration/ validation/``. They layer
        after roofkit's builtin specs and before user paths and ``ROOFKIT_SPEC_PATH``; a later
        spec with the same name wins.

    Called once per registry build; every plugin's results are collected, in registration order.
    """
