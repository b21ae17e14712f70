"""roofkit's builtin plugins: registered through the same hooks a third party uses.

Each module in ``PLUGINS`` is one plugin; the plugin manager registers them in this order.
They import only roofkit's public API.
"""

PLUGINS = (
    "roofkit_builtins.specs",
    "roofkit_builtins.precisions",
    "roofkit_builtins.quantized",
    "roofkit_builtins.scenario_kinds",
    "roofkit_builtins.op_kinds",
    "roofkit_builtins.cost_models",
    "roofkit_builtins.collectives",
)
