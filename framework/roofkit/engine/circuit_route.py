"""``Engine.solve(..., cost_model=...)``: a template workload through the circuit instead.

The reference equation treats a transformer as 2·params FLOPs and W bytes per token; the
circuit costs every node (attention, KV, experts…) with a registered cost model. This route
is taken only when a caller names a cost model; the default stays the reference equation.
"""

from __future__ import annotations

from ..errors import RoofkitError


def solve_with_cost_model(cache, wf, df, prec, cost_model, batch, eff, raise_errors, training,
                          seq_len, zero, dp, lora, recompute):
    raise RoofkitError(f"cost_model={cost_model!r} needs roofkit.circuit.api, which is not "
                       "available yet; omit cost_model for the reference equation")
